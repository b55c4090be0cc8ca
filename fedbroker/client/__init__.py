"""The typed Python client of the broker's API, for member clouds: :class:`Client` (sync) and
:class:`AsyncClient`, answers as the pydantic models of :mod:`fedbroker.client.models`
(generated from the broker's OpenAPI document), problems as exceptions
(:mod:`fedbroker.client.errors`), and :func:`verify_delivery` for what an inbox receives.
The manual's page is docs/guides/member-clouds.md.

It imports httpx, pydantic and the broker's wire contract (``broker.wire``) only.
"""

from broker.wire.signing import SignatureError, UnknownKey, Verified
from fedbroker.client._core import plain
from fedbroker.client.clients import AsyncClient, Client
from fedbroker.client.deliveries import verify_delivery, verify_signature
from fedbroker.client.errors import (
    BadRequest,
    BrokerAnsweredError,
    BrokerClientError,
    BrokerUnavailable,
    Conflict,
    ContentTooLarge,
    Forbidden,
    NotFound,
    PreconditionFailed,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    Unprocessable,
    UnsupportedMediaType,
)
from fedbroker.client.keys import BrokerKeys

__all__ = [
    "AsyncClient",
    "BadRequest",
    "BrokerAnsweredError",
    "BrokerClientError",
    "BrokerKeys",
    "BrokerUnavailable",
    "Client",
    "Conflict",
    "ContentTooLarge",
    "Forbidden",
    "NotFound",
    "PreconditionFailed",
    "ServerError",
    "ServiceUnavailable",
    "SignatureError",
    "TooManyRequests",
    "Unauthorized",
    "UnknownKey",
    "Unprocessable",
    "UnsupportedMediaType",
    "Verified",
    "plain",
    "verify_delivery",
    "verify_signature",
]

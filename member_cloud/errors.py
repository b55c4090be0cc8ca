"""Errors of the member cloud, all answered as RFC 9457 ``application/problem+json``.

Exception tree (each class carries its problem type, title and HTTP status; the base and the
classes every HTTP service has are the broker's, from :mod:`broker.wire.problems`)::

    ProblemError                 500 internal-error
    ├── BadRequest               400 bad-request
    │   └── ChecksumMismatch     400 checksum-mismatch
    ├── NotAuthenticated         401 not-authenticated
    │   └── Replayed             401 replayed-delivery (a delivery signature seen before)
    ├── NotForThisMember         403 not-for-this-member (a delivery addressed to another)
    ├── NotFound                 404 not-found
    ├── Conflict                 409 conflict
    ├── InvalidName              422 invalid-name
    ├── BrokerUnreachable        502 broker-unreachable
    └── NotReady                 503 not-ready (cannot take a delivery now: ``GET /readyz``)

A problem the broker answers (``POST /transfers``) is passed through as the broker wrote it.
A 401 of the inbox (a delivery without a valid signature) challenges with
``WWW-Authenticate: FedbrokerSignature``; a 401 of the member cloud's own API (no or a wrong
``MEMBER_LOCAL_TOKEN``, ``member_cloud.auth``) with ``WWW-Authenticate: Bearer``.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from starlette.types import ASGIApp

# The problem+json machinery is the federation's wire contract, shared with the broker.
from broker.wire import problems
from broker.wire.problem_model import (
    PROBLEM_MEDIA_TYPE,
    BadRequest,
    Conflict,
    NotAuthenticated,
    NotFound,
    NotReady,
    ProblemError,
    responses,
)

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "BadRequest",
    "Conflict",
    "NotAuthenticated",
    "NotFound",
    "NotReady",
    "ProblemError",
    "install_handlers",
    "responses",
]

SIGNATURE_CHALLENGE = 'FedbrokerSignature realm="inbox"'


class ChecksumMismatch(BadRequest):
    type, title = "checksum-mismatch", "The body does not match its checksum"


class Replayed(NotAuthenticated):
    type, title = "replayed-delivery", "This delivery was received before"


class NotForThisMember(ProblemError):
    type, title, status = "not-for-this-member", "Not addressed to this member", 403


class InvalidName(ProblemError):
    type, title, status = "invalid-name", "Invalid name", 422


class BrokerUnreachable(ProblemError):
    type, title, status = "broker-unreachable", "The broker does not answer", 502


def install_handlers(app: FastAPI, wrap: Callable[[ASGIApp], ASGIApp] | None = None) -> None:
    """Answer every error, ours or the framework's, in the one problem+json shape."""
    problems.install(app, "this member cloud", SIGNATURE_CHALLENGE, wrap)

"""Accept a delivery from the broker: check that the broker signed it, then store it once.

The broker POSTs an approved transfer's bytes to ``{public_url}/inbox`` with the headers that
:mod:`broker.wire.headers` lists (transfer id, source, purpose, decision, file name, checksum,
anonymized, timestamp, signature). The signature is the broker's (scheme ``v5``: Ed25519 over the
signed headers, which hold the body's SHA-256, :mod:`broker.wire.signing`, the wire contract
shared by both services); the broker's public keys are pinned by :mod:`member_cloud.broker_keys`.
Nobody who merely reads the broker's database can sign.

Everything is checked before the body is read: a missing or wrong signature, or a timestamp
further than the tolerance from our clock, is 401, a missing or malformed header 400, and an
unsigned delivery costs no disk. The body is then streamed to the inbox and hashed on the way
(:meth:`member_cloud.storage.Inbox.store`); a body that does not match the signed checksum is
400 and nothing of it is kept. Purpose and file name are stored decoded.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import unquote

from pydantic import BaseModel, Field

from broker.wire import headers as h
from broker.wire.signing import SIGNED_HEADERS, SignatureError
from member_cloud.broker_keys import BrokerKeys
from member_cloud.errors import BadRequest, NotAuthenticated
from member_cloud.storage import Delivery, Inbox, check_name


class DeliveryHeaders(BaseModel):
    """The headers of a delivery, as FastAPI reads them (``x_fedbroker_source`` is
    ``X-Fedbroker-Source``). All are optional here so that the checks run in a fixed order."""

    content_type: str | None = Field(None, description="The payload's media type")
    idempotency_key: str | None = Field(None, description="Equal to the transfer id")
    x_fedbroker_transfer: str | None = Field(None, description="Transfer id (required)")
    x_fedbroker_source: str | None = Field(None, description="Source member id (required)")
    x_fedbroker_purpose: str | None = Field(
        None, description="Purpose, percent-encoded UTF-8 (required)"
    )
    x_fedbroker_decision: str | None = Field(None, description="e.g. approved (required)")
    x_fedbroker_filename: str | None = Field(
        None, description="File name, percent-encoded UTF-8, may be empty"
    )
    x_fedbroker_sha256: str | None = Field(
        None, description="Hex SHA-256 of the body, signed: it binds the body (required)"
    )
    x_fedbroker_anonymized: str | None = Field(None, description="true or false (required)")
    x_fedbroker_agreement: str | None = Field(
        None, description="The agreement the transfer was made under (empty: none)"
    )
    x_fedbroker_retain_until: str | None = Field(
        None,
        description="UTC date and time (ISO 8601) after which this member deletes the data "
        "(empty: no limit)",
    )
    x_fedbroker_timestamp: str | None = Field(None, description="Unix seconds (required)")
    x_fedbroker_signature: str | None = Field(
        None, description="v5=<key id>:<base64url Ed25519 signature> (required)"
    )


def _signed_headers(headers: DeliveryHeaders) -> dict[str, str]:
    """The signed headers as received (``X-Fedbroker-Source``, ...), missing ones left out."""
    return {
        name: value
        for name in SIGNED_HEADERS
        if (value := getattr(headers, name.lower().replace("-", "_"))) is not None
    }


def verify_signature(
    keys: BrokerKeys, headers: DeliveryHeaders, tolerance_seconds: int, now: float | None = None
) -> str:
    """Check the signature and the timestamp (the body is not needed); returns the transfer id."""
    if not headers.x_fedbroker_signature or not headers.x_fedbroker_timestamp:
        raise NotAuthenticated(
            f"A delivery must carry {h.TIMESTAMP} and {h.SIGNATURE}: "
            "only the broker may post to this inbox"
        )
    transfer_id = headers.x_fedbroker_transfer
    if not transfer_id:
        raise BadRequest(f"{h.TRANSFER} is missing")
    if not re.fullmatch(r"[0-9]{1,12}", headers.x_fedbroker_timestamp):
        raise NotAuthenticated(f"{h.TIMESTAMP} is not a whole number of seconds")
    timestamp = int(headers.x_fedbroker_timestamp)
    skew = abs((time.time() if now is None else now) - timestamp)
    if skew > tolerance_seconds:
        raise NotAuthenticated(
            f"{h.TIMESTAMP} is {skew:.0f} s away from this member's clock "
            f"(at most {tolerance_seconds} s accepted): a replay, or a clock to set right"
        )
    try:
        keys.verify(headers.x_fedbroker_signature, _signed_headers(headers))
    except SignatureError as error:
        raise NotAuthenticated(str(error)) from None
    return transfer_id


def accept(
    inbox: Inbox,
    keys: BrokerKeys,
    headers: DeliveryHeaders,
    body: Iterable[bytes],
    tolerance_seconds: int,
    now: float | None = None,
) -> tuple[str, bool]:
    """Verify one delivery, then store its body, read from ``body`` chunk by chunk only once
    the headers are accepted; returns (transfer id, stored now)."""
    transfer_id = verify_signature(keys, headers, tolerance_seconds, now)
    check_name(transfer_id, "Transfer id")
    if headers.idempotency_key and headers.idempotency_key != transfer_id:
        raise BadRequest(f"{h.IDEMPOTENCY_KEY} differs from {h.TRANSFER}")
    required = {
        h.SOURCE: headers.x_fedbroker_source,
        h.PURPOSE: headers.x_fedbroker_purpose,
        h.DECISION: headers.x_fedbroker_decision,
        h.ANONYMIZED: headers.x_fedbroker_anonymized,
    }
    if missing := [name for name, value in required.items() if not value]:
        raise BadRequest(f"Missing header(s): {', '.join(missing)}")
    anonymized = (headers.x_fedbroker_anonymized or "").lower()
    if anonymized not in ("true", "false"):
        raise BadRequest(f"{h.ANONYMIZED} must be 'true' or 'false'")
    retain_until = _retain_until(headers.x_fedbroker_retain_until)
    delivery = Delivery(
        transfer_id=transfer_id,
        source=headers.x_fedbroker_source or "",
        # signed percent-encoded (header values are ASCII); stored as the text they encode
        purpose=unquote(headers.x_fedbroker_purpose or ""),
        decision=headers.x_fedbroker_decision or "",
        filename=unquote(headers.x_fedbroker_filename or ""),
        sha256=headers.x_fedbroker_sha256 or "",  # hex SHA-256: no v5 signature without one
        anonymized=anonymized == "true",
        content_type=headers.content_type or "application/octet-stream",
        agreement=headers.x_fedbroker_agreement or None,
        retain_until=retain_until,
    )
    return transfer_id, inbox.store(delivery, body)


def _retain_until(value: str | None) -> str | None:
    """The signed retention limit as UTC ISO 8601 (``2026-12-31T23:59:59Z``), or None."""
    if not value:
        return None
    try:
        moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise BadRequest(
            f"{h.RETAIN_UNTIL} must be a UTC date and time such as 2026-12-31T23:59:59Z"
        ) from None
    return moment.isoformat()

"""Accept a delivery from the broker: signed by it, for this member, new; then store it once.

The broker POSTs an approved transfer's bytes to this member's inbox URL, signed with HTTP
Message Signatures (RFC 9421, Ed25519; :mod:`broker.wire.signing`, the wire contract shared by
both services), checked by :func:`fedbroker.client.verify_signature`. The broker's public keys
are pinned by :class:`fedbroker.client.BrokerKeys`: nobody who merely reads the broker's
database can sign. Everything is checked before the body is read, so an unsigned or foreign
delivery costs no disk:

- the signature covers exactly the method, the target URI, ``Content-Digest``, the content type
  and every ``X-Fedbroker-*`` header stored, with ``created``, ``expires``, ``nonce``, ``keyid``,
  ``alg="ed25519"`` and the delivery tag; the target URI it was checked against is this member's
  own inbox URL (``MEMBER_PUBLIC_URL`` + ``/inbox``), never one taken from the request; any
  other signature, the old ``X-Fedbroker-Signature`` among them, is 401;
- times: made at most ``signature_tolerance_seconds`` in the future, expired at most that long
  ago, holding at most ``signature_max_lifetime_seconds``; else 401;
- ``X-Fedbroker-Recipient`` is this member's id; else 403 (a delivery another member re-posts
  here);
- the nonce was never seen (:class:`member_cloud.storage.SeenNonces`); else 401
  ``replayed-delivery``. The broker signs each attempt anew, so its own retry of a transfer
  carries a new nonce, and the inbox answers it ``already_received``: stored once.

Then the body is streamed to the inbox and hashed on the way (:meth:`Inbox.store`); a body that
does not match the signed digest is 400 and nothing of it is kept. What is stored is what was
signed: the values come from the verified signature, not from a second reading of the headers.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import unquote

from broker.wire import headers as h
from broker.wire.signing import SignatureError, Verified
from fedbroker.client import BrokerKeys, verify_signature
from member_cloud.config import MemberSettings
from member_cloud.errors import BadRequest, NotAuthenticated, NotForThisMember, Replayed
from member_cloud.storage import Delivery, Inbox, SeenNonces, check_name


def verify(
    settings: MemberSettings, keys: BrokerKeys, lines: Iterable[tuple[str, str]], now: float
) -> Verified:
    """Check a delivery's signature and recipient (its nonce is :func:`accept`'s)."""
    lines = list(lines)
    named = [value for name, value in lines if name.lower() == h.RECIPIENT.lower()]
    if named and named != [settings.id]:  # said before the signature is checked: the clearer
        _not_for_us(", ".join(named), settings.id)
    try:
        verified = verify_signature(
            settings.inbox_url,
            lines,
            keys.public_key,
            now=now,
            tolerance=settings.signature_tolerance_seconds,
            max_lifetime=settings.signature_max_lifetime_seconds,
        )
    except SignatureError as error:
        raise NotAuthenticated(f"Delivery refused, nothing stored: {error}") from None
    recipient = verified.field(h.RECIPIENT)
    if recipient != settings.id:
        _not_for_us(recipient, settings.id)
    return verified


def _not_for_us(recipient: str, member_id: str) -> None:
    raise NotForThisMember(
        f"This delivery is addressed to {recipient!r}, not to {member_id!r}: refused, nothing "
        "stored"
    )


def accept(
    settings: MemberSettings,
    inbox: Inbox,
    keys: BrokerKeys,
    nonces: SeenNonces,
    lines: Iterable[tuple[str, str]],
    body: Iterable[bytes],
    now: float,
) -> tuple[str, bool]:
    """Verify one delivery, then store its body, read from ``body`` chunk by chunk only once
    the headers are accepted; returns (transfer id, stored now)."""
    lines = list(lines)
    verified = verify(settings, keys, lines, now)
    signed = verified.field
    transfer_id = check_name(signed(h.TRANSFER), "Transfer id")
    idempotency_key = next(
        (value for name, value in lines if name.lower() == h.IDEMPOTENCY_KEY.lower()), None
    )
    if idempotency_key is not None and idempotency_key != transfer_id:
        raise BadRequest(f"{h.IDEMPOTENCY_KEY} differs from {h.TRANSFER}")
    required = (h.SOURCE, h.PURPOSE, h.DECISION, h.ANONYMIZED)
    if missing := [name for name in required if not signed(name)]:
        raise BadRequest(f"Empty header(s): {', '.join(missing)}")
    anonymized = signed(h.ANONYMIZED).lower()
    if anonymized not in ("true", "false"):
        raise BadRequest(f"{h.ANONYMIZED} must be 'true' or 'false'")
    delivery = Delivery(
        transfer_id=transfer_id,
        source=signed(h.SOURCE),
        # signed percent-encoded (header values are ASCII); stored as the text they encode
        purpose=unquote(signed(h.PURPOSE)),
        decision=signed(h.DECISION),
        filename=unquote(signed(h.FILENAME)),
        sha256=verified.sha256,
        anonymized=anonymized == "true",
        content_type=signed(h.CONTENT_TYPE) or "application/octet-stream",
        agreement=signed(h.AGREEMENT) or None,
        retain_until=_retain_until(signed(h.RETAIN_UNTIL)),
    )
    # Spent last, so that a delivery refused above spends no nonce and writes nothing.
    if not nonces.first_use(verified.nonce, verified.expires, now):
        raise Replayed(
            "This signed delivery was received before (its signature's nonce was seen): a "
            "replay, refused, nothing stored. The broker signs every attempt anew"
        )
    return transfer_id, inbox.store(delivery, body)


def _retain_until(value: str) -> str | None:
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

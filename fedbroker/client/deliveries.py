"""Check a delivery the broker POSTed to a member's inbox: signed by the broker, for this inbox,
in time, and its body the one signed.

The broker signs each delivery with HTTP Message Signatures (RFC 9421, Ed25519) over the method,
the inbox URL, ``Content-Digest`` (RFC 9530, SHA-256 of the body), the content type and every
``X-Fedbroker-*`` header, with keys it publishes at ``/.well-known/fedbroker-keys.json``
(:class:`fedbroker.client.keys.BrokerKeys` pins them). The recipient header and the nonce
(refuse one seen before: a replay) are the caller's to check: only it knows its id and the
nonces it has seen.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from broker.wire.signing import SignatureError, Verified
from broker.wire.signing import verify_delivery as verify_signed_fields

Lines = Iterable[tuple[str, str]] | Mapping[str, str]


def verify_signature(
    inbox_url: str,
    headers: Lines,
    public_key: Callable[[str], Ed25519PublicKey],
    *,
    now: float | None = None,
    tolerance: int = 300,
    max_lifetime: int = 900,
) -> Verified:
    """Check a delivery's signature from its headers alone, before its body is read (so an
    unsigned delivery costs no disk); the body must then hash to ``Verified.sha256``.

    ``inbox_url``: this member's own inbox URL, never one taken from the request.
    ``public_key``: ``BrokerKeys.public_key``. Raises ``SignatureError`` saying why.
    """
    lines = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    return verify_signed_fields(
        inbox_url,
        lines,
        public_key,
        now=time.time() if now is None else now,
        tolerance=tolerance,
        max_lifetime=max_lifetime,
    )


def verify_delivery(
    inbox_url: str,
    headers: Lines,
    body: bytes,
    public_key: Callable[[str], Ed25519PublicKey],
    *,
    now: float | None = None,
    tolerance: int = 300,
    max_lifetime: int = 900,
) -> Verified:
    """Check a whole delivery: its signature (:func:`verify_signature`) and that ``body`` is
    the content its signed ``Content-Digest`` names. Raises ``SignatureError`` otherwise::

        keys = BrokerKeys(Path("broker-keys.json"), fetch=client.get_signing_keys)
        verified = verify_delivery("https://me.example/inbox", request.headers, body,
                                   keys.public_key)
        verified.field("X-Fedbroker-Transfer"), verified.nonce
    """
    verified = verify_signature(
        inbox_url, headers, public_key, now=now, tolerance=tolerance, max_lifetime=max_lifetime
    )
    if hashlib.sha256(body).hexdigest() != verified.sha256:
        raise SignatureError(
            "the body is not the one signed: its SHA-256 differs from the signed Content-Digest"
        )
    return verified

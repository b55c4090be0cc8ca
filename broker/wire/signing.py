"""How a member cloud knows a delivery comes from the broker, unaltered: Ed25519 signatures.

The wire side of delivery signatures, which both services use: the broker signs with
:func:`sign` (its keys, from files, are :class:`broker.delivery.keyring.KeyRing`), a member
verifies with :func:`verify` against the keys it pinned. The broker publishes its public keys as
a JSON Web Key Set (RFC 7517, Ed25519 keys as in RFC 8037, :func:`key_set`) at
:data:`KEYS_PATH`; each key's id (``kid``) is its RFC 7638 thumbprint.

Signature header (:data:`broker.wire.headers.SIGNATURE`)::

    X-Fedbroker-Signature: v3=<kid>:<base64url signature>

over the delivery's metadata headers, one per line, then the body (:data:`SIGNED_HEADERS`, each
value exactly as sent, a missing header as the empty string). Several comma-separated values may
be offered; one valid value suffices.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from broker.wire import headers as h

SCHEME = "v3"
KEYS_PATH = "/.well-known/fedbroker-keys.json"
SIGNED_HEADERS = (
    h.TIMESTAMP,
    h.TRANSFER,
    h.SOURCE,
    h.PURPOSE,
    h.DECISION,
    h.FILENAME,
    h.SHA256,
    h.ANONYMIZED,
    h.CONTENT_TYPE,
)


class SignatureError(ValueError):
    """A signature is missing, malformed, made with an unknown key, or does not match."""


class UnknownKey(SignatureError):
    """The signature names a key id the verifier does not know (yet)."""

    def __init__(self, kid: str):
        super().__init__(f"the delivery is signed with key {kid!r}, unknown to this member")
        self.kid = kid


def signed_message(headers: Mapping[str, str], body: bytes) -> bytes:
    """The bytes a signature covers: :data:`SIGNED_HEADERS`' values, one per line, then the body.

    ``headers`` is looked up without regard to case (HTTP header names are case-insensitive).
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    lines = "".join(f"{lowered.get(name.lower(), '')}\n" for name in SIGNED_HEADERS)
    return lines.encode() + body


def key_id(public: Ed25519PublicKey) -> str:
    """RFC 7638 thumbprint: base64url SHA-256 of the canonical JWK ``{"crv","kty","x"}``."""
    canonical = json.dumps(
        {"crv": "Ed25519", "kty": "OKP", "x": _b64(_raw(public))}, separators=(",", ":")
    )
    return _b64(hashlib.sha256(canonical.encode()).digest())


def jwk(public: Ed25519PublicKey) -> dict[str, str]:
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": _b64(_raw(public)),
        "kid": key_id(public),
        "alg": "EdDSA",
        "use": "sig",
    }


def key_set(publics: Iterable[Ed25519PublicKey]) -> dict:
    """The JSON Web Key Set the broker publishes at :data:`KEYS_PATH`, in the given order."""
    return {"keys": [jwk(public) for public in publics]}


def public_keys(jwks: Mapping) -> dict[str, Ed25519PublicKey]:
    """``kid -> key`` from a JSON Web Key Set; keys that are not Ed25519 are ignored."""
    found = {}
    for entry in jwks.get("keys", []):
        if entry.get("kty") != "OKP" or entry.get("crv") != "Ed25519" or "x" not in entry:
            continue
        try:
            public = Ed25519PublicKey.from_public_bytes(_unb64(entry["x"]))
        except (KeyError, ValueError, TypeError):
            continue
        found[key_id(public)] = public  # the id is recomputed, never taken on trust
    return found


def sign(key: Ed25519PrivateKey, headers: Mapping[str, str], body: bytes) -> str:
    """The ``X-Fedbroker-Signature`` value of a delivery, signed by ``key``."""
    signature = key.sign(signed_message(headers, body))
    return f"{SCHEME}={key_id(key.public_key())}:{_b64(signature)}"


def verify(
    header: str | None,
    headers: Mapping[str, str],
    body: bytes,
    keys: Mapping[str, Ed25519PublicKey],
) -> str:
    """Check ``X-Fedbroker-Signature`` against ``keys``; returns the id of the key that matched.

    Raises :class:`UnknownKey` when every offered value names a key not in ``keys`` (fetch the
    broker's key set again, then retry), :class:`SignatureError` otherwise.
    """
    offered = [part.strip() for part in (header or "").split(",") if part.strip()]
    values = [v.removeprefix(f"{SCHEME}=") for v in offered if v.startswith(f"{SCHEME}=")]
    if not values:
        raise SignatureError(
            f"{h.SIGNATURE} has no {SCHEME}= value: only {SCHEME} signatures (Ed25519, "
            "by the broker's published keys) are accepted"
        )
    message = signed_message(headers, body)
    unknown = None
    for value in values:
        kid, _, encoded = value.partition(":")
        if kid not in keys:
            unknown = unknown or kid
            continue
        try:
            keys[kid].verify(_unb64(encoded), message)
        except (InvalidSignature, ValueError):
            continue
        return kid
    if unknown is not None and all(v.partition(":")[0] not in keys for v in values):
        raise UnknownKey(unknown)
    raise SignatureError(
        f"{h.SIGNATURE} does not match: a signed header or the body was changed, or the "
        "delivery was not signed by the broker"
    )


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

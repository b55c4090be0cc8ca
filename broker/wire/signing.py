"""How a member cloud knows a delivery comes from the broker, unaltered: Ed25519 signatures.

The wire side of delivery signatures, which both services use: the broker signs with
:func:`sign` (its keys, from files, are :class:`broker.delivery.keyring.KeyRing`), a member
verifies with :func:`verify` against the keys it pinned. The broker publishes its public keys as
a JSON Web Key Set (RFC 7517, Ed25519 keys as in RFC 8037, :func:`key_set`) at
:data:`KEYS_PATH`; each key's id (``kid``) is its RFC 7638 thumbprint.

Signature header (:data:`broker.wire.headers.SIGNATURE`)::

    X-Fedbroker-Signature: v5=<kid>:<base64url signature>

over the delivery's metadata headers, one per line (:data:`SIGNED_HEADERS`, each value exactly
as sent, a missing header as the empty string). Several comma-separated values may be offered;
one valid value suffices.

The body is not signed itself: it is bound through its SHA-256, ``X-Fedbroker-Sha256``, one of
the signed headers, which the scheme requires (64 lower-case hex digits). This is how HTTP
Message Signatures (RFC 9421) cover a body: through its ``Content-Digest`` (RFC 9530). Neither
side holds the body in memory to sign or verify: the broker hashes it as it reads it; a member
checks the signature before it reads the body, then hashes the body as it stores it and keeps it
only if it matches the signed digest. Scheme ``v5`` adds the agreement a transfer was made
under and the date until which the destination may keep it to the signed headers; ``v4``
signatures (without them) and ``v3`` ones (which signed the body itself) are refused.

Documents the broker signs (an agreement between two members): :func:`sign_document` signs the
canonical JSON of the document (:mod:`broker.wire.canonical`) with the same keys, and anyone
holding the published key set checks it with :func:`verify_document`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from broker.wire import headers as h
from broker.wire.canonical import canonical_json

SCHEME = "v5"
DOCUMENT_SCHEME = "ed25519"
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
    h.AGREEMENT,
    h.RETAIN_UNTIL,
)
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class SignatureError(ValueError):
    """A signature is missing, malformed, made with an unknown key, or does not match."""


class UnknownKey(SignatureError):
    """The signature names a key id the verifier does not know (yet)."""

    def __init__(self, kid: str):
        super().__init__(f"signed with key {kid!r}, unknown to this member")
        self.kid = kid


def signed_message(headers: Mapping[str, str]) -> bytes:
    """The bytes a signature covers: :data:`SIGNED_HEADERS`' values, one per line.

    ``headers`` is looked up without regard to case (HTTP header names are case-insensitive).
    Raises ``ValueError`` unless they hold the body's SHA-256 (:data:`broker.wire.headers.SHA256`,
    64 lower-case hex digits): without it a signature would not bind the body.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    digest = lowered.get(h.SHA256.lower(), "")
    if not _SHA256_HEX.fullmatch(digest):
        raise ValueError(
            f"{h.SHA256} must be the body's SHA-256 as 64 lower-case hex digits, not {digest!r}: "
            f"a {SCHEME} signature binds the body through it"
        )
    return "".join(f"{lowered.get(name.lower(), '')}\n" for name in SIGNED_HEADERS).encode()


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


def sign(key: Ed25519PrivateKey, headers: Mapping[str, str]) -> str:
    """The ``X-Fedbroker-Signature`` value of a delivery, signed by ``key``.

    ``headers`` must hold the body's SHA-256 (``ValueError`` otherwise, see
    :func:`signed_message`): the body itself is not needed.
    """
    signature = key.sign(signed_message(headers))
    return f"{SCHEME}={key_id(key.public_key())}:{_b64(signature)}"


def verify(
    header: str | None,
    headers: Mapping[str, str],
    keys: Mapping[str, Ed25519PublicKey],
) -> str:
    """Check ``X-Fedbroker-Signature`` against ``keys``; returns the id of the key that matched.

    Only the headers are checked: the caller must then check that the body hashes to the signed
    ``X-Fedbroker-Sha256`` before it trusts the body. Raises :class:`UnknownKey` when every
    offered value names a key not in ``keys`` (fetch the broker's key set again, then retry),
    :class:`SignatureError` otherwise.
    """
    offered = [part.strip() for part in (header or "").split(",") if part.strip()]
    values = [v.removeprefix(f"{SCHEME}=") for v in offered if v.startswith(f"{SCHEME}=")]
    if not values:
        schemes = sorted({v.partition("=")[0] for v in offered if "=" in v})
        found = f" (it offers {', '.join(schemes)})" if schemes else ""
        raise SignatureError(
            f"{h.SIGNATURE} has no {SCHEME}= value{found}: only {SCHEME} signatures (Ed25519 "
            f"over the signed headers, the body bound by {h.SHA256}, by the broker's published "
            "keys) are accepted"
        )
    try:
        message = signed_message(headers)
    except ValueError as error:
        raise SignatureError(str(error)) from None
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
        f"{h.SIGNATURE} does not match: a signed header was changed, or the delivery was not "
        "signed by the broker"
    )


def sign_document(key: Ed25519PrivateKey, document: object) -> str:
    """``ed25519=<kid>:<base64url signature>`` over the canonical JSON of ``document``."""
    signature = key.sign(canonical_json(document).encode())
    return f"{DOCUMENT_SCHEME}={key_id(key.public_key())}:{_b64(signature)}"


def verify_document(signature: str, document: object, keys: Mapping[str, Ed25519PublicKey]) -> str:
    """Check a :func:`sign_document` signature against ``keys``; returns the key id. Raises
    :class:`UnknownKey` for a key id not in ``keys``, :class:`SignatureError` otherwise."""
    scheme, _, value = (signature or "").partition("=")
    kid, _, encoded = value.partition(":")
    if scheme != DOCUMENT_SCHEME or not kid or not encoded:
        raise SignatureError(f"not a {DOCUMENT_SCHEME}=<key id>:<signature> document signature")
    if kid not in keys:
        raise UnknownKey(kid)
    try:
        keys[kid].verify(_unb64(encoded), canonical_json(document).encode())
    except (InvalidSignature, ValueError):
        raise SignatureError("the document does not match its signature") from None
    return kid


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

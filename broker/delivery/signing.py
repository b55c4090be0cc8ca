"""How a member cloud knows a delivery comes from the broker, unaltered: Ed25519 signatures.

The broker signs every delivery with a private key that lives in a file of its key folder, never
in its database: whoever reads the database (or a backup of it) cannot sign as the broker. The
public keys are published as a JSON Web Key Set (RFC 7517, Ed25519 keys as in RFC 8037) at
``/.well-known/fedbroker-keys.json``; each key's id (``kid``) is its RFC 7638 thumbprint.

Signature header::

    X-Fedbroker-Signature: v3=<kid>:<base64url signature>

over the delivery's metadata headers, one per line, then the body (:data:`SIGNED_HEADERS`, each
value exactly as sent, a missing header as the empty string). Several comma-separated values may
be offered; one valid value suffices.

Rotation: add a key (``fedbroker keys generate``): the newest key signs, every key in the folder
stays published, so members verify deliveries signed with either; remove the old file once every
member has seen the new key (members fetch the set again when they meet an unknown ``kid``).
This module is the wire contract of both services: the broker signs with :class:`KeyRing`, a
member verifies with :func:`verify`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

SCHEME = "v3"
KEYS_PATH = "/.well-known/fedbroker-keys.json"
SIGNED_HEADERS = (
    "X-Fedbroker-Timestamp",
    "X-Fedbroker-Transfer",
    "X-Fedbroker-Source",
    "X-Fedbroker-Purpose",
    "X-Fedbroker-Decision",
    "X-Fedbroker-Filename",
    "X-Fedbroker-Sha256",
    "X-Fedbroker-Anonymized",
    "Content-Type",
)
_KEY_SUFFIX = ".pem"


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
            f"X-Fedbroker-Signature has no {SCHEME}= value: only {SCHEME} signatures (Ed25519, "
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
        "X-Fedbroker-Signature does not match: a signed header or the body was changed, or the "
        "delivery was not signed by the broker"
    )


@dataclass(frozen=True, eq=False)
class KeyRing:
    """The broker's signing keys: every key of the folder is published, the newest one signs."""

    keys: tuple[Ed25519PrivateKey, ...]  # oldest first

    @classmethod
    def load(cls, folder: Path, create: bool = False) -> KeyRing:
        """Read every ``*.pem`` private key of ``folder`` (by modification time, then name).

        With ``create``, an empty or missing folder gets a first key (a local demo or test);
        in production, keys are made with ``fedbroker keys generate``.
        """
        folder = Path(folder)
        files = sorted(folder.glob(f"*{_KEY_SUFFIX}"), key=lambda p: (p.stat().st_mtime, p.name))
        if not files and create:
            files = [generate(folder)]
        if not files:
            raise SignatureError(
                f"no signing key in {folder}: make one with `fedbroker keys generate {folder}`"
            )
        keys = []
        for path in files:
            try:
                key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            except (ValueError, TypeError, OSError) as error:
                raise SignatureError(f"{path} is not a readable PEM private key: {error}") from None
            if not isinstance(key, Ed25519PrivateKey):
                raise SignatureError(f"{path} is not an Ed25519 private key")
            keys.append(key)
        return cls(tuple(keys))

    @property
    def active_id(self) -> str:
        return key_id(self.keys[-1].public_key())

    def sign(self, headers: Mapping[str, str], body: bytes) -> str:
        """The ``X-Fedbroker-Signature`` value for a delivery, by the newest key."""
        signature = self.keys[-1].sign(signed_message(headers, body))
        return f"{SCHEME}={self.active_id}:{_b64(signature)}"

    def jwks(self) -> dict:
        return {"keys": [jwk(key.public_key()) for key in reversed(self.keys)]}


def generate(folder: Path) -> Path:
    """Write a new Ed25519 private key to ``folder/<kid>.pem`` (mode 0600); returns its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    path = folder / f"{key_id(key.public_key())}{_KEY_SUFFIX}"
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(pem)
    return path


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

"""The broker's delivery signing keys: files in its key folder, never in its database.

Whoever reads the database (or a backup of it) cannot sign as the broker. The protocol (what is
signed, the header, the published key set) is the wire's, :mod:`broker.wire.signing`; this module
keeps the private keys.

Rotation: add a key (``fedbroker keys generate``): the newest key signs, every key in the folder
stays published, so members verify deliveries signed with either; remove the old file once every
member has seen the new key (members fetch the set again when they meet an unknown ``kid``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from broker.wire.signing import (
    SignatureError,
    key_id,
    key_set,
    sign_callback,
    sign_delivery,
    sign_document,
)

_KEY_SUFFIX = ".pem"


@dataclass(frozen=True, eq=False)
class KeyRing:
    """The broker's signing keys: every key of the folder is published, the newest one signs."""

    keys: tuple[Ed25519PrivateKey, ...]  # oldest first

    @classmethod
    def load(cls, folder: Path, create: bool = False) -> KeyRing:
        """Read every ``*.pem`` private key of ``folder`` (by modification time, then name).

        With ``create``, an empty or missing folder gets a first key (a local demo or test);
        in production, keys are made with ``fedbroker keys generate``. A folder without a usable
        key raises :class:`~broker.wire.signing.SignatureError`.
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

    def sign_delivery(
        self, url: str, headers: Mapping[str, str], *, created: int, expires: int, nonce: str
    ) -> dict[str, str]:
        """The ``Signature-Input`` and ``Signature`` of a delivery to ``url``, by the newest
        key (:func:`broker.wire.signing.sign_delivery`)."""
        return sign_delivery(
            self.keys[-1], url, headers, created=created, expires=expires, nonce=nonce
        )

    def sign_callback(
        self, url: str, headers: Mapping[str, str], *, created: int, expires: int, nonce: str
    ) -> dict[str, str]:
        """The signature of a protocol callback to ``url``, by the newest key
        (:func:`broker.wire.signing.sign_callback`)."""
        return sign_callback(
            self.keys[-1], url, headers, created=created, expires=expires, nonce=nonce
        )

    def sign_document(self, document: object) -> str:
        """The newest key's signature of ``document`` (see
        :func:`broker.wire.signing.sign_document`)."""
        return sign_document(self.keys[-1], document)

    def jwks(self) -> dict:
        """The published key set, newest first."""
        return key_set(key.public_key() for key in reversed(self.keys))


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

"""The broker's public signing keys, as a member pins them.

The first key set is fetched from the broker's ``/.well-known/fedbroker-keys.json``
(``Client.get_signing_keys``) and kept in a file (the member cloud's
``{data_dir}/broker-keys.json``), so deliveries verify while the broker is down. A delivery
signed with a key id this member does not know makes it fetch the set again (at most once per
:data:`REFRESH_SECONDS`): that is how a key rotation at the broker reaches it. A pinned set
older than ``max_age_seconds`` (``MEMBER_BROKER_KEYS_MAX_AGE_SECONDS``) is fetched again before
it is used: that is how a key the broker retired (or found compromised) stops being accepted,
though no delivery names an unknown key. While the broker does not answer, the pinned set stays
in use. With ``refresh=False`` (``MEMBER_BROKER_KEYS_REFRESH=false``) the pinned file is never
replaced: put the broker's key set there yourself.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from broker.wire.signing import UnknownKey, public_keys, verify_document

log = logging.getLogger("fedbroker.client")
REFRESH_SECONDS = 30.0


class BrokerKeys:
    """The pinned key set in ``path``; ``fetch()`` gets the broker's current one (None: the
    file is the only source). ``public_key`` is what :func:`fedbroker.client.verify_delivery`
    takes."""

    def __init__(
        self,
        path: Path,
        fetch: Callable[[], dict] | None,
        refresh: bool = True,
        max_age_seconds: float = 3600.0,
    ):
        self.path = Path(path)
        self.fetch = fetch
        self.refresh_allowed = refresh
        self.max_age_seconds = max_age_seconds
        self._lock = threading.Lock()
        self._last_refresh = float("-inf")
        self._pinned_at = float("-inf")  # wall clock: the pinned file outlives the process
        self._keys: dict[str, Ed25519PublicKey] = {}
        if self.path.exists():
            try:
                self._keys = public_keys(json.loads(self.path.read_text()))
                self._pinned_at = self.path.stat().st_mtime
            except (OSError, ValueError):
                log.warning("cannot read the pinned broker keys in %s; fetching them", self.path)

    def public_key(self, kid: str) -> Ed25519PublicKey:
        """The pinned key ``kid``; for a key id not pinned, fetch the broker's keys once and
        look again (:class:`UnknownKey` if still unknown). Deliveries that arrive together with
        a new key id wait for one fetch and are all checked against what it pinned."""
        if kid not in self._keys or self._stale():
            self.refresh()  # or another delivery's refresh pinned it while this one waited
        try:
            return self._keys[kid]
        except KeyError:
            raise UnknownKey(kid) from None

    def verify_document(self, signature: str, document: object) -> str:
        """Check a document the broker signed (an agreement) with the pinned keys, fetched
        again once for a key id not pinned, as a delivery's key is (:meth:`public_key`)."""
        if self._stale():
            self.refresh()
        try:
            return verify_document(signature, document, self._keys)
        except UnknownKey:
            self.refresh()
        return verify_document(signature, document, self._keys)

    def _stale(self) -> bool:
        return time.time() - self._pinned_at > self.max_age_seconds

    def refresh(self) -> bool:
        """Fetch and pin the broker's key set; False when not allowed or tried too recently."""
        with self._lock:
            now = time.monotonic()
            if not self.refresh_allowed or self.fetch is None:
                return False
            if now - self._last_refresh < REFRESH_SECONDS:
                return False
            self._last_refresh = now
            try:
                document = self.fetch()
            except Exception as error:  # the broker is down: keep what is pinned
                log.warning("cannot fetch the broker's signing keys: %s", error)
                return False
            keys = public_keys(document)
            if not keys:
                log.warning("the broker's key set holds no Ed25519 key; keeping the pinned keys")
                return False
            atomic_write(self.path, json.dumps(document, indent=2).encode())
            self._keys, self._pinned_at = keys, time.time()
            log.info("pinned the broker's signing keys: %s", ", ".join(sorted(keys)))
            return True


def atomic_write(path: Path, content: bytes) -> None:
    """Replace ``path`` with ``content`` at once (a reader sees the old file or the new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

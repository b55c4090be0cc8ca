"""The member cloud's files: its local datasets and its inbox, under ``data_dir``.

::

    <data_dir>/datasets/<name>                 one file per dataset, as uploaded
    <data_dir>/inbox/<transfer_id>/data        the delivered bytes
    <data_dir>/inbox/<transfer_id>/meta.json   who sent it, why, its checksum, when it arrived
    <data_dir>/nonces/<minute>/<sha256>        the nonce of a delivery signature accepted, kept
                                               until the signature has expired

Folders are 0700 and files 0600 (the data may be personal). Every file is written atomically:
a temporary file in the same folder, fsync, ``os.replace``, then an fsync of the folder.
Delivered bytes are streamed to a temporary file in ``<data_dir>/inbox``, hashed as they are
written, and moved into their entry only when they match the SHA-256 the broker signed: no
delivery is held in memory, whatever its size. An inbox entry is complete once its ``meta.json``
exists (written last); an entry without one (a crash in between) is invisible and a redelivery
overwrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from member_cloud.errors import ChecksumMismatch, Conflict, InvalidName, NotFound

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NAME_RULE = (
    "1 to 128 characters among letters, digits, '.', '_' and '-', starting with a letter or a "
    "digit, without '..'"
)
_CHUNK = 1024 * 1024
_TMP_SUFFIX = ".tmp"


def check_name(name: str, what: str = "Dataset name") -> str:
    """A name safe to use as one file name: no separator, no '..', no leading dot."""
    if not NAME_PATTERN.fullmatch(name) or ".." in name:
        raise InvalidName(f"{what} {name!r} is not allowed: use {NAME_RULE}")
    return name


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _spooled(
    folder: Path, name: str, chunks: Iterable[bytes], mode: int = 0o600
) -> Iterator[tuple[Path, int, str]]:
    """Write ``chunks`` to a temporary file in ``folder``, hashing them, and fsync it.

    Yields (its path, size, sha256 hex); the caller moves it into place with ``os.replace``.
    Whatever is still there on the way out (an error, a checksum refused) is removed.
    """
    digest, size = hashlib.sha256(), 0
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=_TMP_SUFFIX)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        yield tmp, size, digest.hexdigest()
    finally:
        with suppress(FileNotFoundError):
            os.unlink(tmp)


def atomic_write(path: Path, source: bytes | IO[bytes], mode: int = 0o600) -> None:
    """Write ``source`` (bytes, or a file read in chunks) to ``path`` atomically."""
    if isinstance(source, bytes | bytearray | memoryview):
        chunks: Iterable[bytes] = (source,)
    else:
        chunks = iter(lambda: source.read(_CHUNK), b"")
    with _spooled(path.parent, path.name, chunks, mode) as (tmp, _, _):
        os.replace(tmp, path)
    _fsync_dir(path.parent)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    size_bytes: int
    sha256: str
    modified_at: datetime


class DatasetStore:
    """The member's local datasets: one file each in ``root``."""

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()
        self._hashes: dict[str, tuple[int, int, str]] = {}  # name -> (mtime_ns, size, sha256)

    def prepare(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        """The file of an existing dataset (``NotFound`` otherwise)."""
        path = self.root / check_name(name)
        if not path.is_file():
            raise NotFound(f"No dataset named {name!r} in this member cloud")
        return path

    def open(self, name: str) -> IO[bytes]:
        return self.path(name).open("rb")

    def info(self, name: str) -> DatasetInfo:
        path = self.path(name)
        stat = path.stat()
        with self._lock:
            cached = self._hashes.get(name)
        if cached and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            sha256 = cached[2]
        else:
            sha256 = _sha256_of(path)
            with self._lock:
                self._hashes[name] = (stat.st_mtime_ns, stat.st_size, sha256)
        return DatasetInfo(name, stat.st_size, sha256, datetime.fromtimestamp(stat.st_mtime, UTC))

    def list(self) -> list[DatasetInfo]:
        """Every dataset, by name."""
        names = sorted(
            p.name for p in self.root.iterdir() if p.is_file() and NAME_PATTERN.fullmatch(p.name)
        )
        infos = []
        for name in names:
            with suppress(NotFound):  # deleted meanwhile
                infos.append(self.info(name))
        return infos

    def save(self, name: str, source: bytes | IO[bytes], replace: bool = False) -> bool:
        """Store a dataset; True when it is new, False when it replaced one (``replace``)."""
        path = self.root / check_name(name)
        with self._lock:
            existed = path.exists()
            if existed and not replace:
                raise Conflict(
                    f"A dataset named {name!r} exists: send replace=true to overwrite it"
                )
            atomic_write(path, source)
            self._hashes.pop(name, None)
        return not existed

    def delete(self, name: str) -> None:
        path = self.path(name)
        with self._lock:
            path.unlink(missing_ok=True)
            self._hashes.pop(name, None)


@dataclass(frozen=True)
class Delivery:
    """What the broker says about a delivered transfer (its ``X-Fedbroker-*`` headers)."""

    transfer_id: str
    source: str
    purpose: str
    decision: str
    filename: str
    sha256: str
    anonymized: bool
    content_type: str
    agreement: str | None = None  # the agreement it was sent under
    retain_until: str | None = None  # UTC ISO 8601: deleted then (None: no limit)


class Inbox:
    """Deliveries received from the broker, one folder per transfer id, each stored once."""

    DATA, META = "data", "meta.json"

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """Create the inbox folder; remove the temporary files a crash left in it (no delivery
        is under way before the member serves)."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        for leftover in self.root.glob(f".*{_TMP_SUFFIX}"):
            leftover.unlink(missing_ok=True)

    def unready(self) -> str | None:
        """Why a delivery could not be stored now (None when it could): the inbox folder is
        gone or cannot be written. Says no path (``GET /readyz`` answers anyone)."""
        if not self.root.is_dir():
            return "its inbox folder is missing"
        try:  # as a delivery starts: a temporary file (one a crash leaves is removed at start)
            handle, name = tempfile.mkstemp(dir=self.root, prefix=".ready-", suffix=_TMP_SUFFIX)
        except OSError as error:
            return f"its inbox folder cannot be written ({error.strerror or type(error).__name__})"
        os.close(handle)
        os.unlink(name)
        return None

    def store(self, delivery: Delivery, chunks: Iterable[bytes]) -> bool:
        """Store a delivery's bytes as they arrive; True when stored now, False when this
        transfer was already received with the same SHA-256 (``chunks`` is then read to its end
        and dropped: the sender gets its answer on a clean connection).

        The bytes go to a temporary file in the inbox folder, hashed on the way, and are moved
        into place only if they hash to ``delivery.sha256`` (``ChecksumMismatch`` otherwise:
        nothing is kept). The same transfer id with another SHA-256 is a ``Conflict``: nothing
        is overwritten.
        """
        entry = self.root / check_name(delivery.transfer_id, "Transfer id")
        if self._received(entry, delivery):
            for _ in chunks:
                pass
            return False
        with _spooled(self.root, entry.name, chunks) as (tmp, size, sha256):
            if sha256 != delivery.sha256:
                raise ChecksumMismatch(
                    f"The {size:,}-byte body hashes to {sha256}, not to the SHA-256 the broker "
                    f"signed ({delivery.sha256}): nothing was stored"
                )
            with self._lock:
                if self._received(entry, delivery):  # the same delivery, stored meanwhile
                    return False
                entry.mkdir(mode=0o700, exist_ok=True)
                _fsync_dir(self.root)
                os.replace(tmp, entry / self.DATA)
                _fsync_dir(entry)
                meta = {**asdict(delivery), "size_bytes": size, "received_at": _now()}
                atomic_write(entry / self.META, json.dumps(meta, indent=2).encode())
        return True

    def _received(self, entry: Path, delivery: Delivery) -> bool:
        """True when ``entry`` holds this delivery already; ``Conflict`` when other bytes."""
        existing = self._read_meta(entry)
        if existing is None:
            return False
        if existing["sha256"] != delivery.sha256:
            raise Conflict(
                f"Transfer {delivery.transfer_id!r} was already received with other "
                f"content (sha256 {existing['sha256']}); the new delivery was refused"
            )
        return True

    def list(self) -> list[dict[str, Any]]:
        """Every complete entry, newest first."""
        entries = [
            meta
            for entry in self.root.iterdir()
            if entry.is_dir() and (meta := self._read_meta(entry)) is not None
        ]
        entries.sort(key=lambda m: (m["received_at"], m["transfer_id"]), reverse=True)
        return entries

    def meta(self, transfer_id: str) -> dict[str, Any]:
        meta = self._read_meta(self.root / check_name(transfer_id, "Transfer id"))
        if meta is None:
            raise NotFound(f"No delivery of transfer {transfer_id!r} in the inbox")
        return meta

    def data_path(self, transfer_id: str) -> Path:
        meta = self.meta(transfer_id)  # NotFound unless complete
        if meta.get("erased_at"):
            raise NotFound(
                f"The data of transfer {transfer_id!r} was deleted at {meta['erased_at']}: "
                f"its retention ended ({meta.get('retain_until')})"
            )
        return self.root / transfer_id / self.DATA

    def expired(self, now: datetime) -> list[dict[str, Any]]:
        """Entries whose retention ended and whose deletion the broker has not been told of."""
        return [
            meta
            for meta in self.list()
            if meta.get("retain_until")
            and datetime.fromisoformat(meta["retain_until"]) <= now
            and not meta.get("erasure_reported_at")
        ]

    def erase(self, transfer_id: str) -> dict[str, Any]:
        """Delete a delivery's data (its metadata stays, saying when); idempotent."""
        entry = self.root / check_name(transfer_id, "Transfer id")
        with self._lock:
            meta = self.meta(transfer_id)
            if not meta.get("erased_at"):
                (entry / self.DATA).unlink(missing_ok=True)
                _fsync_dir(entry)
                meta["erased_at"] = _now()
                atomic_write(entry / self.META, json.dumps(meta, indent=2).encode())
        return meta

    def reported(self, transfer_id: str) -> None:
        """Note that the broker was told the data is deleted."""
        entry = self.root / check_name(transfer_id, "Transfer id")
        with self._lock:
            meta = self.meta(transfer_id)
            meta["erasure_reported_at"] = _now()
            atomic_write(entry / self.META, json.dumps(meta, indent=2).encode())

    def _read_meta(self, entry: Path) -> dict[str, Any] | None:
        try:
            return json.loads((entry / self.META).read_text())
        except FileNotFoundError:
            return None


class SeenNonces:
    """The nonces of the delivery signatures this member accepted, kept until they expire: a
    signed delivery is taken once, and the same signature posted again is refused as a replay.

    One empty file per nonce, named by the nonce's SHA-256, in a folder per minute of the
    signature's expiry (``<root>/<expires // 60>/<sha256>``). Creating it with ``O_EXCL`` is the
    check, atomic across threads and processes; it is fsynced, so a restart remembers. A folder
    whose minute ended more than ``tolerance`` seconds ago is removed (at most once a minute):
    a signature that expired then is refused as expired, whatever its nonce.
    """

    MINUTE = 60

    def __init__(self, root: Path, tolerance_seconds: int):
        self.root = root
        self.tolerance = tolerance_seconds
        self._lock = threading.Lock()
        self._pruned_at = float("-inf")

    def prepare(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def first_use(self, nonce: str, expires: int, now: float) -> bool:
        """Remember ``nonce`` (of a signature valid until ``expires``, unix seconds); True the
        first time, False when it was seen before."""
        self._prune(now)
        folder = self.root / str(expires // self.MINUTE)
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / hashlib.sha256(nonce.encode()).hexdigest()
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
        _fsync_dir(folder)
        return True

    def _prune(self, now: float) -> None:
        with self._lock:
            if now - self._pruned_at < self.MINUTE:
                return
            self._pruned_at = now
        for folder in self.root.iterdir():
            if not folder.name.isdigit():
                continue
            if (int(folder.name) + 1) * self.MINUTE + self.tolerance < now:
                shutil.rmtree(folder, ignore_errors=True)

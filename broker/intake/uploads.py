"""An uploaded dataset, as the routes that take one (transfers, analyze) receive it.

The upload never sits whole in memory: the multipart parser writes the file part to a temporary
file as it arrives (past 1 MiB), and :func:`receive` copies it in chunks into the broker's spool
folder, hashing as it copies. What is measured is then read from that copy: small files into
memory, large ones out of core (:mod:`broker.intake.tables`). A job that decides later
(``202 Accepted``) takes the copy over with :func:`adopt`; every other copy is removed when the
request ends (the request's dependency :data:`broker.web.deps.SpooledUpload`, or
:func:`spooled` inside a route's own work). A spool folder
without room for the copy answers 507 with ``Retry-After``, the part copied removed at once.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from broker.errors import storage_faults

CHUNK = 1 << 20
_SUFFIX = ".upload"


@dataclass(frozen=True)
class Upload:
    """A file as the broker holds it: its copy in the spool folder, and what was said of it."""

    path: Path
    size: int
    sha256: str
    filename: str | None
    content_type: str | None

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()


def receive(
    source: BinaryIO, folder: Path, filename: str | None, content_type: str | None
) -> Upload:
    """Copy ``source`` into ``folder`` in chunks, hashing as it goes (bounded memory); a full
    disk is :class:`~broker.errors.InsufficientStorage`, and leaves no part of the copy."""
    path = folder / f"{uuid.uuid4().hex}{_SUFFIX}"
    digest, size = hashlib.sha256(), 0
    with storage_faults("the upload's copy in the spool folder"):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            with path.open("xb") as copy:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    copy.write(chunk)
                    size += len(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    return Upload(path, size, digest.hexdigest(), filename, content_type)


def adopt(upload: Upload, path: Path) -> Upload:
    """Move the copy to ``path`` (a job's own file): the request's cleanup no longer removes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(upload.path, path)
    return Upload(path, upload.size, upload.sha256, upload.filename, upload.content_type)


def discard(upload: Upload) -> None:
    upload.path.unlink(missing_ok=True)


@contextmanager
def spooled(
    source: BinaryIO, spool_dir: Path, filename: str | None, content_type: str | None
) -> Iterator[Upload]:
    """:func:`receive`, the copy removed when the block ends (unless a job adopted it)."""
    upload = receive(source, spool_dir, filename, content_type)
    try:
        yield upload
    finally:
        discard(upload)

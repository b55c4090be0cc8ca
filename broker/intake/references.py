"""Transfers by reference: a dataset too large for any one machine stays where it lies.

The member names files on the federation's shared storage, under a folder an administrator
granted it (``BROKER_REFERENCE_ROOTS``), with glob patterns for several. The request resolves
that location once (:func:`resolve`) into a fixed list of regular files, each pinned by its
identity (:mod:`broker.intake.pinned_files`); the job keeps that list, and its Dask cluster
(``BROKER_DASK_SCHEDULER``) reads only those files, each checked against its pins (and, after
the first read, its SHA-256) at every pass, through the canonical reader uploads go through
(:func:`broker.datasets.read_dataset`: the same column-name, content and size rules). The broker
decides with the same code as for an upload and, when approved, has the cluster write the table
that may leave as Parquet under ``BROKER_REFERENCE_OUTPUT``; the destination receives a signed
reference document: where the files are, their sizes and SHA-256 digests.

The rules, and what they protect against, are in ``docs/references.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any

import pandas as pd

from broker.background import Deadline
from broker.config import Settings
from broker.datasets import DatasetError, DatasetTooLarge, ReadLimits, read_dataset
from broker.engines.base import Engine
from broker.errors import Conflict, Forbidden, InvalidDataset, PayloadTooLarge, Unprocessable
from broker.intake import pinned_files
from broker.intake.pinned_files import Pinned
from broker.intake.tables import Table, Written, declare_roles, read_limits
from broker.wire.canonical import sha256_of

REFERENCE = "reference"  # the delivered document's format
MEDIA_TYPE = "application/vnd.fedbroker.reference+json"
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Reference:
    """A dataset named by its location, resolved once: the granted folder it lies under, the
    regular files it named then with their pins, and the fingerprint of that list."""

    location: str
    data_format: str
    root: str
    root_inode: int
    files: tuple[Pinned, ...]
    sha256: str  # of the pinned list: the data is not read to name it
    size: int

    def stored(self) -> dict[str, Any]:
        """What a job keeps (JSON)."""
        return asdict(self)

    @classmethod
    def of(cls, stored: dict[str, Any]) -> Reference:
        if "root_inode" not in stored:
            raise Conflict(
                "This transfer by reference was accepted by an earlier broker version, which "
                "did not pin its files: nothing was read; send it again"
            )
        files = tuple(Pinned(**file) for file in stored["files"])
        return cls(**stored | {"files": files})


def resolve(location: str, source_id: str, settings: Settings) -> Reference:
    """The files ``location`` names, pinned, if the source may name them; else a problem."""
    if settings.dask_scheduler is None or settings.reference_output is None:
        raise Unprocessable(
            "This broker takes no transfers by reference: its operator has set no Dask cluster "
            "(BROKER_DASK_SCHEDULER) and output location (BROKER_REFERENCE_OUTPUT); upload the "
            "file instead"
        )
    location = location.strip()
    _check_spelling(location)
    root = _granted_root(location, source_id, settings)
    relative = location[len(root) :]
    suffix = PurePosixPath(relative).suffix.lower()
    if suffix not in _FORMATS:
        raise Unprocessable(
            f"Cannot tell the format of {location!r}: name .parquet or .csv files (a glob such "
            "as .../*.parquet for several)"
        )
    try:
        listing = pinned_files.resolve(
            root, relative, settings.reference_max_files, settings.max_decoded_bytes
        )
    except pinned_files.Refused as refused:
        raise _refusal(location, refused) from None
    except OSError as error:  # the granted folder itself
        raise InvalidDataset(f"Cannot list {location!r}: {error.strerror}") from None
    files = listing.files
    if not files:
        raise InvalidDataset(f"No file at {location!r}")
    pins = [[f.path, f.size, f.inode, f.mtime_ns, f.ctime_ns] for f in files]
    return Reference(
        location,
        _FORMATS[suffix],
        root,
        listing.root_inode,
        tuple(files),
        sha256_of({"location": location, "files": pins}),
        sum(f.size for f in files),
    )


def _check_spelling(location: str) -> None:
    """A location is an absolute path, each folder named once: no URL (a chained one, ``::``,
    reads through other filesystems), no ``.``, ``..`` or empty segment, no control character."""
    if "::" in location:
        raise Unprocessable(
            f"{location!r} chains filesystems ('::'): name a path on the federation's storage"
        )
    if _SCHEME.match(location):
        raise Unprocessable(
            f"{location!r} is a URL: this broker reads references on the federation's shared "
            "file storage only (object stores are not supported); name its absolute path"
        )
    if not location.startswith("/"):
        raise Unprocessable(f"{location!r} is not an absolute path: name it from '/'")
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in location):
        raise Unprocessable("The location holds control characters: name a path")
    segments = location[1:].split("/")
    if any(s in ("", ".", "..") for s in segments):
        raise Unprocessable(
            f"{location!r} has a '.', '..' or empty segment: name each folder once, from the "
            "granted folder down"
        )
    if any(s == "**" for s in segments):
        raise Unprocessable(f"{location!r}: '**' (any depth) is not taken; name each level")


def _roots(source_id: str, settings: Settings) -> list[str]:
    return [root.rstrip("/") + "/" for root in settings.reference_roots.get(source_id, [])]


def _granted_root(location: str, source_id: str, settings: Settings) -> str:
    """The granted folder ``location`` lies under, compared as text: case, look-alike letters
    and invisible characters make another path, which is not granted."""
    roots = _roots(source_id, settings)
    for root in roots:
        if location.startswith(root):
            return root
    raise Forbidden(
        f"Member {source_id!r} may name locations under its granted prefixes only "
        f"({', '.join(roots) or 'none'}), not {location!r}"
    )


def _refusal(location: str, refused: pinned_files.Refused) -> Exception:
    detail = f"Cannot take {location!r}: {refused}"
    if refused.kind in ("link", "hard-link", "mount"):
        return Forbidden(detail)
    if refused.kind == "too-many":
        return PayloadTooLarge(detail + "; name fewer, larger files")
    if refused.kind == "too-large":
        return PayloadTooLarge(detail + "; split it into several files")
    return InvalidDataset(detail)


# --- reading the pinned files, on the cluster ------------------------------------------------


@dataclass(frozen=True)
class _Reader:
    """Reads one pinned file into its canonical table, on a worker; sent with every task."""

    root: str
    root_inode: int
    data_format: str
    limits: ReadLimits
    deadline: Deadline | None

    def frame(self, file: Pinned, sha256: str | None) -> tuple[pd.DataFrame, str, tuple]:
        """The file's canonical table, the SHA-256 of its bytes and the reader's notes."""
        if self.deadline is not None:
            self.deadline.check()
        try:
            data = pinned_files.read(self.root, self.root_inode, file, sha256)
        except pinned_files.Changed as changed:
            raise Conflict(
                f"The data named by this transfer changed after it was accepted: {changed}; "
                "nothing more was read from it. Send the transfer again"
            ) from None
        label = self.root + file.path
        try:
            dataset = read_dataset(data, label, self.data_format, self.limits)
        except DatasetTooLarge as error:
            raise PayloadTooLarge(str(error)) from None
        except DatasetError as error:
            raise InvalidDataset(str(error)) from None
        return dataset.frame, sha256 or hashlib.sha256(data).hexdigest(), dataset.notes

    def first(self, file: Pinned) -> tuple[pd.DataFrame, str, tuple]:
        """The first read: the file's empty frame (columns and types), digest and notes."""
        frame, sha256, notes = self.frame(file, None)
        return frame.iloc[:0], sha256, notes

    def partition(self, piece: tuple[Pinned, str]) -> pd.DataFrame:
        """Every later read: the file must hold the bytes of the first."""
        return self.frame(*piece)[0]


def open_reference(
    reference: Reference,
    source_id: str,
    quasi_identifiers: tuple[str, ...],
    sensitive: tuple[str, ...],
    person_key: str | None,
    settings: Settings,
    deadline: Deadline | None = None,
) -> Table:
    """The referenced files as one table on the cluster, each file a partition.

    The grant is checked again (it may have been withdrawn since the request); a first pass
    reads every file through the canonical reader (its rules, its limits per file) and records
    its SHA-256; every later pass reads the same bytes or fails the job (409).
    """
    if reference.root not in _roots(source_id, settings):
        raise Forbidden(
            f"{reference.location!r} is no longer under a folder granted to {source_id!r}"
        )
    from broker.engines.dask import compute_each, from_partitions

    limits = read_limits(settings)
    reader = _Reader(reference.root, reference.root_inode, reference.data_format, limits, deadline)
    firsts = compute_each(reader.first, reference.files)
    meta, _sha256, _notes = firsts[0]
    for file, (frame, _sha256, _notes) in zip(reference.files, firsts, strict=True):
        if list(frame.columns) != list(meta.columns) or list(frame.dtypes) != list(meta.dtypes):
            raise InvalidDataset(
                f"{reference.root}{file.path} does not have the columns (names, order and "
                f"types) of {reference.root}{reference.files[0].path}: every file a location "
                "names is a part of one table"
            )
    notes = tuple(dict.fromkeys(note for _f, _s, file_notes in firsts for note in file_notes))
    roles = declare_roles(list(meta.columns), quasi_identifiers, sensitive, person_key)
    pieces = [(file, first[1]) for file, first in zip(reference.files, firsts, strict=True)]
    engine = from_partitions(reader.partition, pieces, meta, roles.person_key)
    _check_distinct(engine, settings.out_of_core_max_distinct)
    return ReferenceTable(engine, roles, REFERENCE, len(meta.columns), notes)


def _check_distinct(engine, bound: int) -> None:
    """A column's dictionary comes back to the broker's memory: one over the bound of tables
    counted out of core is refused as there (an all-but-unique column is an identifier)."""
    for name, distinct in engine.distinct_estimates().items():
        if distinct > bound:
            raise PayloadTooLarge(
                f"Column {name!r} has about {distinct:,.0f} distinct values, more than the "
                f"{bound:,} this broker measures (BROKER_OUT_OF_CORE_MAX_DISTINCT): a column "
                "that nearly every row holds a value of its own is an identifier; drop it, or "
                "generalize it, and send the data again"
            )


class ReferenceTable(Table):
    """A table that stays on the cluster's storage: what leaves is written there, and the
    delivery is a document saying where."""

    @property
    def media_type(self) -> str:
        return MEDIA_TYPE

    def write(self, engine: Engine, name: str, settings: Settings) -> Written:
        from broker.engines.dask import write

        location = f"{settings.reference_output.rstrip('/')}/{name.removesuffix('.json')}"
        files = write(engine, location)
        document = {"location": location, "format": "parquet", "rows": engine.rows}
        return Written.of_bytes(json.dumps(document | {"files": files}, indent=2).encode())

"""An upload opened for measuring: in memory when small, out of core when large.

:func:`open_upload` reads the spooled copy (:mod:`broker.intake.uploads`) into the engine that suits
its size, with the declared roles checked against its columns, and every bound on what it may
cost checked before its values reach the broker's memory. :class:`Table` also knows how to write
a table like it again, which is what leaves (:class:`Written`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from broker.columns.roles import RoleError, Roles
from broker.config import Settings
from broker.datasets import (
    CSV,
    MEDIA_TYPES,
    Dataset,
    DatasetError,
    DatasetTooLarge,
    ReadLimits,
    detect_format,
    read_dataset,
)
from broker.datasets.csv_reader import FILE_HEAD_BYTES, csv_file_header
from broker.datasets.limits import check_cell_length
from broker.engines.base import Engine
from broker.engines.pandas import PandasEngine
from broker.errors import InvalidDataset, PayloadTooLarge, UnknownColumn, storage_faults
from broker.intake.uploads import CHUNK, Upload


def read_limits(settings: Settings) -> ReadLimits:
    return ReadLimits(
        max_columns=settings.max_columns,
        max_cells=settings.max_cells,
        max_decoded_bytes=settings.max_decoded_bytes,
        max_row_groups=settings.max_row_groups,
        max_cell_chars=settings.max_cell_chars,
    )


def read_upload(upload: Upload, settings: Settings) -> Dataset:
    try:
        return read_dataset(upload.read_bytes(), upload.filename, limits=read_limits(settings))
    except DatasetTooLarge as error:
        raise PayloadTooLarge(str(error)) from None
    except DatasetError as error:
        raise InvalidDataset(str(error)) from None


def declare_roles(
    columns: Sequence[str],
    quasi_identifiers: tuple[str, ...],
    sensitive: tuple[str, ...],
    person_key: str | None = None,
) -> Roles:
    try:
        return Roles.declare(list(columns), quasi_identifiers, sensitive, person_key)
    except RoleError as error:
        raise UnknownColumn(str(error)) from None


# --- opening an upload for measuring: in memory, or out of core -----------------------------


@dataclass(frozen=True)
class Written:
    """What will leave: the bytes (in memory) or the file (out of core), and their digest."""

    sha256: str
    size: int
    data: bytes | None = None
    path: Path | None = None

    @classmethod
    def of_bytes(cls, data: bytes) -> Written:
        return cls(hashlib.sha256(data).hexdigest(), len(data), data=data)

    def content(self) -> bytes | Iterator[bytes]:
        """The bytes, or the file in chunks (to post it without reading it whole)."""
        if self.data is not None:
            return self.data
        return self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        with self.path.open("rb") as file:
            while chunk := file.read(CHUNK):
                yield chunk


@dataclass(frozen=True, eq=False)
class Table:
    """An upload opened for measuring: its engine (the person key apart), the declared roles,
    and how to write a table like it again (its format; in memory, the canonical table)."""

    engine: Engine
    roles: Roles
    format: str
    columns: int  # as uploaded, the person key included
    notes: tuple[str, ...] = ()
    dataset: Dataset | None = None  # in memory only

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]

    def write(self, engine: Engine, name: str, settings: Settings) -> Written:
        """``engine``'s rows, shuffled, in this table's format: bytes in memory, else a file
        in the spool folder written by the out-of-core engine and hashed in chunks. A full disk
        is :class:`~broker.errors.InsufficientStorage`, and leaves no part of the file."""
        if self.dataset is not None:
            return Written.of_bytes(engine.write(self.dataset, shuffle=True))
        from broker.engines.duckdb import write  # the optional extra, present out of core

        folder = settings.spool_dir / "deliveries"
        path = folder / name
        # The count tables the decision kept would stay in memory under the sort that shuffles
        # the rows: what is asked after the write is counted again. (An engine the writer
        # refuses has none to let go of: it answers with its TypeError below.)
        for kept in (engine, self.engine):
            forget = getattr(kept, "forget_counts", None)
            if forget is not None:
                forget()
        with storage_faults("the data that leaves, in the spool folder"):
            try:
                folder.mkdir(parents=True, exist_ok=True)
                write(engine, path, self.format, shuffle=True)
                digest = hashlib.sha256()
                with path.open("rb") as file:
                    while chunk := file.read(CHUNK):
                        digest.update(chunk)
                size = path.stat().st_size
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        return Written(digest.hexdigest(), size, path=path)


def open_upload(
    upload: Upload,
    settings: Settings,
    quasi_identifiers: tuple[str, ...],
    sensitive: tuple[str, ...],
    person_key: str | None,
) -> Table:
    """The upload as a table to measure: in memory up to ``settings.in_memory_max_bytes``,
    beyond that counted out of core by DuckDB (CSV only), memory bounded by
    ``settings.duckdb_memory_limit`` whatever the file's size."""
    if upload.size <= settings.in_memory_max_bytes:
        return _in_memory(upload, settings, quasi_identifiers, sensitive, person_key)
    return _out_of_core(upload, settings, quasi_identifiers, sensitive, person_key)


def _in_memory(upload, settings, quasi_identifiers, sensitive, person_key) -> Table:
    dataset = read_upload(upload, settings)
    roles = declare_roles(dataset.frame.columns, quasi_identifiers, sensitive, person_key)
    frame, key = dataset.frame, None
    if roles.person_key is not None:  # measured, never delivered
        frame, key = frame.drop(columns=[roles.person_key]), frame[roles.person_key]
    engine = PandasEngine(frame, person_key=key)  # one coding for the people and the report
    return Table(engine, roles, dataset.format, len(dataset.frame.columns), dataset.notes, dataset)


def _out_of_core(upload, settings, quasi_identifiers, sensitive, person_key) -> Table:
    label = "The dataset"
    bound = f"{settings.in_memory_max_bytes / 2**20:,.0f} MiB"
    with upload.path.open("rb") as file:
        head = file.read(FILE_HEAD_BYTES)
    try:
        data_format = detect_format(upload.filename, head[:16])
    except DatasetError as error:
        raise InvalidDataset(str(error)) from None
    if data_format != CSV:
        raise PayloadTooLarge(
            f"{data_format.upper()} uploads are read in memory, up to {bound}; this one is "
            f"{upload.size / 2**20:,.0f} MiB: send a dataset this large as CSV, which the broker "
            "counts out of core"
        )
    from broker.engines.duckdb import DuckDBEngine

    try:
        delimiter, header = csv_file_header(head, label, read_limits(settings))
        roles = declare_roles(header, quasi_identifiers, sensitive, person_key)
        engine = DuckDBEngine.from_csv(
            upload.path,
            header,
            delimiter,
            roles.person_key,
            settings.duckdb_memory_limit,
            max_tuples=settings.out_of_core_max_distinct,
        )
        profile = engine.profile()
        for name, longest in profile.longest.items():
            check_cell_length(name, longest, label, read_limits(settings))
        _check_distinct(profile, settings.out_of_core_max_distinct)
    except DatasetTooLarge as error:
        raise PayloadTooLarge(str(error)) from None
    except DatasetError as error:
        raise InvalidDataset(str(error)) from None
    return Table(engine, roles, CSV, len(header))


def _check_distinct(profile, bound: int) -> None:
    """Out of core, a table costs memory by its distinct values, not its rows: each column's
    dictionary comes back to Python. A column over the bound is all but unique, so an
    identifier. (The distinct tuples of the measured attributes, which come back too, are
    bounded where they are counted: :func:`counting_limits`.)"""
    for name, distinct in profile.distinct.items():
        if distinct > bound:
            raise PayloadTooLarge(
                f"Column {name!r} has {distinct:,} distinct values, more than the "
                f"{bound:,} this broker measures (BROKER_OUT_OF_CORE_MAX_DISTINCT): a column "
                "that nearly every row holds a value of its own is an identifier; drop it, or "
                "generalize it, and send the data again"
            )


@contextmanager
def counting_limits() -> Iterator[None]:
    """Measuring a table out of core meets the bound on its distinct tuples (the engine counts
    them before they reach the broker's memory): a 413 like the other bounds."""
    try:
        yield
    except DatasetTooLarge as error:
        raise PayloadTooLarge(str(error)) from None

"""Opening a table in DuckDB: the connection, its memory limit and spill folder, the readers
of the source, and DuckDB's errors said as the broker says them.

CSV is read as the canonical reader reads it (:mod:`broker.datasets.csv_reader`): every value is
text as written, an empty field is the empty string, never missing. Every query runs through
:class:`Connection`, which translates what DuckDB raises:

- a full disk, where the engine spills or writes, is the ``OSError`` it is (``ENOSPC``), never a
  malformed dataset or too little memory: the broker answers it 507, to be tried again
  (:func:`disk_full`);
- a query reading the source that needs more than the memory limit is :class:`OutOfMemory`
  (a :class:`~broker.datasets.DatasetTooLarge` naming the setting to raise), and one meeting
  a malformed body (ragged rows, bad UTF-8, ...) a :class:`~broker.datasets.DatasetError`;
- a file it cannot write is an ``OSError``.

This is the one module of the broker that imports DuckDB.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from broker.datasets import CSV, DatasetError, DatasetTooLarge, ReadLimits, detect_format
from broker.datasets.csv_reader import FILE_HEAD_BYTES, csv_file_header
from broker.engines.duckdb.sql import KEY, ROW, literal, quote

DEFAULT_MEMORY_LIMIT = "1GB"


class OutOfMemory(DatasetTooLarge):
    """DuckDB needed more memory than its limit for a query over the table."""


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_ERRNO = re.compile(r'"errno"\s*:\s*"?(\d+)')


def disk_full(error: BaseException) -> OSError | None:
    """The ``OSError`` a DuckDB error stands for when it is a full disk, else None: a file it
    could not write (an IO error carrying ``ENOSPC``, ``EDQUOT`` or ``EFBIG``), or blocks it
    could not spill (its temporary folder may grow to the free space of its disk, which the
    broker never bounds lower, so a spill that finds no room is a full disk)."""
    message = str(error)
    first = message.splitlines()[0] if message else type(error).__name__
    if isinstance(error, duckdb.IOException):
        found = _ERRNO.search(message)
        number = int(found.group(1)) if found else None
        if number is None:  # an error of the kind DuckDB words without its number
            texts = {os.strerror(n): n for n in _DISK_FULL}
            number = next((n for text, n in texts.items() if text in message), None)
        if number in _DISK_FULL:
            return OSError(number, f"{os.strerror(number)}: {_unwrapped(first)}")
    if isinstance(error, duckdb.OutOfMemoryException) and "offload" in message:
        return OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: {first}")
    return None


def _unwrapped(line: str) -> str:
    """DuckDB's message inside the JSON it wraps some IO errors in."""
    start = line.find("{")
    try:
        return json.loads(line[start:])["exception_message"]
    except (ValueError, KeyError, TypeError):
        return line


class Connection:
    """A DuckDB connection whose queries report a full disk as an ``OSError``
    (:func:`disk_full`): every query of the engine runs through it."""

    def __init__(self, connection: duckdb.DuckDBPyConnection):
        self._connection = connection

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        try:
            return self._connection.sql(query)
        except duckdb.InterruptException:  # Ctrl-C reached DuckDB: an interrupt, not an error
            raise KeyboardInterrupt from None
        except duckdb.Error as error:
            raise disk_full(error) or error from None

    def execute(self, query: str) -> duckdb.DuckDBPyConnection:
        try:
            return self._connection.execute(query)
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as error:
            raise disk_full(error) or error from None

    def register(self, name: str, frame: pd.DataFrame) -> None:
        self._connection.register(name, frame)

    def close(self) -> None:
        self._connection.close()

    def read(self, query: str) -> None:
        """Run a query that reads the source: a malformed body (ragged rows, bad UTF-8, ...)
        is a :class:`~broker.datasets.DatasetError`, one needing more than the memory limit
        :class:`OutOfMemory`."""
        try:
            self.sql(query)
        except duckdb.OutOfMemoryException as error:
            raise OutOfMemory(
                f"{str(error).splitlines()[0]}: the table needs more than the out-of-core "
                f"engine's memory limit ({self.memory_limit()}); raise it "
                "(BROKER_DUCKDB_MEMORY_LIMIT, or --memory-limit)"
            ) from None
        except duckdb.Error as error:
            raise DatasetError(str(error).splitlines()[0]) from None

    def frame(self, query: str) -> pd.DataFrame:
        """A query's result as a frame: a malformed body it reads is a
        :class:`~broker.datasets.DatasetError`."""
        try:
            return self.execute(query).df()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as error:
            raise DatasetError(str(error).splitlines()[0]) from None

    def write(self, query: str) -> None:
        """Run a ``COPY ... TO`` a file: a file it cannot write (a folder that does not exist,
        no permission, a full disk) is an ``OSError``."""
        try:
            self.sql(query)
        except duckdb.IOException as error:  # a folder that does not exist, no permission, ...
            raise OSError(str(error).splitlines()[0]) from None

    def memory_limit(self) -> str:
        return str(self.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def connect(memory_limit: str = DEFAULT_MEMORY_LIMIT) -> tuple[Connection, object]:
    """A connection in memory that spills past ``memory_limit`` to a temporary folder of its
    own, and that folder (removed when it is collected). A limit DuckDB does not understand is
    a ``ValueError``."""
    folder = tempfile.TemporaryDirectory(prefix="fedbroker-duckdb-")
    con = Connection(duckdb.connect())  # in memory, spilling to temp_directory past the limit
    try:
        con.sql(f"SET memory_limit = {literal(memory_limit)}")
    except duckdb.Error as error:
        con.close()
        folder.cleanup()
        message = str(error).splitlines()[0].split(": ", 1)[-1]
        raise ValueError(f"memory limit {memory_limit!r}: {message}") from None
    con.sql(f"SET temp_directory = {literal(folder.name)}")
    # Give freed memory back after each query (by default DuckDB's allocator keeps up to
    # 128 MiB, and 512 MiB of a bulk free): the broker's own arrays come next.
    con.sql("SET allocator_flush_threshold = '16MB'")
    con.sql("SET allocator_bulk_deallocation_flush_threshold = '16MB'")
    # What the allocator keeps past those thresholds (a pass's hash tables: a few hundred MiB of
    # a million-tuple file) it gives back by itself within about a second, instead of holding
    # it under the arrays the broker builds from the counts next. (A process-wide setting.)
    con.sql("SET allocator_background_threads = true")
    # Row order does not matter (counts do not see it, and what leaves is shuffled), and not
    # keeping it lets DuckDB stream under a lower memory limit.
    con.sql("SET preserve_insertion_order = false")
    return con, folder


def csv_header(path: Path, person_key: str | None) -> tuple[list[str], str]:
    """The header and delimiter of a CSV file, checked as the canonical reader checks them
    (:class:`~broker.datasets.DatasetError` otherwise, and for a file that is not CSV or a
    person key that is not a column)."""
    try:
        with path.open("rb") as file:
            head = file.read(FILE_HEAD_BYTES)
    except OSError as error:
        raise DatasetError(f"{path}: {error.strerror or error}") from None
    if detect_format(path.name, head[:16]) != CSV:
        raise DatasetError(f"{path}: the duckdb engine reads CSV files; use the pandas engine")
    delimiter, header = csv_file_header(head, str(path), ReadLimits())
    if person_key is not None and person_key not in header:
        raise DatasetError(f"Person key {person_key!r} is not a column of {path}")
    return header, delimiter


def csv_reader(path: str | Path, header: Sequence[str], delimiter: str) -> str:
    """SQL reading a CSV file as the canonical reader does: every value text as written, an
    empty field the empty string."""
    types = ", ".join(f"{literal(name)}: 'VARCHAR'" for name in header)
    not_null = ", ".join(literal(name) for name in header)
    return (
        f"read_csv({literal(str(path))}, auto_detect=false, header=true, "
        f"delim={literal(delimiter)}, quote='\"', escape='\"', columns={{{types}}}, "
        f"force_not_null=[{not_null}])"
    )


def parquet_reader(path: str | Path) -> str:
    return f"read_parquet({literal(str(path))})"


def source_of(reader: str, columns: Sequence[str], person_key: str | None) -> str:
    """SQL of the rows ``reader`` reads as the engine reads them: the measured columns, the
    person key (:data:`~broker.engines.duckdb.sql.KEY`) and each row's hash
    (:data:`~broker.engines.duckdb.sql.ROW`)."""
    names = ", ".join(quote(c) for c in columns)
    key = f", {quote(person_key)} AS {KEY}" if person_key else ""
    return f"(SELECT {names}{key}, hash({names}) AS {ROW} FROM {reader})"

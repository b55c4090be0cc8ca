"""The rows that repeat: the row hashes held by more than one row, found by sorting the hashes.

People and duplicate rows need the row hashes (:data:`~broker.engines.duckdb.sql.ROW`) that more
than one row holds, each with the hash of its union tuple. Grouped in SQL, every row hash is a
key of one hash table, nearly all of them held once: a table as large as the rows, which spills
past the memory limit (at 12.6M Adult-like rows, a third to a half of the pass). Instead the
hashes are read into an array and sorted, and only the rows holding a repeated one are grouped
in SQL, with their union tuple's hash (:func:`repeated_rows`): one more read of the rows, none
when no row repeats.

Memory: eight bytes a row, streamed into one array (no copy of the result beside it); past
:data:`PART_ROWS` rows, the hashes are written, as they stream, to one file a part of the
engine's temporary folder (split by their top bits), and each part is sorted in turn.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from broker.engines.duckdb.sql import NAMES, ROW, UNION, literal, quote

if TYPE_CHECKING:
    from broker.engines.duckdb.opening import Connection

PART_ROWS = 1 << 24  # row hashes sorted at a time (128 MiB)
BATCH_ROWS = 1 << 20  # row hashes streamed at a time


def repeated_hashes(con: Connection, source: str, rows: int, folder: str) -> np.ndarray:
    """The row hashes of ``source`` (its :data:`~broker.engines.duckdb.sql.ROW` column, over
    ``rows`` rows) held by more than one row, ascending; past :data:`PART_ROWS` rows, written
    to ``folder`` in parts while they are read.

    >>> import tempfile
    >>> from broker.engines.duckdb.opening import connect
    >>> con, _ = connect()
    >>> rows = "(SELECT * FROM (VALUES (5::UBIGINT), (3), (5), (9), (9), (9)) t(__fedbroker_row))"
    >>> repeated_hashes(con, rows, 6, tempfile.gettempdir())
    array([5, 9], dtype=uint64)
    """
    bits = max(math.ceil(math.log2(max(rows, 1) / PART_ROWS)), 0)
    batches = con.batches(f"SELECT {ROW} FROM {source}", BATCH_ROWS)
    if not bits:
        hashes = np.empty(rows, dtype=np.uint64)
        read = 0
        for batch in batches:
            hashes[read : read + batch.size] = batch
            read += batch.size
        if read != rows:
            raise ValueError(f"{read:,} row hashes were read for {rows:,} rows")
        return _repeated(hashes)
    paths = [Path(folder) / f"hashes_{next(NAMES)}.bin" for _ in range(1 << bits)]
    try:
        with contextlib.ExitStack() as files:
            opened = [files.enter_context(path.open("wb")) for path in paths]
            for batch in batches:
                part = batch >> np.uint64(64 - bits)
                for number, file in enumerate(opened):
                    batch[part == number].tofile(file)
        return np.concatenate([_repeated(np.fromfile(path, dtype=np.uint64)) for path in paths])
    finally:
        for path in paths:
            path.unlink(missing_ok=True)


def _repeated(hashes: np.ndarray) -> np.ndarray:
    """The values ``hashes`` holds more than once, ascending (``hashes`` is sorted in place)."""
    hashes.sort()
    again = hashes[1:][hashes[1:] == hashes[:-1]]  # a hash held by n rows is here n - 1 times
    return np.unique(again)


def repeated_rows(
    con: Connection, source: str, rows: int, union: Sequence[str], folder: str
) -> str:
    """SQL of the repeated rows of ``source``: each row hash held by more than one row with its
    union tuple's hash (:data:`~broker.engines.duckdb.sql.UNION`, the hash of the ``union``
    columns, when there are any) and its rows ``__fedbroker_n``, from a Parquet file in
    ``folder``; as when they are grouped in one hash table, a row hash held by rows of two
    union tuples is two entries, each kept only if it repeats."""
    hashes = repeated_hashes(con, source, rows, folder)
    union_hash = f", hash({', '.join(map(quote, union))}) AS {UNION}" if union else ""
    if not hashes.size:  # no row repeats: no second read
        union_hash = f", NULL::UBIGINT AS {UNION}" if union else ""
        return f"(SELECT NULL::UBIGINT AS {ROW}{union_hash}, 0::BIGINT AS __fedbroker_n LIMIT 0)"
    alias = f"__fedbroker_repeated_{next(NAMES)}"
    path = Path(folder) / f"{alias}.parquet"
    con.register(alias, pd.DataFrame({"h": hashes}))
    try:
        con.read(
            f"COPY (SELECT {ROW}{union_hash}, count(*) AS __fedbroker_n FROM {source} "
            f"WHERE {ROW} IN (SELECT h FROM {alias}) GROUP BY ALL HAVING count(*) > 1) "
            f"TO {literal(str(path))} (FORMAT parquet)"
        )
    finally:
        con.unregister(alias)
    return f"read_parquet({literal(str(path))})"

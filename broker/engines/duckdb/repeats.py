"""The rows that repeat: the row hashes held by more than one row, found by sorting the hashes.

People and duplicate rows need the row hashes (:data:`~broker.engines.duckdb.sql.ROW`) that more
than one row holds, each with the hash of its union tuple. Grouped in SQL, every row hash is a
key of one hash table, nearly all of them held once: a table as large as the rows, which spills
past the memory limit (at 12.6M Adult-like rows it took half the pass). Instead the hashes are
read into an array and sorted, and only the rows holding a repeated one are grouped in SQL, with
their union tuple's hash (:func:`repeated_rows`): one more read of the rows, none when no row
repeats.

Memory: eight bytes a row while a part is sorted (twice that while it is read), in parts of at
most :data:`PART_ROWS` rows, split by the hashes' top bits (each part one more read of the rows).
"""

from __future__ import annotations

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


def repeated_hashes(con: Connection, source: str, rows: int) -> np.ndarray:
    """The row hashes of ``source`` (its :data:`~broker.engines.duckdb.sql.ROW` column, over
    ``rows`` rows) held by more than one row, ascending.

    >>> from broker.engines.duckdb.opening import connect
    >>> con, _ = connect()
    >>> rows = "(SELECT * FROM (VALUES (5::UBIGINT), (3), (5), (9), (9), (9)) t(__fedbroker_row))"
    >>> repeated_hashes(con, rows, 6)
    array([5, 9], dtype=uint64)
    """
    bits = max(math.ceil(math.log2(max(rows, 1) / PART_ROWS)), 0)
    found = []
    for part in range(1 << bits):
        where = f" WHERE ({ROW} >> {64 - bits}) = {part}" if bits else ""
        hashes = con.execute(f"SELECT {ROW} FROM {source}{where}").fetchnumpy()[ROW]
        hashes = np.asarray(hashes, dtype=np.uint64)
        hashes.sort()
        again = hashes[1:][hashes[1:] == hashes[:-1]]
        found.append(np.unique(again))  # a hash held by n rows appears n - 1 times
    return np.concatenate(found)


def repeated_rows(
    con: Connection, source: str, rows: int, union: Sequence[str], folder: str
) -> str:
    """SQL of the repeated rows of ``source``: each row hash held by more than one row with its
    union tuple's hash (:data:`~broker.engines.duckdb.sql.UNION`, the hash of the ``union``
    columns, when there are any) and its rows ``__fedbroker_n``, from a Parquet file in
    ``folder``; as when they are grouped in one hash table, a row hash held by rows of two
    union tuples is two entries, each kept only if it repeats."""
    hashes = repeated_hashes(con, source, rows)
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

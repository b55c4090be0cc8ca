"""Writing a table out of core: the rows stream from the source to a file, never through Python."""

from __future__ import annotations

from pathlib import Path

from broker.engines.base import RecodePlan
from broker.engines.duckdb.engine import DuckDBEngine
from broker.engines.duckdb.sql import literal, quote
from broker.engines.recoded import Recoded

_COPY_FORMATS = {"csv": "FORMAT csv, HEADER true, DELIMITER ','", "parquet": "FORMAT parquet"}


def write(engine: DuckDBEngine | Recoded, path: str | Path, fmt: str, shuffle: bool = True) -> None:
    """Write the table ``engine`` holds (its columns, in order) to ``path`` as ``fmt`` ("csv",
    comma-delimited with a header, or "parquet"), by DuckDB's ``COPY``: the rows stream from
    its source (or its copy) to the file, a recode plan applied on the way, spilling to disk
    under the memory limit, never through Python.

    ``shuffle`` writes them in a fresh random order (an out-of-core sort on ``random()``), so
    that two releases of one table cannot be lined up by position. A file it cannot write is
    an ``OSError`` (``ENOSPC`` when the disk is full), and is not left half written.
    """
    if fmt not in _COPY_FORMATS:
        raise ValueError(f"The duckdb engine writes {sorted(_COPY_FORMATS)}, not {fmt!r}")
    source, plan = engine, RecodePlan()
    if isinstance(engine, Recoded):
        source, plan = engine.source, engine.recode_plan
    if not isinstance(source, DuckDBEngine):
        raise TypeError(f"The duckdb engine writes its own tables, not {type(source).__name__}")
    # Shuffled, the text is sorted as ENUMs (one small integer a value, not the string: a
    # fraction of the sort's memory) and written as the text it is.
    selected, joins, enums = source._relabelled(plan, as_enums=shuffle)
    rows = source._table or source._source
    query = f"SELECT {selected} FROM {rows} t {joins}"
    if shuffle:
        query += " ORDER BY random()"
    if enums:
        texts = ", ".join(f"CAST({quote(c)} AS VARCHAR) AS {quote(c)}" for c in enums)
        query = f"SELECT * REPLACE ({texts}) FROM ({query})"
    try:
        source._con.write(f"COPY ({query}) TO {literal(str(path))} ({_COPY_FORMATS[fmt]})")
    except OSError:  # no folder, no permission, a full disk (:class:`.opening.Connection`)
        Path(path).unlink(missing_ok=True)
        raise

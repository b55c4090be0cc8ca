"""The DuckDB engine: count tables of a file larger than memory, counted out of core.

One idea a module:

- :mod:`~broker.engines.duckdb.opening`: the connection, reading the CSV into DuckDB, the memory
  limit, and DuckDB's errors translated (a full disk is the ``OSError`` it is, never a malformed
  dataset or too little memory: the broker answers it 507, to be tried again);
- :mod:`~broker.engines.duckdb.passes`: the planned pass, the one scan that counts the column
  sets a report announces, with no copy of the rows;
- :mod:`~broker.engines.duckdb.copied`: the copy of the rows, made on first need for what no
  plan counted, and recoding;
- :mod:`~broker.engines.duckdb.coded`: the columns the combination search names, read as codes
  into memory and counted there (no copy of the rows);
- :mod:`~broker.engines.duckdb.writing`: a table written out, streaming, never through Python;
- :mod:`~broker.engines.duckdb.engine`: :class:`DuckDBEngine`, the Engine protocol over them
  (dictionaries, people, which pass answers what);
- :mod:`~broker.engines.duckdb.sql`: quoting, and the names the engine adds to the rows.

Memory follows the number of distinct tuples, not the size of the file. Each row is read with
a 64-bit hash of the whole row beside its columns. Identical rows are one person, by that hash:
two different rows with the same hash would count as one person, fewer people, never more, so a
collision can only make a decision stricter.

DuckDB is part of every install; only this package imports it (its ``opening`` module).
"""

from broker.engines.duckdb.engine import DuckDBEngine, ValueProfile
from broker.engines.duckdb.opening import DEFAULT_MEMORY_LIMIT, OutOfMemory, disk_full
from broker.engines.duckdb.writing import write

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "DuckDBEngine",
    "OutOfMemory",
    "ValueProfile",
    "disk_full",
    "write",
]

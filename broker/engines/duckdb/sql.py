"""The SQL the DuckDB engine writes: quoting, and the names it adds beside a table's columns.

Every query of the engine is text built here and there from column names a sender chose: they
reach SQL only through :func:`quote` (an identifier) or :func:`literal` (a string), never as
written. The columns the engine adds to each row (its hash, its person key, its union tuple's
hash) and the tables it creates on its connection carry names no CSV header is expected to
hold (``__fedbroker_...``).
"""

from __future__ import annotations

import itertools

NAMES = itertools.count()  # unique names for the tables an engine creates on its connection
ROW = "__fedbroker_row"
KEY = "__fedbroker_key"
UNION = "__fedbroker_union"  # the hash of a row's tuple of the planned union


def quote(name: str) -> str:
    """``name`` as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def literal(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"

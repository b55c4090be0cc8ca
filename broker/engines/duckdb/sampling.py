"""Distinct tuples chosen at random without counting them all: what the split-identifier
reading needs of a column set (a few hundred of its distinct tuples), where counting every
tuple of a set with a near-unique column costs as much as the table.

Each distinct tuple gets a key, the hash of its values mixed with a secret drawn from the
operating system for each set (DuckDB's ``hash`` of the tuple, combined with the secret and
hashed again), and the ``size`` tuples with the smallest keys are the sample: every distinct
tuple is as likely to be chosen, whatever its number of rows, and a sender who does not know the
secret cannot tell which will be (a bottom-k sample, Cohen and Kaplan 2007). The tuples are read
once from the source (or from the engine's copy of the rows, or from the Parquet file a CSV
source is parsed into), only the columns the sets use.

Only the tuples whose key falls under a threshold are grouped, so that a set of millions of
tuples is not held in a hash table: the threshold keeps, in expectation, four times ``size``
tuples of a set with the geometric mean of the fewest (its largest column's values) and the most
(its rows, or the product of its columns' values) distinct tuples it can have, and never more
than 256 times ``size`` of the most. When fewer than ``size`` fall under it, the threshold is
raised 64-fold and the set read again, up to the whole set: the smallest keys under a threshold
are the smallest of all as soon as there are ``size`` of them. So no read groups more than
about 256 times ``size`` tuples, whatever the set.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from broker.columns.roles import require_columns
from broker.engines.duckdb.sql import NAMES, literal, quote

if TYPE_CHECKING:
    from broker.engines.duckdb.engine import DuckDBEngine

KEPT_PER_SAMPLED = 4  # tuples kept under the first threshold, in expectation, per one sampled
RAISED = 64  # how much the threshold grows when too few tuples fell under it
_KEYS = 2**64


def sample_tuples(
    engine: DuckDBEngine, column_sets: Sequence[Sequence[str]], sizes: Sequence[int]
) -> list[list[np.ndarray]]:
    """For each column set, the codes (column by column, in a random order) of its ``size``
    distinct tuples chosen at random, each as likely, or of all of them when there are no more.

    Read from the engine's copy of the rows when it has one (made before the samples when a
    search follows that reads it: not when the rows are in a Parquet file), else from the
    Parquet file a CSV source is parsed into once, else from the columns the sets use, read
    once from the source into a Parquet file of the engine's temporary folder (removed once the
    samples are taken)."""
    sets = [list(columns) for columns in column_sets]
    for columns, size in zip(sets, sizes, strict=True):
        require_columns(engine.columns, columns)
        if size <= 0 or not columns:
            raise ValueError("A sample needs at least one column and one tuple")
    if not sets:
        return []
    if engine._table is not None:
        return [
            _sample(engine, engine._table, c, n, True) for c, n in zip(sets, sizes, strict=True)
        ]
    source = engine._source  # a CSV file is parsed once, into a Parquet file, by now
    if engine._parsed:  # the values as read, already in a Parquet file: read from it
        return [_sample(engine, source, c, n, False) for c, n in zip(sets, sizes, strict=True)]
    used = [c for c in engine.columns if any(c in columns for columns in sets)]
    path = Path(engine._keep.name) / f"sampled_{next(NAMES)}.parquet"
    try:
        engine._con.read(
            f"COPY (SELECT {', '.join(map(quote, used))} FROM {source}) "
            f"TO {literal(str(path))} (FORMAT parquet)"
        )
        table = f"read_parquet({literal(str(path))})"
        return [_sample(engine, table, c, n, False) for c, n in zip(sets, sizes, strict=True)]
    finally:
        path.unlink(missing_ok=True)


def _sample(
    engine: DuckDBEngine, table: str, columns: list[str], size: int, typed: bool
) -> list[np.ndarray]:
    """One set's sample from ``table`` (the copy when ``typed``, else the values as read)."""
    widths = [engine._width(c) for c in columns]
    fewest = max(widths)
    most = min(engine.rows, math.prod(widths))
    share = min(
        KEPT_PER_SAMPLED * size / math.sqrt(fewest * max(most, fewest)),
        KEPT_PER_SAMPLED * RAISED * size / max(most, 1),
    )
    salt = secrets.randbits(64)
    names = ", ".join(quote(c) for c in columns)
    key = f"hash(xor(hash({names}), {salt}::UBIGINT))"
    codes, joins = [], []
    for position, column in enumerate(columns):
        code, join = engine._code(column, f"t.{quote(column)}", typed)
        codes.append(f"{code} AS k{position}")
        joins.append(join)
    while True:
        if share >= 1:  # every tuple: grouped first, then keyed
            chosen = (
                f"SELECT * FROM (SELECT {names} FROM {table} GROUP BY ALL) "
                f"ORDER BY {key} LIMIT {int(size)}"
            )
        else:
            chosen = (
                f"SELECT {names}, __fedbroker_h FROM (SELECT {names}, {key} AS __fedbroker_h "
                f"FROM {table}) WHERE __fedbroker_h < {int(share * _KEYS)}::UBIGINT "
                f"GROUP BY ALL ORDER BY __fedbroker_h LIMIT {int(size)}"
            )
        query = f"SELECT {', '.join(codes)} FROM ({chosen}) t {' '.join(joins)}"
        found = engine._con.execute(query).fetchnumpy()
        taken = len(found["k0"])
        if taken >= size or share >= 1:
            break
        share *= RAISED
    order = np.random.default_rng(secrets.randbits(64)).permutation(taken)
    return [np.asarray(found[f"k{i}"], dtype=np.int64)[order] for i in range(len(columns))]

"""The rows' columns as codes in memory: what the combination search counts, with no copy of
the rows.

The search asks the tuple sizes of column sets no pass counted (at 3M Adult-like rows, the
near-unique ``fnlwgt`` with each other column). Counted in SQL, each needed a copy of the rows
(every row read again, its text numbered as ENUMs) and a hash table of about as many tuples as
rows. Instead, each column the search names is read once from the Parquet file a CSV source is
parsed into (that column only), numbered by its dictionary (the codes of
:meth:`~broker.engines.duckdb.DuckDBEngine.dictionary`) into an array of the smallest unsigned
type holding them, in the file's row order (:func:`placed`); a set's sizes are then counted from
those arrays (:func:`tuple_sizes`): one mixed key a row, a ``bincount`` when the set's possible
tuples are few, else a sort and its runs. The same sizes as SQL's, ascending.

Memory: a byte or two a row for most columns (four for a near-unique one), and while a set is
counted, its key (eight bytes a row) and the positions where the sorted keys change.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

# Keys are mixed as ``key * width + code`` while they stay below this; past it, the tuples so far
# are renumbered densely first (three columns of two million values each, say).
MIXED_LIMIT = 1 << 62
# A set whose possible tuples are at most this many (or twice its rows) is counted with a
# ``bincount`` of its keys, one counter a possible tuple; others are sorted.
DENSE_LIMIT = 1 << 22


def code_type(width: int) -> np.dtype:
    """The smallest unsigned type holding the codes ``0 .. width - 1``.

    >>> code_type(256), code_type(257), code_type(456_016)
    (dtype('uint8'), dtype('uint16'), dtype('uint32'))
    """
    return np.min_scalar_type(max(width - 1, 0))


def placed(rows: int, positions: np.ndarray, codes: np.ndarray, width: int) -> np.ndarray:
    """A column's codes in row order, from the (row position, code) pairs a query returned in
    any order; every row must be there once (``ValueError`` otherwise: a code array with a hole
    would count wrong, never fail).

    >>> placed(3, np.array([2, 0, 1]), np.array([5, 7, 5]), 8)
    array([7, 5, 5], dtype=uint8)
    """
    if positions.size != rows:
        raise ValueError(f"{positions.size:,} codes were read for {rows:,} rows")
    found = np.zeros(rows, dtype=code_type(width))
    seen = np.zeros(rows, dtype=bool)
    found[positions] = codes
    seen[positions] = True
    if not seen.all():
        raise ValueError("a row was read twice and another not at all")
    return found


def tuple_sizes(codes: Sequence[np.ndarray], widths: Sequence[int]) -> np.ndarray:
    """The rows of each distinct tuple of the rows coded by ``codes`` (column ``i``'s codes,
    in row order, in ``[0, widths[i])``), ascending.

    >>> tuple_sizes([np.array([0, 1, 1, 0, 1]), np.array([2, 0, 0, 2, 1])], [2, 3])
    array([1, 2, 2])
    """
    if not codes:
        raise ValueError("At least one column is needed to count tuples")
    if not codes[0].size:
        return np.empty(0, dtype=np.int64)
    key = codes[0].astype(np.int64)
    space = max(int(widths[0]), 1)
    for column, width in zip(codes[1:], widths[1:], strict=True):
        width = max(int(width), 1)
        if space > MIXED_LIMIT // width:  # the tuples so far renumbered 0, 1, ...
            dense, uniques = pd.factorize(key)
            key, space = dense.astype(np.int64, copy=False), max(len(uniques), 1)
        np.multiply(key, width, out=key)
        np.add(key, column, out=key)
        space *= width
    if space <= max(DENSE_LIMIT, 2 * key.size):
        counts = np.bincount(key, minlength=space)
        counts = counts[counts > 0]
    else:
        key.sort()
        starts = np.flatnonzero(key[1:] != key[:-1]) + 1
        counts = np.diff(np.concatenate(([0], starts, [key.size])))
    return _ascending(counts)


def _ascending(counts: np.ndarray) -> np.ndarray:
    """``np.sort(counts)`` by a histogram of the sizes (at most the rows): linear, not n log n."""
    of_size = np.bincount(counts)
    return np.repeat(np.arange(of_size.size, dtype=np.int64), of_size)

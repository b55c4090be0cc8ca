"""Integer category codes for columns and column combinations: the pandas engine's machinery.

Each column is factorized once into dense integer codes (a missing value is a category of its
own, values compare as written) and combinations are built from those codes. Nothing here loops
over rows in Python. Row-level code (Mondrian, information loss, the QID dimension) builds on
these too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import numpy as np
import pandas as pd

T = TypeVar("T")
R = TypeVar("R")

# Codes of a combination are mixed as ``a * card_b + b``; below this many possible combined values
# they are counted with ``bincount`` directly, above it they are re-compacted with a hash table.
DENSE_LIMIT = 1 << 22
# From this much work (rows x columns touched) on, columns and combinations go to parallel threads.
_THREADED_CELLS = 1 << 20


@dataclass(frozen=True)
class Grouping:
    """Rows labelled by category: ``codes[i]`` in ``[0, categories)`` is row i's category."""

    codes: np.ndarray
    categories: int
    # For one column: its distinct values by code, as the factorization found them.
    uniques: np.ndarray | None = field(default=None, repr=False, compare=False)

    def counts(self) -> np.ndarray:
        """Category sizes n_1..n_S (all positive), computed once and read-only."""
        return self._sizes

    @cached_property
    def _sizes(self) -> np.ndarray:
        """Category sizes, cached on the (frozen) grouping.

        Several measures of one report need the sizes of the same grouping (k-anonymity, Mmaq and
        every sensitive attribute use the quasi-identifier classes); a 1M-row ``bincount`` is worth
        not repeating.
        """
        sizes = np.bincount(self.codes, minlength=self.categories)
        sizes.flags.writeable = False
        return sizes

    def representatives(self) -> np.ndarray:
        """One row of each category (its last), by category code."""
        rows = np.empty(self.categories, dtype=np.int64)
        rows[self.codes] = np.arange(self.codes.size)
        return rows


def encode_column(values: pd.Series) -> Grouping:
    """Factorize one column; a missing value (None, NaN) is a category like any other."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy().astype(np.int64)
        # Unused categories and the -1 of missing values must not leave holes in the codes.
        codes, uniques = pd.factorize(codes)
        categories = values.cat.categories.to_numpy(dtype=object)
        distinct = np.array([None if c < 0 else categories[c] for c in uniques], dtype=object)
        return Grouping(codes.astype(np.int64, copy=False), len(uniques), distinct)
    if values.dtype == object:
        return _encode_objects(values.to_numpy())
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return Grouping(codes.astype(np.int64, copy=False), len(uniques), np.asarray(uniques))


def _encode_objects(values: np.ndarray) -> Grouping:
    """Factorize an object column by object identity first, then by value.

    Hashing a million Python strings is the dominant cost of the whole report (pandas' object
    factorize also scans for missing values and infers the type first), yet real columns hold few
    distinct *objects*: pandas' and pyarrow's readers store each distinct string once and repeat
    the reference. So the column's object pointers, read as integers, are factorized with the fast
    integer hash table, and only one object per distinct pointer is factorized by value.

    The result is the same as ``pd.factorize(values, use_na_sentinel=False)``: rows holding the
    same object hold equal values, and the representatives appear in the order of their first row,
    so every value gets the code it would get directly (codes number values by first appearance),
    with pandas' own rules for equality and missing values.
    """
    values = np.ascontiguousarray(values)
    try:
        # The raw bytes of an object array are its PyObject pointers; nothing is dereferenced.
        pointers = np.frombuffer(values, dtype=np.intp)
    except (TypeError, ValueError, BufferError):  # a numpy that refuses: the direct way
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        return Grouping(codes.astype(np.int64, copy=False), len(uniques), np.asarray(uniques))
    object_codes, distinct_objects = pd.factorize(pointers)
    some_row = np.empty(len(distinct_objects), dtype=np.int64)
    some_row[object_codes] = np.arange(len(values))
    value_codes, uniques = pd.factorize(values[some_row], use_na_sentinel=False)
    codes = value_codes.astype(np.int64, copy=False)[object_codes]
    return Grouping(codes, len(uniques), np.asarray(uniques, dtype=object))


def combine(groupings: Sequence[Grouping]) -> Grouping:
    """The grouping by the tuple of several groupings (rows equal on all of them share a code)."""
    if not groupings:
        raise ValueError("At least one column is needed to form categories")
    result = groupings[0]
    for other in groupings[1:]:
        mixed = result.codes * other.categories + other.codes
        space = result.categories * other.categories
        if space <= DENSE_LIMIT:
            present = np.bincount(mixed, minlength=space) > 0
            remap = np.cumsum(present) - 1
            result = Grouping(remap[mixed], int(present.sum()))
        else:
            codes, uniques = pd.factorize(mixed)
            result = Grouping(codes.astype(np.int64, copy=False), len(uniques))
    return result


def combined_counts(prefix: Grouping, last: Grouping) -> np.ndarray:
    """Category sizes of the combination (prefix, last), without building its codes.

    The same multiset as ``combine([prefix, last]).counts()``. The combination search needs only
    the sizes, so it skips the compacted codes (a gather over every row) and the second count.
    """
    mixed = prefix.codes * last.categories + last.codes
    space = prefix.categories * last.categories
    if space <= DENSE_LIMIT:
        counts = np.bincount(mixed, minlength=space)
        return counts[counts > 0]
    codes, uniques = pd.factorize(mixed)
    return np.bincount(codes, minlength=len(uniques))


def map_in_threads(function: Callable[[T], R], items: Sequence[T], cells: int) -> list[R]:
    """``[function(item) for item in items]``, spread over the available cores when worth it.

    pandas' integer hash tables, numpy's arithmetic and ``bincount`` release the GIL, so on
    2 cores two columns or combinations are processed at once. Measured on a 1M x 15 Adult-like
    table (benchmarks/analyze.py): encoding 158 -> 65 ms, combinations up to 3 1.27 -> 0.83 s.
    When the work (``cells`` = rows x columns touched) is small, the items are processed in the
    calling thread: starting threads would cost more than they save.
    """
    workers = min(len(items), _available_cores())
    if workers < 2 or cells < _THREADED_CELLS:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="metrics") as pool:
        return list(pool.map(function, items))


def encode_columns(columns: list[pd.Series]) -> list[Grouping]:
    """Encode columns and count their categories (counts are cached on each grouping)."""

    def encode(column: pd.Series) -> Grouping:
        grouping = encode_column(column)
        grouping.counts()
        return grouping

    return map_in_threads(encode, columns, sum(len(column) for column in columns))


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1

"""A dataset's identity for the privacy budget: the set of its rows, compared by similarity.

A budget spent on a dataset must follow its people, not its bytes: the same table with its
columns renamed or moved, its rows shuffled, written as JSON instead of CSV, quoted otherwise,
with a byte order mark or a trailing newline, or with a cell changed or a few rows added, is
the same people. So a dataset is known by its rows:

1. **Canonical cells.** Each value becomes one text (:func:`canonical_text`): missing is empty,
   Unicode NFC, surrounding blanks dropped, a decimal's trailing zeros dropped (``30.0`` is
   ``30``, as JSON and Parquet write what CSV wrote as ``30``), booleans and dates in one
   spelling. Each text is hashed to 64 bits (the first 8 bytes of its MD5, the same in Python and
   in DuckDB's ``md5_number_upper``, so a table counted in memory and one counted out of core
   agree).
2. **Row fingerprints.** A row's fingerprint is the sum, modulo 2**64, of its cells' hashes: it
   names no column and depends on no column order, so renaming and moving columns change
   nothing.
3. **A bottom-k sketch.** The :data:`SKETCH_SIZE` smallest distinct fingerprints (Broder, "On
   the resemblance and containment of documents", 1997; Cohen and Kaplan, "Summarizing data
   using bottom-k sketches", PODC 2007), and the number of distinct fingerprints. Row order
   does not matter; nothing of a value can be read back from a sketch of 64-bit hashes.
4. **The same dataset** (:func:`same_dataset`): the Jaccard similarity of the two sets of row
   fingerprints, estimated from the sketches, is at least :data:`SAME_DATASET` (0.9); or the
   smaller set lies within the larger one (:func:`containment`: at least 0.9 of its rows are
   the larger one's) and holds at least :data:`CONTAINED_SIZE` (half) of its rows. The second
   rule is for *differencing*: a release of a table and one of the same table without one
   person who holds many rows (150 of 750: J = 0.8) are one dataset, so both are charged to
   one budget and the guarantee composes over them.

Which edits make a new dataset, for a table of n distinct rows: changing more than n / 19 rows
(about 5 %; a changed row leaves the set and a new one enters, J = (n - x) / (n + x)), adding
more than n rows (doubling it) or removing more than half of them, or any edit that touches
every row: adding, dropping or splitting a column, changing a value's spelling throughout (``F``
to ``female``). Removing rows and changing some of the rest at once falls between the rules.
The estimate from 1024 hashes has a standard error of about 0.01 near 0.9, so edits close to
these bounds may go either way. Those copies are bounded by the source's budget
over every dataset (``source_epsilon_budget``), not by this one.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

SKETCH_SIZE = 1024
CONTAINED_SIZE = 0.5  # the smallest share of the larger set a contained one may be
SAME_DATASET = 0.9
_DECIMAL_ZEROS = re.compile(r"^([+-]?[0-9]+\.[0-9]*?)0+$")
_POINT = re.compile(r"^([+-]?[0-9]+)\.$")
_BLANKS = " \t\r\n"


def canonical_text(value: Any) -> str:
    """One spelling of a cell, whatever format carried it.

    Examples
    --------
    >>> [canonical_text(v) for v in (" 30.0 ", 30, 30.0, "2.50", None, float("nan"), True)]
    ['30', '30', '30', '2.5', '', '', 'true']
    """
    if value is None:
        return ""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return ""
        text = repr(float(value))
        if "e" in text or "inf" in text:
            text = f"{Decimal(text):f}" if math.isfinite(value) else text
    elif isinstance(value, datetime.datetime):
        text = value.isoformat(sep=" ")
        text = text.removesuffix(" 00:00:00")
    elif isinstance(value, datetime.date):
        text = value.isoformat()
    else:
        text = str(value)
        if text in ("NaT", "<NA>") and not isinstance(value, str):
            return ""
    text = unicodedata.normalize("NFC", text).strip(_BLANKS)
    text = _DECIMAL_ZEROS.sub(r"\1", text)
    return _POINT.sub(r"\1", text)


def canonical_sql(column: str) -> str:
    """:func:`canonical_text` of a text column, in DuckDB's SQL (``column`` quoted)."""
    text = (
        f"nfc_normalize(regexp_replace(coalesce(CAST({column} AS VARCHAR), ''), "
        r"'^[ \t\r\n]+|[ \t\r\n]+$', '', 'g'))"
    )
    text = f"regexp_replace({text}, '^([+-]?[0-9]+\\.[0-9]*?)0+$', '\\1')"
    return f"regexp_replace({text}, '^([+-]?[0-9]+)\\.$', '\\1')"


def cell_hash_sql(column: str) -> str:
    """The 64-bit hash of a cell, in DuckDB's SQL: the same number as :func:`cell_hashes`."""
    return f"md5_number_upper({canonical_sql(column)})"


def text_hash(text: str) -> int:
    """The first 8 bytes of the text's MD5, little-endian (DuckDB's ``md5_number_upper``)."""
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "little")


def cell_hashes(values: Any) -> np.ndarray:
    """The hash of each value (a column's dictionary), as ``uint64``."""
    return np.fromiter(
        (text_hash(canonical_text(v)) for v in values), dtype=np.uint64, count=len(values)
    )


@dataclass(frozen=True)
class Sketch:
    """The :data:`SKETCH_SIZE` smallest distinct row fingerprints (ascending) and how many
    distinct fingerprints the table has."""

    hashes: np.ndarray
    distinct: int

    @classmethod
    def of(cls, fingerprints: np.ndarray) -> Sketch:
        unique = np.unique(np.asarray(fingerprints, dtype=np.uint64))
        return cls(unique[:SKETCH_SIZE], int(unique.size))

    def to_bytes(self) -> bytes:
        return self.hashes.astype("<u8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes, distinct: int) -> Sketch:
        return cls(np.frombuffer(data, dtype="<u8").astype(np.uint64), distinct)


def row_fingerprints(hashes: list[np.ndarray]) -> np.ndarray:
    """Each row's fingerprint from its cells' hashes (one array a column, one hash a row)."""
    total = np.zeros(hashes[0].size if hashes else 0, dtype=np.uint64)
    for column in hashes:
        total += column  # modulo 2**64: uint64 wraps
    return total


def similarity(a: Sketch, b: Sketch) -> float:
    """The estimated Jaccard similarity of two tables' row sets: of the k smallest hashes of
    the union of the sketches, the share found in both (exact when both sets are smaller
    than k).

    Examples
    --------
    >>> a = Sketch.of(np.arange(100, dtype=np.uint64))
    >>> similarity(a, Sketch.of(np.arange(10, 110, dtype=np.uint64)))  # 90 of 110
    0.8181818181818182
    """
    union = np.union1d(a.hashes, b.hashes)[:SKETCH_SIZE]
    if union.size == 0:
        return 1.0
    both = np.isin(union, a.hashes, assume_unique=True) & np.isin(
        union, b.hashes, assume_unique=True
    )
    return float(both.sum()) / union.size


def containment(a: Sketch, b: Sketch) -> float:
    """The estimated share of the smaller row set that lies in the larger: the intersection
    ``J (|A| + |B|) / (1 + J)`` over the smaller size (at most 1).

    Examples
    --------
    >>> a = Sketch.of(np.arange(100, dtype=np.uint64))
    >>> containment(a, Sketch.of(np.arange(20, 100, dtype=np.uint64)))  # 80 rows, all of A's
    1.0
    """
    jaccard = similarity(a, b)
    smaller = min(a.distinct, b.distinct)
    if smaller == 0:
        return 1.0
    return min(1.0, jaccard * (a.distinct + b.distinct) / (1 + jaccard) / smaller)


def sizes_compatible(a: int, b: int) -> bool:
    """Whether two tables of ``a`` and ``b`` distinct rows can be one dataset: the smaller at
    least :data:`CONTAINED_SIZE` of the larger (Jaccard alone needs :data:`SAME_DATASET`)."""
    return min(a, b) >= CONTAINED_SIZE * max(a, b)


def same_dataset(a: Sketch, b: Sketch) -> bool:
    """Whether two tables are one dataset for the budget (module docstring).

    Examples
    --------
    >>> a = Sketch.of(np.arange(750, dtype=np.uint64))
    >>> same_dataset(a, Sketch.of(np.arange(150, 750, dtype=np.uint64)))  # 150 rows fewer
    True
    >>> same_dataset(a, Sketch.of(np.arange(375, 1125, dtype=np.uint64)))  # half of them
    False
    """
    if not sizes_compatible(a.distinct, b.distinct):
        return False
    return similarity(a, b) >= SAME_DATASET or containment(a, b) >= SAME_DATASET


def sketch_of(engine: Any, columns: list[str]) -> Sketch:
    """The sketch of ``columns`` of a table an engine holds: an engine that reads out of core
    computes it where the rows are (``row_sketch``, given the SQL of the cell hash); otherwise
    from the count table of every column (one tuple a distinct row) and the dictionaries."""
    compute: Callable | None = getattr(engine, "row_sketch", None)
    if compute is not None:
        hashes, distinct = compute(columns, cell_hash_sql, SKETCH_SIZE)
        return Sketch(np.asarray(hashes, dtype=np.uint64), int(distinct))
    [table] = engine.counts([columns])
    per_column = [cell_hashes(engine.dictionary(c).tolist())[table.codes(c)] for c in columns]
    return Sketch.of(row_fingerprints(per_column))

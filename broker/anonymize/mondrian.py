"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt and Ramakrishnan, ICDE 2006).

Naming: a *partition* is a set of rows being split; a *class* is a final partition (an equivalence
class of the output: its rows share every quasi-identifier label).

Strict multidimensional partitioning, as in the paper's Figure 4:

1. Start with the whole table as one partition.
2. For a partition, rank the quasi-identifiers by their *normalized range* there: for a numeric
   or date one ``(max - min) / (max - min over the whole table)``; for a categorical one the same
   on the rank of its values in sorted order. Take the widest (the first given on a tie).
3. Cut at the median of that quasi-identifier: rows ``<= median`` left, the others right (or
   ``< median`` left when that is more balanced: with many ties at the median one of the two is
   allowed when the other is not). A cut is *allowed* when both halves keep at least ``k`` rows
   and, when ``l`` is asked, at least ``l`` distinct values of every sensitive attribute. Those
   two cuts are the only candidates: any other cut has a smaller half on one side.
4. If no cut on the widest quasi-identifier is allowed, try the next widest; a partition with no
   allowed cut becomes a class.

A quasi-identifier is *numeric* when every present value parses as a finite number (``"28"`` as
written in a CSV file counts), a *date* when it has a datetime dtype or every present value is an
ISO 8601 date string with a ``-`` (``"2024-03-17"``, ``"2024-03"``), else *categorical* (ordered
by the values as text). Labels say no more than the class allows (an anonymized file must not
spell out what it hides):

- numeric: the single value when the whole class (at least ``k`` rows) holds one, else a closed
  range ``"lo-hi"`` whose bounds lie on a 1-2-5 grid with a step of at least half the class's
  spread and at least 1/1000 of the column's span (:func:`grid_bounds`): ``25..40`` shows as
  ``"20-40"``, three phone numbers ``555 0123..555 0125`` as ``"5550000-5560000"``;
- date: the value as written when the class holds one, else the day, month (``"2024-03"``) or
  year the class falls in, else a range of years on the same grid (``"2020/2024"``);
- categorical: the sorted set of the class's values joined by ``", "`` (``"F, M"``), naming only
  values that at least ``k`` rows of the table hold; rarer ones show as one ``*`` (an e-mail, a
  village of one), and a class naming more than 16 values shows ``*`` alone.

Missing values (NA or a blank string) order after every other value and are written ``"NA"`` in a
label (``"20-30, NA"``; a class holding only missing values shows ``"NA"``).

Suppression. Every partition Mondrian creates is allowed, so a row can only be left without a class
when the whole table fails the condition: fewer than ``k`` rows, or fewer than ``l`` distinct values
of a sensitive attribute. Those rows (all of them) are suppressed, that is removed from the output,
if their share is within ``max_suppression``; otherwise :class:`AnonymizationError` (a
``ValueError``) is raised, saying why.

Speed. Each quasi-identifier is integer-coded once. The partitions of one depth are processed
together: rows of a partition are contiguous in a permutation array, ranges come from
``minimum.reduceat``, medians from one counting sort (or sort) of ``partition * C + code`` keys,
and a cut is a stable in-place reordering computed with cumulative sums. There is no Python loop
per row or per partition, only per depth (about ``log2(N / k)``) and per quasi-identifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.anonymize._values import (
    MISSING_LABEL,
    SUPPRESSED,
    factorize,
    format_number,
    parse_dates,
    parse_numbers,
    require_columns,
)
from broker.engines.pandas import encode_column

NUMERIC = "numeric"
DATE = "date"
CATEGORICAL = "categorical"

# Categorical label sets are found with per-class bitmasks up to this many categories.
_BITMASK_CATEGORIES = 256
# A class naming more categories than this is labelled "*": such a list would describe no one.
_SET_LABEL_NAMES = 16
# Range labels use a grid step of at least 1/_GRID_CELLS of the column's span, so that values
# packed close together (sequential ids, phone numbers) are not spelled out by their class.
_GRID_CELLS = 1_000


class AnonymizationError(ValueError):
    """The requested anonymization cannot be reached within the allowed suppression."""


@dataclass(frozen=True, eq=False)
class MondrianResult:
    """A k-anonymous (and optionally distinct l-diverse) version of a frame.

    Attributes
    ----------
    frame : DataFrame
        The output rows, index kept; suppressed rows are absent. Quasi-identifier columns hold
        the class labels (strings); other columns are unchanged.
    quasi_identifiers, sensitive : tuple of str
    k : int
    l : int or None
    classes : int
        Number of equivalence classes formed.
    suppressed_rows : int
    class_ids : ndarray of int
        For each input row (in input order), its class id in ``[0, classes)``, or -1 when the row
        was suppressed.
    """

    frame: pd.DataFrame
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    k: int
    l: int | None
    classes: int
    suppressed_rows: int
    class_ids: np.ndarray


@dataclass(frozen=True)
class _Dimension:
    """One quasi-identifier, integer-coded in value order (missing values last)."""

    name: str
    codes: np.ndarray
    kind: str  # NUMERIC, DATE or CATEGORICAL
    values: np.ndarray  # per non-missing code: float (numeric) or text as written (date, category)
    has_missing: bool
    position: np.ndarray  # per code, for the normalized range

    @property
    def card(self) -> int:
        return len(self.values) + int(self.has_missing)

    @property
    def span(self) -> float:
        """Half the range of positions: halves of values near the largest float do not overflow
        (only ratios of spans are used)."""
        return float(self.position[-1] / 2 - self.position[0] / 2) if self.card > 1 else 0.0


def mondrian(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    k: int,
    *,
    sensitive: Sequence[str] = (),
    l: int | None = None,
    max_suppression: float = 0.0,
    people: Sequence[np.ndarray] = (),
) -> MondrianResult:
    """k-anonymize ``frame`` on ``quasi_identifiers`` with strict Mondrian partitioning.

    ``people``: labellings of ``frame``'s rows by person (one code per row each, such as a person
    key and identical rows); a category is then named in a label only when at least ``k``
    people hold it, counted by the labelling that sees the fewest.

    Parameters
    ----------
    frame : DataFrame
    quasi_identifiers : sequence of str
        The columns generalized into class labels (ranges or sets).
    k : int
        Every class gets at least ``k`` rows.
    sensitive : sequence of str, optional
        Sensitive attributes for the l condition (left unchanged in the output).
    l : int, optional
        When given, every class also holds at least ``l`` distinct values of each sensitive
        attribute (distinct l-diversity; a missing value counts as a value, as in
        :mod:`broker.metrics`).
    max_suppression : float, default 0
        Largest share of rows (0 to 1) that may be suppressed (removed) when they cannot be
        placed in a class; see the module docstring for when that happens.

    Returns
    -------
    MondrianResult

    Raises
    ------
    AnonymizationError
        If more rows would have to be suppressed than ``max_suppression`` allows (e.g. fewer rows
        than ``k``). It is a ``ValueError``.
    ValueError
        On bad arguments: unknown column (named), k < 1, l without sensitive attributes, a column
        both quasi-identifier and sensitive, no rows.

    Examples
    --------
    The paper's Table 1 (the median cut of nine ages leaves halves of five and four rows, which
    k = 3 cannot cut again; the paper prints three classes of three):

    >>> frame = pd.DataFrame({
    ...     "Age": ["28", "51", "34", "63", "40", "30", "42", "25", "64"],
    ...     "Gender": ["F", "F", "M", "F", "M", "M", "M", "F", "F"],
    ...     "Disease": ["Hep C", "Malaria", "Syphilis", "Measles", "VIH", "TB", "Gono",
    ...                 "Cholera", "Meningitis"]})
    >>> result = mondrian(frame, ["Age", "Gender"], k=3)
    >>> sorted(set(zip(result.frame["Age"], result.frame["Gender"])))
    [('20-40', 'F, M'), ('40-80', 'F, M')]
    >>> result.classes, result.suppressed_rows
    (2, 0)
    """
    quasi_identifiers, sensitive = _check_arguments(
        frame, quasi_identifiers, k, sensitive, l, max_suppression
    )
    class_ids, classes, dimensions = mondrian_classes(frame, quasi_identifiers, k, sensitive, l)
    suppressed = int((class_ids < 0).sum())
    _check_suppression(suppressed, len(frame), max_suppression, k, sensitive, l)

    out = frame.copy()
    kept = class_ids >= 0
    if classes:
        order = np.argsort(class_ids[kept], kind="stable")
        kept_positions = np.flatnonzero(kept)[order]
        sizes = np.bincount(class_ids[kept], minlength=classes)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        for dimension in dimensions:
            labels = _class_labels(dimension, dimension.codes[kept_positions], starts, k, people)
            column = np.empty(len(frame), dtype=object)
            column[kept] = labels[class_ids[kept]]
            out[dimension.name] = pd.Series(column, index=frame.index, dtype=object)
    out = out[kept] if suppressed else out
    return MondrianResult(
        frame=out,
        quasi_identifiers=tuple(quasi_identifiers),
        sensitive=tuple(sensitive),
        k=int(k),
        l=None if l is None else int(l),
        classes=classes,
        suppressed_rows=suppressed,
        class_ids=class_ids,
    )


def _check_arguments(frame, quasi_identifiers, k, sensitive, l, max_suppression):
    quasi_identifiers = (
        [quasi_identifiers] if isinstance(quasi_identifiers, str) else list(quasi_identifiers)
    )
    sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    if not quasi_identifiers:
        raise ValueError("No quasi-identifier given: Mondrian needs at least one")
    require_columns(frame, quasi_identifiers, "Quasi-identifier")
    require_columns(frame, sensitive, "Sensitive attribute")
    for names, role in ((quasi_identifiers, "quasi-identifier"), (sensitive, "sensitive")):
        repeated = [name for name in names if names.count(name) > 1]
        if repeated:
            raise ValueError(f"Column {repeated[0]!r} is given twice as {role}")
    overlap = [name for name in quasi_identifiers if name in sensitive]
    if overlap:
        raise ValueError(f"Column {overlap[0]!r} is declared both quasi-identifier and sensitive")
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if l is not None:
        if not isinstance(l, int | np.integer) or isinstance(l, bool) or l < 1:
            raise ValueError(f"l must be an integer >= 1, got {l!r}")
        if not sensitive:
            raise ValueError("l-diversity needs at least one sensitive attribute")
    if not 0.0 <= float(max_suppression) <= 1.0:
        raise ValueError(f"max_suppression is a share of rows in [0, 1], got {max_suppression!r}")
    if len(frame) == 0:
        raise ValueError("The dataset has no rows: there is nothing to anonymize")
    return quasi_identifiers, sensitive


def _check_suppression(suppressed, rows, max_suppression, k, sensitive, l) -> None:
    if suppressed == 0 or suppressed <= max_suppression * rows:
        return
    if rows < k:
        why = f"k = {k} needs at least {k} rows and the dataset has {rows}"
    else:
        why = f"the dataset has fewer than l = {l} distinct values of a sensitive attribute " + (
            f"({', '.join(map(repr, sensitive))})"
        )
    raise AnonymizationError(
        f"Cannot anonymize: {why}; suppressing {suppressed} of {rows} rows exceeds the allowed "
        f"share max_suppression = {max_suppression:g}"
    )


def _encode_dimension(values: pd.Series, name: str) -> _Dimension:
    codes, uniques, _blank = factorize(values)
    numbers = parse_numbers(uniques, name, strict=False) if len(uniques) else None
    dates = None if numbers is not None else parse_dates(uniques)
    if numbers is not None:
        kind = NUMERIC
        distinct, which = np.unique(numbers, return_inverse=True)
        position = distinct.astype(float)
    elif dates is not None:
        kind = DATE
        nanoseconds, text = dates
        distinct_ns, first, which = np.unique(nanoseconds, return_index=True, return_inverse=True)
        distinct = text[first]
        position = distinct_ns.astype(float)
    else:
        kind = CATEGORICAL
        text = pd.Series(np.asarray(uniques, dtype=object)).astype(str).to_numpy(dtype=object)
        distinct, which = np.unique(text, return_inverse=True)
        distinct = distinct.astype(object)
        position = np.arange(len(distinct), dtype=float)
    has_missing = bool((codes < 0).any())
    m = len(distinct)
    which = np.asarray(which, dtype=np.int64).reshape(-1)
    coded = np.where(codes >= 0, which[np.maximum(codes, 0)] if m else 0, m).astype(np.int64)
    if has_missing:
        step = (position[-1] - position[0]) / (m - 1) if m > 1 else 1.0
        position = np.append(position, (position[-1] if m else 0.0) + (step or 1.0))
    return _Dimension(name, coded, kind, distinct, has_missing, position)


def mondrian_classes(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    k: int,
    sensitive: Sequence[str] = (),
    l: int | None = None,
) -> tuple[np.ndarray, int, list[_Dimension]]:
    """Class id of every row (-1 when the whole table fails), the number of classes, the codes.

    Arguments are not checked here: :func:`mondrian` and the partition method check them.
    """
    dimensions = [_encode_dimension(frame[name], name) for name in quasi_identifiers]
    class_ids, classes = _classes(frame, dimensions, k, sensitive, l)
    return class_ids, classes, dimensions


def _classes(frame, dimensions, k, sensitive, l) -> tuple[np.ndarray, int]:
    rows = len(frame)
    diverse = []
    if l is not None and l > 1:
        for name in sensitive:
            grouping = encode_column(frame[name])
            diverse.append((grouping.codes, grouping.categories))
    if rows < k or any(categories < l for _codes, categories in diverse):
        return np.full(rows, -1, dtype=np.int64), 0
    codes = np.stack([d.codes.astype(np.int32) for d in dimensions])
    return _split(codes, dimensions, int(k), diverse, 0 if l is None else int(l))


def _split(codes, dimensions, k, diverse, l) -> tuple[np.ndarray, int]:
    """Breadth-first strict Mondrian over all partitions of one depth at a time."""
    m, n = codes.shape
    positions = [d.position for d in dimensions]
    spans = [d.span for d in dimensions]
    radix = max((d.card for d in dimensions), default=1) + 1
    class_ids = np.full(n, -1, dtype=np.int64)
    order = np.arange(n, dtype=np.int64)
    sizes = np.array([n], dtype=np.int64)
    classes = 0
    while sizes.size:
        count = sizes.size
        starts = _starts(sizes)
        part = np.repeat(np.arange(count), sizes)
        widths = np.full((m, count), -1.0)
        can_split = sizes >= 2 * k
        for d in range(m):
            if spans[d] <= 0:
                continue
            values = codes[d, order]
            low = np.minimum.reduceat(values, starts)
            high = np.maximum.reduceat(values, starts)
            width = (positions[d][high] / 2 - positions[d][low] / 2) / spans[d]
            widths[d] = np.where((high > low) & can_split, width, -1.0)
        preference = np.argsort(-widths, axis=0, kind="stable")
        cut_dim = np.full(count, -1, dtype=np.int64)
        cut_at = np.zeros(count, dtype=np.int64)
        every = np.arange(count)
        for rank in range(m):
            dims = preference[rank]
            pending = (cut_dim < 0) & (widths[dims, every] >= 0)
            if not pending.any():
                break
            ok, threshold = _try_cuts(
                codes, order, part, sizes, pending, dims, k, diverse, l, radix
            )
            chosen = np.flatnonzero(pending)[ok]
            cut_dim[chosen] = dims[chosen]
            cut_at[chosen] = threshold[ok]

        split = cut_dim >= 0
        finished_rows = ~split[part]
        if finished_rows.any():
            finished = np.flatnonzero(~split)
            ids = np.full(count, -1, dtype=np.int64)
            ids[finished] = classes + np.arange(finished.size)
            class_ids[order[finished_rows]] = ids[part[finished_rows]]
            classes += finished.size
        if not split.any():
            break
        order, sizes = _apply_cuts(codes, order, part, sizes, split, cut_dim, cut_at)
    return class_ids, classes


def _starts(sizes: np.ndarray) -> np.ndarray:
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return starts


def _selected_partitions(order, part, sizes, chosen):
    """The rows of the ``chosen`` partitions, renumbered 0..n-1 in partition order.

    Returns the rows, each row's old and new (local) partition number, the chosen partition
    numbers, and their sizes and start offsets among the selected rows.
    """
    selected = chosen[part]
    rows = order[selected]
    old = part[selected]
    which = np.flatnonzero(chosen)
    remap = np.full(chosen.size, -1, dtype=np.int64)
    remap[which] = np.arange(which.size)
    sub_sizes = sizes[which]
    return rows, old, which, remap[old], sub_sizes, _starts(sub_sizes)


def _try_cuts(codes, order, part, sizes, pending, dims, k, diverse, l, radix):
    """For the pending partitions, cut each on ``dims[partition]`` at its median if allowed.

    Returns, per pending partition, whether a cut is allowed and the code threshold (rows with
    code ``<= threshold`` go left).
    """
    rows, old, which, local, sub_sizes, sub_starts = _selected_partitions(
        order, part, sizes, pending
    )
    values = codes[dims[old], rows]

    keys = local * radix + values
    rank = sub_starts + (sub_sizes - 1) // 2  # of each partition's median among the sorted keys
    space = which.size * radix
    if space <= 4 * keys.size + (1 << 16):
        # Counting sort: cumulative[j] = number of keys <= j, non-decreasing over all partitions.
        cumulative = np.cumsum(np.bincount(keys, minlength=space))
        median = np.searchsorted(cumulative, rank, side="right")
        below = np.where(median > 0, cumulative[median - 1], 0) - sub_starts
        up_to = cumulative[median] - sub_starts
    else:
        keys = np.sort(keys)
        median = keys[rank]
        below = np.searchsorted(keys, median, side="left") - sub_starts
        up_to = np.searchsorted(keys, median, side="right") - sub_starts
    median_code = median - np.arange(which.size) * radix

    below_ok = (below >= k) & (sub_sizes - below >= k)
    up_to_ok = (up_to >= k) & (sub_sizes - up_to >= k)
    if diverse and (below_ok.any() or up_to_ok.any()):
        row_median = median_code[local]
        for sensitive_codes, categories in diverse:
            sensitive_values = sensitive_codes[rows]
            if below_ok.any():
                below_ok &= _both_sides_diverse(
                    local, values < row_median, sensitive_values, categories, which.size, l
                )
            if up_to_ok.any():
                up_to_ok &= _both_sides_diverse(
                    local, values <= row_median, sensitive_values, categories, which.size, l
                )
    # Prefer the more balanced allowed cut; on a tie, "<= median" (LeFevre's rule).
    use_up_to = up_to_ok & (
        ~below_ok | (np.abs(2 * up_to - sub_sizes) <= np.abs(2 * below - sub_sizes))
    )
    threshold = np.where(use_up_to, median_code, median_code - 1)
    return below_ok | up_to_ok, threshold


def _both_sides_diverse(local, left, sensitive_values, categories, count, l) -> np.ndarray:
    """Per partition: both halves hold at least ``l`` distinct sensitive values."""
    half = local * 2 + (~left)
    distinct = _distinct_per_group(half, sensitive_values, 2 * count, categories)
    return (distinct[0::2] >= l) & (distinct[1::2] >= l)


def _distinct_per_group(group, values, groups, categories) -> np.ndarray:
    keys = group * categories + values
    space = groups * categories
    if space <= max(4 * keys.size, 1 << 20):
        present = np.bincount(keys, minlength=space).reshape(groups, categories) > 0
        return present.sum(axis=1)
    return np.bincount(np.unique(keys) // categories, minlength=groups)


def _apply_cuts(codes, order, part, sizes, split, cut_dim, cut_at):
    """Reorder the rows of the cut partitions so that each half is contiguous (left first)."""
    rows, old, which, local, sub_sizes, sub_starts = _selected_partitions(order, part, sizes, split)

    left = codes[cut_dim[old], rows] <= cut_at[old]
    left_int = left.astype(np.int64)
    lefts = np.cumsum(left_int)
    rights = np.arange(1, rows.size + 1) - lefts
    lefts_before = lefts[sub_starts] - left_int[sub_starts]
    rights_before = rights[sub_starts] - (1 - left_int[sub_starts])
    n_left = np.bincount(local, weights=left_int, minlength=which.size).astype(np.int64)
    position = np.where(
        left,
        sub_starts[local] + lefts - 1 - lefts_before[local],
        sub_starts[local] + n_left[local] + rights - 1 - rights_before[local],
    )
    new_order = np.empty_like(rows)
    new_order[position] = rows
    new_sizes = np.column_stack((n_left, sub_sizes - n_left)).ravel()
    return new_order, new_sizes


def _class_labels(
    dimension: _Dimension,
    codes: np.ndarray,
    starts: np.ndarray,
    k: int,
    people: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """Label of every class from its rows' codes (rows grouped by class, classes from starts).

    A label never states a value more precisely than its class allows (see the module
    docstring): numeric bounds sit on a coarse grid, dates on calendar units, and a category is
    named only when at least ``k`` rows of the table hold it.
    """
    if dimension.kind == NUMERIC:
        return _grid_labels(dimension, codes, starts)
    if dimension.kind == DATE:
        return _calendar_labels(dimension, codes, starts)
    return _set_labels(dimension, codes, starts, k, people)


def _extremes(dimension: _Dimension, codes, starts):
    """Per class: lowest and highest present code (-1 when none) and whether one is missing."""
    missing_code = len(dimension.values)
    missing = codes == missing_code
    low = np.minimum.reduceat(codes, starts)
    high = np.maximum.reduceat(np.where(missing, -1, codes), starts)
    has_missing = np.maximum.reduceat(missing, starts) if dimension.has_missing else None
    return low, high, high >= 0, has_missing


def _with_missing(labels: np.ndarray, present: np.ndarray, has_missing) -> np.ndarray:
    labels = np.where(present, labels, "")
    if has_missing is not None:
        with_missing = np.where(present, labels + ", " + MISSING_LABEL, MISSING_LABEL)
        labels = np.where(has_missing, with_missing, labels)
    return labels.astype(object)


def grid_bounds(
    low: np.ndarray, high: np.ndarray, min_step: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """The narrowest interval on a 1-2-5 grid whose step is at least half of ``high - low``
    (and at least ``min_step``) that holds ``[low, high]``.

    The bounds are grid points, not values of the data: the exact values of a class (a phone
    number, a salary) cannot be read off its label, only the stretch of the grid that holds them.

    Examples
    --------
    >>> low, high = grid_bounds(np.array([25.0, 42, 5550123]), np.array([40.0, 64, 5550999]))
    >>> low.tolist(), high.tolist()
    ([20.0, 40.0, 5550000.0], [40.0, 80.0, 5551000.0])
    >>> [b.tolist() for b in grid_bounds(np.array([5550123.0]), np.array([5550125.0]), 1e4)]
    [[5550000.0], [5560000.0]]

    Where no finite grid holds the class (an overflowing spread), the bounds are infinite, and
    the caller shows nothing of the class: this fails closed, never on the class's own values.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _grid_bounds(low, high, min_step)


def _grid_bounds(low, high, min_step):
    # No grid finer than a millionth of the values' magnitude (nor than the smallest float).
    floor = np.maximum(np.maximum(np.abs(low), np.abs(high)) * 1e-6, np.finfo(float).tiny)
    spread = np.maximum(np.maximum(high - low, 2 * min_step), floor)
    exponent = np.floor(np.log10(spread / 2))
    best_low, best_high = np.full(low.shape, -np.inf), np.full(low.shape, np.inf)
    best_width = np.full(low.shape, np.inf)
    for shift in (0, 1):
        for mantissa in (1.0, 2.0, 5.0):
            step = mantissa * 10.0 ** (exponent + shift)
            ok = step >= spread / 2
            lo = np.floor(low / step) * step
            hi = np.ceil(high / step) * step
            hi = np.where(hi <= lo, lo + step, hi)
            width = np.where(ok & np.isfinite(lo) & np.isfinite(hi), hi - lo, np.inf)
            better = width < best_width
            best_low = np.where(better, lo, best_low)
            best_high = np.where(better, hi, best_high)
            best_width = np.where(better, width, best_width)
    # Grid points computed in floating point (0.1 * 3) are rounded to the step's decimals.
    finite = np.isfinite(best_width)
    scale = np.where(finite, 10.0 ** np.clip(-np.floor(np.log10(best_width)) + 1, 0, 15), 1.0)
    rounded_low = np.where(finite, np.round(best_low * scale) / scale + 0.0, -np.inf)
    rounded_high = np.where(finite, np.round(best_high * scale) / scale + 0.0, np.inf)
    return rounded_low, rounded_high


def _grid_labels(dimension: _Dimension, codes, starts) -> np.ndarray:
    low, high, present, has_missing = _extremes(dimension, codes, starts)
    values = dimension.values.astype(float)
    low_value = values[np.where(present, low, 0)] if values.size else np.zeros(low.shape)
    high_value = values[np.maximum(high, 0)] if values.size else np.zeros(low.shape)
    # A value is shown as such only when every row of the class holds it (>= k rows): with a
    # missing value beside it, it may be one person's.
    whole = present if has_missing is None else present & ~has_missing
    single = (low_value == high_value) & whole
    # Halves first: the span of values near the largest floats must not overflow to infinity.
    half_span = float(values[-1] / 2 - values[0] / 2) if values.size else 0.0
    grid_low, grid_high = grid_bounds(low_value, high_value, half_span / (_GRID_CELLS / 2))
    pairs = np.stack([np.where(single, low_value, grid_low), grid_high, single])
    unique, inverse = np.unique(pairs, axis=1, return_inverse=True)
    written = [
        format_number(a)
        if one
        else f"{format_number(a)}-{format_number(b)}"
        if np.isfinite(a) and np.isfinite(b)
        else SUPPRESSED  # no grid holds the class: say nothing of it
        for a, b, one in unique.T
    ]
    labels = np.asarray(written, dtype=object)[inverse.reshape(-1)]
    return _with_missing(labels, present, has_missing)


def _calendar_labels(dimension: _Dimension, codes, starts) -> np.ndarray:
    """Dates: the value when the class holds one, else its day, month, year or years."""
    low, high, present, has_missing = _extremes(dimension, codes, starts)
    nanoseconds = dimension.position[: len(dimension.values)].astype("int64")
    if not nanoseconds.size:
        return _with_missing(np.full(low.shape, "", dtype=object), present, has_missing)
    first = pd.DatetimeIndex(nanoseconds[np.where(present, low, 0)].astype("datetime64[ns]"))
    last = pd.DatetimeIndex(nanoseconds[np.maximum(high, 0)].astype("datetime64[ns]"))
    same_year = first.year == last.year
    same_month = same_year & (first.month == last.month)
    same_day = same_month & (first.day == last.day)
    years_low, years_high = grid_bounds(
        first.year.to_numpy(dtype=float), last.year.to_numpy(dtype=float) + 1
    )
    years = [f"{int(a)}/{int(b) - 1}" for a, b in zip(years_low, years_high, strict=True)]
    whole = present if has_missing is None else present & ~has_missing
    labels = np.where(
        (low == high) & whole,  # the value itself only when every row of the class holds it
        dimension.values[np.where(present, low, 0)],
        np.where(
            same_day,
            first.strftime("%Y-%m-%d"),
            np.where(
                same_month,
                first.strftime("%Y-%m"),
                np.where(same_year, first.strftime("%Y"), years),
            ),
        ),
    )
    return _with_missing(labels.astype(object), present, has_missing)


def _holders(dimension: _Dimension, people: Sequence[np.ndarray]) -> np.ndarray:
    """How many rows, or with ``people`` how many people (the fewest any labelling sees), hold
    each category of the dimension."""
    counts = np.bincount(dimension.codes, minlength=dimension.card)
    for labelling in people:
        _, persons = np.unique(labelling, return_inverse=True)
        pairs = np.unique(dimension.codes * (persons.max() + 1) + persons)
        holders = np.bincount(pairs // (persons.max() + 1), minlength=dimension.card)
        counts = np.minimum(counts, holders)
    return counts


def _set_labels(
    dimension: _Dimension, codes, starts, k: int, people: Sequence[np.ndarray] = ()
) -> np.ndarray:
    """Categories: the sorted set of a class's values, naming only values held by >= k people
    (rows, without ``people``).

    Rarer values (an e-mail, a village of one) show as one ``*``, and a class of more than
    :data:`_SET_LABEL_NAMES` named values as ``*`` alone: a label lists what many rows share,
    never what would single one out.
    """
    frequency = _holders(dimension, people)
    rare_code = dimension.card
    codes = np.where(frequency[codes] >= k, codes, rare_code)
    card = dimension.card + 1
    names = np.append(np.append(dimension.values.astype(object), MISSING_LABEL), SUPPRESSED)
    if not dimension.has_missing:
        names = np.delete(names, len(dimension.values))
    class_of_row = np.repeat(np.arange(starts.size), np.diff(np.append(starts, codes.size)))
    pairs = np.unique(class_of_row * card + codes)
    pair_class, pair_code = pairs // card, pairs % card
    named = np.bincount(pair_class, minlength=starts.size)
    if card <= _BITMASK_CATEGORIES:
        words = (card + 63) // 64
        masks = np.empty((starts.size, words), dtype=np.uint64)
        bit = np.left_shift(np.uint64(1), (codes % 64).astype(np.uint64))
        for word in range(words):
            in_word = np.where(codes // 64 == word, bit, np.uint64(0))
            masks[:, word] = np.bitwise_or.reduceat(in_word, starts)
        unique_masks, inverse = np.unique(masks, axis=0, return_inverse=True)
        bits = np.unpackbits(unique_masks.astype("<u8").view(np.uint8), axis=1, bitorder="little")
        label_row, member = np.nonzero(bits)
        bounds = np.searchsorted(label_row, np.arange(1, unique_masks.shape[0]))
        labels = [", ".join(group) for group in np.split(names[member], bounds)]
        labels = np.asarray(labels, dtype=object)[inverse.reshape(-1)]
    else:  # many categories: the distinct (class, code) pairs, joined per class
        joined = pd.Series(names[pair_code]).groupby(pair_class, sort=True).agg(", ".join)
        labels = joined.to_numpy(dtype=object)
    return np.where(named > _SET_LABEL_NAMES, SUPPRESSED, labels).astype(object)

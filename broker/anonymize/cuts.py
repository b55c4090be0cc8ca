"""Mondrian's median cuts: the rows into classes of at least k (LeFevre et al., ICDE 2006).

Naming: a *partition* is a set of rows being split; a *class* is a final partition (an equivalence
class of the output: its rows share every quasi-identifier label).

Strict multidimensional
partitioning, as in the paper's Figure 4:

1. Start with the whole table as one partition.
2. For a partition, rank the quasi-identifiers by their *normalized range* there: for a numeric
   or date one ``(max - min) / (max - min over the whole table)``; for a categorical one the same
   on the rank of its values in sorted order. Take the widest (the first given on a tie).
3. Cut at the median of that quasi-identifier: rows ``<= median`` left, the others right (or
   ``< median`` left when that is more balanced: with many ties at the median one of the two is
   allowed when the other is not). A cut is *allowed* when both halves keep at least ``k`` rows
   (and, given who the rows are, ``k`` people: distinct labels of every labelling of the rows by
   person, so that one person sent three times is not a class of three) and, when ``l`` is
   asked, at least ``l`` distinct values of every sensitive attribute. Those two cuts are the
   only candidates: any other cut has a smaller half on one side.
4. If no cut on the widest quasi-identifier is allowed, try the next widest; a partition with no
   allowed cut becomes a class.

Speed. Each quasi-identifier is integer-coded once. The partitions of one depth are processed
together: rows of a partition are contiguous in a permutation array, ranges come from
``minimum.reduceat``, medians from one counting sort (or sort) of ``partition * C + code`` keys,
and a cut is a stable in-place reordering computed with cumulative sums. There is no Python loop
per row or per partition, only per depth (about ``log2(N / k)``) and per quasi-identifier.

Shared by :mod:`broker.anonymize.mondrian` (which labels the classes) and
:mod:`broker.anonymize.partition` (which links them to sensitive tables by group id). Over 300
lines on purpose: the vectorized cut search is one algorithm whose arrays (order, partition
starts, sizes) share invariants, and reads best in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.anonymize._values import factorize, parse_dates, parse_numbers
from broker.columns.roles import require_columns, require_distinct_roles
from broker.engines.codes import encode_column

NUMERIC = "numeric"
DATE = "date"
CATEGORICAL = "categorical"


class AnonymizationError(ValueError):
    """The requested anonymization cannot be reached within the allowed suppression."""


@dataclass(frozen=True)
class Dimension:
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


def check_arguments(frame, quasi_identifiers, k, sensitive, l, max_suppression):
    quasi_identifiers = (
        [quasi_identifiers] if isinstance(quasi_identifiers, str) else list(quasi_identifiers)
    )
    sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    if not quasi_identifiers:
        raise ValueError("No quasi-identifier given: Mondrian needs at least one")
    require_columns(frame.columns, quasi_identifiers, "Quasi-identifier")
    require_columns(frame.columns, sensitive, "Sensitive attribute")
    for names, role in ((quasi_identifiers, "quasi-identifier"), (sensitive, "sensitive")):
        repeated = [name for name in names if names.count(name) > 1]
        if repeated:
            raise ValueError(f"Column {repeated[0]!r} is given twice as {role}")
    require_distinct_roles(quasi_identifiers, sensitive)
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


def check_suppression(suppressed, rows, max_suppression, k, sensitive, l, people=None) -> None:
    """``people``: how many people the rows hold (the fewest any labelling sees), if known."""
    if suppressed == 0 or suppressed <= max_suppression * rows:
        return
    if rows < k:
        why = f"k = {k} needs at least {k} rows and the dataset has {rows}"
    elif people is not None and people < k:
        why = f"k = {k} needs at least {k} people and the dataset's rows are {people} at most"
    else:
        why = f"the dataset has fewer than l = {l} distinct values of a sensitive attribute " + (
            f"({', '.join(map(repr, sensitive))})"
        )
    raise AnonymizationError(
        f"Cannot anonymize: {why}; suppressing {suppressed} of {rows} rows exceeds the allowed "
        f"share max_suppression = {max_suppression:g}"
    )


def encode_dimension(values: pd.Series, name: str) -> Dimension:
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
    return Dimension(name, coded, kind, distinct, has_missing, position)


def mondrian_classes(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    k: int,
    sensitive: Sequence[str] = (),
    l: int | None = None,
    people: Sequence[np.ndarray] = (),
) -> tuple[np.ndarray, int, list[Dimension]]:
    """Class id of every row (-1 when the whole table fails), the number of classes, the codes.
    ``people``: labellings of the rows by person (one code per row each); every class then
    holds ``k`` people by each.

    Arguments are not checked here: :func:`mondrian` and the partition method check them.
    """
    dimensions = [encode_dimension(frame[name], name) for name in quasi_identifiers]
    class_ids, classes = _classes(frame, dimensions, k, sensitive, l, people)
    return class_ids, classes, dimensions


def _classes(frame, dimensions, k, sensitive, l, people=()) -> tuple[np.ndarray, int]:
    rows = len(frame)
    diverse = []
    if l is not None and l > 1:
        for name in sensitive:
            grouping = encode_column(frame[name])
            diverse.append((grouping.codes, grouping.categories))
    crowds = []
    for labelling in people:
        codes, uniques = pd.factorize(np.asarray(labelling))
        if len(uniques) < rows:  # every row its own person: rows already count them
            crowds.append((codes.astype(np.int64), len(uniques)))
    if (
        rows < k
        or any(categories < l for _codes, categories in diverse)
        or any(categories < k for _codes, categories in crowds)
    ):
        return np.full(rows, -1, dtype=np.int64), 0
    codes = np.stack([d.codes.astype(np.int32) for d in dimensions])
    return _split(codes, dimensions, int(k), diverse, 0 if l is None else int(l), crowds)


def _split(codes, dimensions, k, diverse, l, crowds=()) -> tuple[np.ndarray, int]:
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
                codes, order, part, sizes, pending, dims, k, diverse, l, radix, crowds
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


def _try_cuts(codes, order, part, sizes, pending, dims, k, diverse, l, radix, crowds=()):
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
    # l distinct values of each sensitive attribute, and k distinct people by each labelling.
    wanted = [(c, n, l) for c, n in diverse] + [(c, n, k) for c, n in crowds]
    if wanted and (below_ok.any() or up_to_ok.any()):
        row_median = median_code[local]
        for group_codes, categories, least in wanted:
            held = group_codes[rows]
            if below_ok.any():
                below_ok &= _both_sides_diverse(
                    local, values < row_median, held, categories, which.size, least
                )
            if up_to_ok.any():
                up_to_ok &= _both_sides_diverse(
                    local, values <= row_median, held, categories, which.size, least
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

"""Search for the smallest attribute combinations that identify rows.

Attributes harmless one by one can single people out together (age + sex + zip code). A
combination *identifies* when its class is ``identifier`` (every row distinct) or when the share of
rows unique on it reaches a threshold. Uniqueness only grows when attributes are added, so once a
combination identifies, its supersets are not reported: the answer is the minimal ones.

The search is bounded, because the number of combinations explodes with the width of a table
(80 columns have 1.6 million combinations of 4): a constant column, or a column that groups the
rows exactly as an earlier one (its *twin*), is left out of combinations (it cannot make one
minimal); a level
(all combinations of one size) is searched only while the evaluations so far and the level's stay
within :data:`MAX_EVALUATIONS` and :data:`MAX_CELLS` (rows x evaluations); and at most
:data:`MAX_REPORTED` combinations are listed. :class:`CombinationSearch` says how far the search
went and why it stopped.

Most combinations need no count at all. Rows unique on a set are at most the rows of its classes
that the other columns can still split: a class of ``s`` rows of a subset, joined with columns
taking at most ``v`` values together, holds at most ``s`` unique rows when ``s <= v`` and at most
``v - 1`` otherwise. A candidate whose bound (the smallest over its counted subsets) stays below
the threshold cannot identify, so it is not counted; only what may identify reaches the engine,
and the answer is exactly the one counting every candidate gives.

Twins are found from counts, like everything else: two columns group the rows alike exactly when
their pair has as many distinct tuples as each alone, and only columns whose values have the same
sizes (the same multiset of counts, known from the first level) can be twins. The pairs checked
are pairs the second level measures anyway, so their sizes are kept for it.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations as subsets

import numpy as np

from broker.engines.base import Engine
from broker.metrics.defaults import DEFAULT_MAX_SIZE, DEFAULT_UNIQUE_THRESHOLD
from broker.metrics.mmaq import MmaqMeasure, mmaq_from_counts

MAX_EVALUATIONS = 20_000
MAX_CELLS = 3_000_000_000
MAX_REPORTED = 100
CELLS_AT_ONCE = 1 << 24  # tuple sizes held at once: 128 MiB


@dataclass(frozen=True)
class IdentifyingCombination:
    attributes: tuple[str, ...]
    unique_share: float
    measure: MmaqMeasure

    def as_dict(self) -> dict:
        return {
            "attributes": list(self.attributes),
            "unique_share": self.unique_share,
            **self.measure.as_dict(),
        }


@dataclass(frozen=True)
class CombinationSearch:
    """How far the search went: the largest size searched in full, and why it stopped there."""

    requested_size: int
    searched_size: int
    evaluations: int
    found: int
    reported: int
    note: str | None = None

    @property
    def complete(self) -> bool:
        return self.searched_size >= self.requested_size

    def as_dict(self) -> dict:
        return {
            "requested_size": self.requested_size,
            "searched_size": self.searched_size,
            "complete": self.complete,
            "evaluations": self.evaluations,
            "found": self.found,
            "reported": self.reported,
            "note": self.note,
        }


def identifying_combinations(
    engine: Engine,
    columns: Sequence[str],
    max_size: int = DEFAULT_MAX_SIZE,
    unique_threshold: float = DEFAULT_UNIQUE_THRESHOLD,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[IdentifyingCombination], CombinationSearch]:
    """Minimal combinations of 1..``max_size`` of ``columns`` that identify rows, smallest first
    (at most :data:`MAX_REPORTED`), and how far the bounded search went."""
    if max_size < 1:
        raise ValueError(f"The combination size must be at least 1, got {max_size}")
    if not 0 < unique_threshold <= 1:
        raise ValueError(f"The unique-row threshold must be in (0, 1], got {unique_threshold}")
    found: list[IdentifyingCombination] = []
    identifying: list[frozenset[str]] = []
    evaluations, searched, note = 0, 0, None
    pool: list[str] = list(columns)
    known: dict[tuple[str, ...], np.ndarray] = {}  # sizes counted ahead (the twin checks)
    alone: dict[str, np.ndarray] = {}  # the first level's sizes, which say who can be twins
    counted: dict[frozenset[str], ClassSizes] = {}  # counted sets' (not identifying): bounds
    for size in range(1, min(max_size, len(columns)) + 1):
        if size == 2:
            pool = _combinable(columns, alone, engine, known, MAX_EVALUATIONS - evaluations)
        # A set can only contain a smaller identifying set, so one level's candidates are known
        # before any of them is measured, and can be measured in any order (or in parallel).
        level = math.comb(len(pool), size)
        if evaluations + level > MAX_EVALUATIONS or (evaluations + level) * engine.rows > MAX_CELLS:
            note = (
                f"searched up to {searched} attribute(s): the {level:,} combinations of {size} "
                f"of {len(pool)} attributes exceed the search's budget ({MAX_EVALUATIONS:,} "
                f"evaluations, {MAX_CELLS:,} cells)"
            )
            break
        if progress:
            progress(f"combinations of {size} attributes")
        candidates = [
            combo
            for combo in subsets(pool, size)
            if not any(known_set <= frozenset(combo) for known_set in identifying)
        ]
        evaluations += len(candidates)
        if size > 1:
            candidates = [
                combo
                for combo in candidates
                if combo in known  # counted already
                or float(_unique_bound(combo, counted)) / engine.rows >= unique_threshold
            ]
        for combo, counts in _counted_in_turn(engine, candidates, known):
            if size == 1:
                alone[combo[0]] = counts
            unique_share = float(np.count_nonzero(counts == 1)) / engine.rows
            # Every row distinct is the identifier class; only what identifies is measured.
            if counts.size == engine.rows or unique_share >= unique_threshold:
                measure = mmaq_from_counts(counts)
                identifying.append(frozenset(combo))
                found.append(IdentifyingCombination(combo, unique_share, measure))
            elif size < max_size:  # a bound for the next level (no candidate holds this one)
                counted[frozenset(combo)] = ClassSizes.of(counts)
        known.clear()  # what was counted ahead and not asked (a superset of an identifying set)
        searched = size
    if len(found) > MAX_REPORTED:
        extra = f"{len(found) - MAX_REPORTED:,} more identifying combinations are not listed"
        note = f"{note}; {extra}" if note else extra
    search = CombinationSearch(
        max_size, searched, evaluations, len(found), min(len(found), MAX_REPORTED), note
    )
    return found[:MAX_REPORTED], search


@dataclass(frozen=True)
class ClassSizes:
    """A counted set's class sizes as a histogram: what bounds the unique rows of its supersets.

    ``sizes`` are the distinct class sizes, ascending; ``rows_below[i]`` the rows of the classes
    smaller than ``sizes[i]`` (one more entry: all rows), ``classes_from[i]`` the classes of
    ``sizes[i]`` rows or more (one more entry: 0).
    """

    sizes: list[int]
    rows_below: list[int]
    classes_from: list[int]
    distinct: int

    @classmethod
    def of(cls, counts: np.ndarray) -> ClassSizes:
        """
        >>> bound = ClassSizes.of(np.array([1, 3, 3, 5]))
        >>> bound.sizes, bound.rows_below, bound.classes_from, bound.distinct
        ([1, 3, 5], [0, 1, 7, 12], [4, 3, 1, 0], 4)
        """
        sizes, classes = np.unique(counts, return_counts=True)
        rows = np.concatenate([[0], np.cumsum(sizes * classes)])
        above = np.concatenate([np.cumsum(classes[::-1])[::-1], [0]])
        return cls(sizes.tolist(), rows.tolist(), above.tolist(), int(counts.size))

    def unique_bound(self, values: int) -> int:
        """The most rows that can be unique once columns taking at most ``values`` values
        together are added: a class of ``s <= values`` rows all of them, a larger one
        ``values - 1`` (one value at least is held twice).

        >>> ClassSizes.of(np.array([1, 3, 3, 5])).unique_bound(3)  # 1 + 3 + 3 + (3 - 1)
        9
        """
        split = bisect_right(self.sizes, values)
        return self.rows_below[split] + (values - 1) * self.classes_from[split]


def _unique_bound(combo: tuple[str, ...], counted: dict[frozenset[str], ClassSizes]) -> int:
    """The most rows that can be unique on ``combo``, from its counted subsets of one column
    and of all columns but one (2 x size splits, whatever the size: the bound costs no more
    than the search's budget allows): each split into a counted part and the rest, whose values
    are at most its own count when it was counted, else the product of its columns' counts
    (every column alone is counted; a candidate holds no identifying one)."""
    whole = frozenset(combo)
    bounds = []
    for column in combo:
        for part in {frozenset([column]), whole - {column}}:
            if part not in counted:
                continue
            rest = whole - part
            values = counted[rest].distinct if rest in counted else None
            if values is None:
                values = math.prod(counted[frozenset([name])].distinct for name in rest)
            bounds.append(counted[part].unique_bound(values))
    return min(bounds)


def _counted_in_turn(
    engine: Engine, column_sets: list[tuple[str, ...]], known: dict[tuple[str, ...], np.ndarray]
) -> Iterator[tuple[tuple[str, ...], np.ndarray]]:
    """Each set with its tuple sizes, asked of the engine a few sets at a time: together at
    most :data:`CELLS_AT_ONCE` rows' worth, since a near-unique set's sizes are about as many
    as the rows (a file of 12.6M rows out of core: 100 MB a set)."""
    at_once = max(1, CELLS_AT_ONCE // max(engine.rows, 1))
    for start in range(0, len(column_sets), at_once):
        batch = column_sets[start : start + at_once]
        yield from zip(batch, _sizes(engine, batch, known), strict=True)


def _sizes(
    engine: Engine, column_sets: list[tuple[str, ...]], known: dict[tuple[str, ...], np.ndarray]
) -> list[np.ndarray]:
    """The tuple sizes of each set, those counted ahead taken from ``known`` (and let go)."""
    missing = [columns for columns in column_sets if columns not in known]
    counted = dict(zip(missing, engine.tuple_sizes(missing), strict=True)) if missing else {}
    return [counted[c] if c in counted else known.pop(c) for c in column_sets]


def _combinable(
    columns: Sequence[str],
    alone: dict[str, np.ndarray],
    engine: Engine,
    known: dict[tuple[str, ...], np.ndarray],
    budget: int,
) -> list[str]:
    """The columns worth combining: not constant, not a twin of an earlier column.

    Columns group the rows alike exactly when their pair has as many tuples as each alone, and
    only columns with the same multiset of value sizes (``alone``: each column's) can: those
    pairs are counted (at most ``budget`` of them, else twins stay in) and kept in ``known`` for
    the second level.
    """
    varying = [name for name in columns if alone[name].size > 1]
    alike: dict[bytes, list[str]] = {}
    for name in varying:
        alike.setdefault(np.sort(alone[name]).tobytes(), []).append(name)
    pairs = [pair for group in alike.values() for pair in subsets(group, 2)]
    if not pairs or len(pairs) > budget:
        return varying
    known.update(zip(pairs, engine.tuple_sizes(pairs), strict=True))
    twins = {b for a, b in pairs if known[(a, b)].size == alone[a].size}
    for a, b in pairs:
        if a in twins or b in twins:
            del known[(a, b)]  # never a candidate: a twin is left out
    return [name for name in varying if name not in twins]

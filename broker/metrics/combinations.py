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

Twins are found from counts, like everything else: two columns group the rows alike exactly when
their pair has as many distinct tuples as each alone, and only columns whose values have the same
sizes (the same multiset of counts, known from the first level) can be twins. The pairs checked
are pairs the second level measures anyway, so their sizes are kept for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations as subsets

import numpy as np

from broker.engines.base import Engine
from broker.metrics.defaults import DEFAULT_MAX_SIZE, DEFAULT_UNIQUE_THRESHOLD
from broker.metrics.mmaq import MmaqMeasure, mmaq_from_counts

MAX_EVALUATIONS = 20_000
MAX_CELLS = 3_000_000_000
MAX_REPORTED = 100


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
        for combo, counts in zip(candidates, _sizes(engine, candidates, known), strict=True):
            if size == 1:
                alone[combo[0]] = counts
            unique_share = float(np.count_nonzero(counts == 1)) / engine.rows
            # Every row distinct is the identifier class; only what identifies is measured.
            if counts.size == engine.rows or unique_share >= unique_threshold:
                measure = mmaq_from_counts(counts)
                identifying.append(frozenset(combo))
                found.append(IdentifyingCombination(combo, unique_share, measure))
        known.clear()  # what was counted ahead and not asked (a superset of an identifying set)
        searched = size
    if len(found) > MAX_REPORTED:
        extra = f"{len(found) - MAX_REPORTED:,} more identifying combinations are not listed"
        note = f"{note}; {extra}" if note else extra
    search = CombinationSearch(
        max_size, searched, evaluations, len(found), min(len(found), MAX_REPORTED), note
    )
    return found[:MAX_REPORTED], search


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

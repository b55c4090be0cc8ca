"""Search for the smallest attribute combinations that identify rows.

Attributes harmless one by one can single people out together (age + sex + zip code). A
combination *identifies* when its class is ``identifier`` (every row distinct) or when the share of
rows unique on it reaches a threshold. Uniqueness only grows when attributes are added, so once a
combination identifies, its supersets are not reported: the answer is the minimal ones.

The search is bounded, because the number of combinations explodes with the width of a table
(80 columns have 1.6 million combinations of 4): a constant column, or a column that groups the
rows exactly as an earlier one, is left out of combinations (it cannot make one minimal); a level
(all combinations of one size) is searched only while the evaluations so far and the level's stay
within :data:`MAX_EVALUATIONS` and :data:`MAX_CELLS` (rows x evaluations); and at most
:data:`MAX_REPORTED` combinations are listed. :class:`CombinationSearch` says how far the search
went and why it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations as subsets

import numpy as np

from broker.engines.base import Engine
from broker.metrics.mmaq import MmaqMeasure, mmaq_from_counts

DEFAULT_MAX_SIZE = 3
DEFAULT_UNIQUE_THRESHOLD = 0.1
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
    combinable = _combinable(engine, columns)
    evaluations, searched, note = 0, 0, None
    for size in range(1, min(max_size, len(columns)) + 1):
        pool = columns if size == 1 else combinable
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
            if not any(known <= frozenset(combo) for known in identifying)
        ]
        evaluations += len(candidates)
        for combo, counts in zip(candidates, engine.tuple_sizes(candidates), strict=True):
            unique_share = float(np.count_nonzero(counts == 1)) / engine.rows
            # Every row distinct is the identifier class; only what identifies is measured.
            if counts.size == engine.rows or unique_share >= unique_threshold:
                measure = mmaq_from_counts(counts)
                identifying.append(frozenset(combo))
                found.append(IdentifyingCombination(combo, unique_share, measure))
        searched = size
    if len(found) > MAX_REPORTED:
        extra = f"{len(found) - MAX_REPORTED:,} more identifying combinations are not listed"
        note = f"{note}; {extra}" if note else extra
    search = CombinationSearch(
        max_size, searched, evaluations, len(found), min(len(found), MAX_REPORTED), note
    )
    return found[:MAX_REPORTED], search


def _combinable(engine: Engine, columns: Sequence[str]) -> list[str]:
    """The columns worth combining: not constant, not grouping rows as an earlier one does."""
    kept, seen = [], set()
    for name in columns:
        if len(engine.dictionary(name)) < 2:
            continue
        fingerprint = engine.partition_fingerprint(name)
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        kept.append(name)
    return kept

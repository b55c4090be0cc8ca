"""Search for the smallest attribute combinations that identify rows.

Attributes harmless one by one can single people out together (age + sex + zip code). A
combination *identifies* when its class is ``identifier`` (every row distinct) or when the share of
rows unique on it reaches a threshold. Uniqueness only grows when attributes are added, so once a
combination identifies, its supersets are not reported: the answer is the minimal ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations as subsets

import numpy as np

from broker.metrics.encoding import EncodedTable, combined_counts, map_in_threads
from broker.metrics.mmaq import IDENTIFIER, MmaqMeasure, mmaq_from_counts

DEFAULT_MAX_SIZE = 3
DEFAULT_UNIQUE_THRESHOLD = 0.1


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


def identifying_combinations(
    table: EncodedTable,
    columns: Sequence[str],
    max_size: int = DEFAULT_MAX_SIZE,
    unique_threshold: float = DEFAULT_UNIQUE_THRESHOLD,
    progress: Callable[[str], None] | None = None,
) -> list[IdentifyingCombination]:
    """Minimal combinations of 1..``max_size`` of ``columns`` that identify rows, smallest first."""
    if max_size < 1:
        raise ValueError(f"The combination size must be at least 1, got {max_size}")
    if not 0 < unique_threshold <= 1:
        raise ValueError(f"The unique-row threshold must be in (0, 1], got {unique_threshold}")
    found: list[IdentifyingCombination] = []
    identifying: list[frozenset[str]] = []
    for size in range(1, min(max_size, len(columns)) + 1):
        if progress:
            progress(f"combinations of {size} attributes")
        # A set can only contain a smaller identifying set, so one level's candidates are known
        # before any of them is measured, and can be measured in any order (or in parallel).
        candidates = [
            combo
            for combo in subsets(columns, size)
            if not any(known <= frozenset(combo) for known in identifying)
        ]
        for combo, counts in _category_sizes(table, candidates):
            unique_share = float(np.count_nonzero(counts == 1)) / table.rows
            measure = mmaq_from_counts(counts)
            if measure.attribute_class == IDENTIFIER or unique_share >= unique_threshold:
                identifying.append(frozenset(combo))
                found.append(IdentifyingCombination(combo, unique_share, measure))
    return found


def _category_sizes(
    table: EncodedTable, candidates: list[tuple[str, ...]]
) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Category sizes of each candidate combination, in the candidates' order.

    Candidates sharing all but their last attribute (``subsets`` yields them one after the
    other) share the grouping of that prefix, so each candidate costs one mixing and one count
    over the rows; the prefixes are spread over the available cores.
    """
    by_prefix: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for combo in candidates:
        by_prefix.setdefault(combo[:-1], []).append(combo)

    def measure(prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], np.ndarray]]:
        combos = by_prefix[prefix]
        if not prefix:
            return [(combo, table.grouping(combo).counts()) for combo in combos]
        shared = table.grouping(prefix)
        return [(c, combined_counts(shared, table.grouping(c[-1:]))) for c in combos]

    work = table.rows * (len(candidates) + len(by_prefix))
    return [pair for part in map_in_threads(measure, list(by_prefix), work) for pair in part]

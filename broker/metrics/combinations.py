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

from broker.metrics.encoding import EncodedTable
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
        for combo in subsets(columns, size):
            if any(known <= frozenset(combo) for known in identifying):
                continue
            counts = table.grouping(combo).counts()
            unique_share = float(np.count_nonzero(counts == 1)) / table.rows
            measure = mmaq_from_counts(counts)
            if measure.attribute_class == IDENTIFIER or unique_share >= unique_threshold:
                identifying.append(frozenset(combo))
                found.append(IdentifyingCombination(combo, unique_share, measure))
    return found

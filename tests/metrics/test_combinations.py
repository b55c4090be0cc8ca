"""The combination search against a brute-force oracle, and the bound that spares it counts.

The oracle groups the frame with pandas for every subset of the combinable columns (no bound,
no engine): the search must report exactly what it finds, whatever the search leaves uncounted.
"""

from itertools import combinations
from unittest.mock import patch

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import broker.metrics.combinations as combinations_module
from broker.engines.pandas import PandasEngine
from broker.metrics.combinations import ClassSizes, identifying_combinations
from broker.metrics.mmaq import mmaq_from_counts


def _sizes(frame: pd.DataFrame, columns) -> np.ndarray:
    return frame.groupby(list(columns), dropna=False, sort=False).size().to_numpy()


def _oracle(frame: pd.DataFrame, max_size: int, threshold: float):
    """Every subset of the combinable columns grouped by pandas, in the search's order: the
    minimal identifying ones, and how many subsets a search must consider."""
    rows = len(frame)
    partitions = {c: frame.groupby(c, dropna=False, sort=False).ngroup().to_numpy() for c in frame}
    varying = [c for c in frame if _sizes(frame, [c]).size > 1]
    # A twin groups the rows exactly as an earlier column: the same partition.
    pool = [
        c
        for i, c in enumerate(varying)
        if not any(_same_partition(partitions[a], partitions[c]) for a in varying[:i])
    ]
    found, evaluations = [], 0
    for size in range(1, min(max_size, frame.shape[1]) + 1):
        names = list(frame) if size == 1 else pool
        for combo in combinations(names, size):
            if any(set(f[0]) <= set(combo) for f in found):
                continue
            evaluations += 1
            counts = _sizes(frame, combo)
            share = float(np.count_nonzero(counts == 1)) / rows
            if counts.size == rows or share >= threshold:
                found.append((combo, share, mmaq_from_counts(counts)))
    return found, evaluations


def _same_partition(first: np.ndarray, second: np.ndarray) -> bool:
    pairs = np.unique(np.stack([first, second]), axis=1).shape[1]
    return pairs == np.unique(first).size == np.unique(second).size


def tables(min_columns: int = 1):
    """Columns of 1 to 40 rows of small integers."""
    return st.integers(1, 40).flatmap(
        lambda rows: st.lists(
            st.lists(st.integers(0, 5), min_size=rows, max_size=rows),
            min_size=min_columns,
            max_size=6,
        )
    )


@settings(max_examples=300, deadline=None)
@given(
    tables(),
    st.integers(1, 4),
    st.sampled_from([0.05, 0.1, 0.3, 0.5, 0.9, 1.0]),
    st.integers(1, 6),
    st.integers(1, 3),
)
def test_the_search_reports_what_counting_every_subset_finds(
    columns, max_size, threshold, low, at_once
):
    # Small value ranges (``low``) make large classes, where the bound leaves sets uncounted;
    # the engine is asked ``at_once`` sets at a time.
    frame = pd.DataFrame({f"c{i}": [v % low for v in values] for i, values in enumerate(columns)})
    if low > 2:  # a copy makes a twin
        frame["copy"] = frame["c0"].astype(str) + "!"
    with patch.object(combinations_module, "CELLS_AT_ONCE", at_once * len(frame)):
        found, search = identifying_combinations(
            PandasEngine(frame), list(frame), max_size, threshold
        )
    expected, evaluations = _oracle(frame, max_size, threshold)
    assert [(f.attributes, f.unique_share, f.measure) for f in found] == expected
    assert search.evaluations == evaluations
    assert search.found == len(expected)
    assert search.searched_size == min(max_size, frame.shape[1]) and search.note is None


@settings(max_examples=300, deadline=None)
@given(tables(min_columns=2), st.integers(1, 6), st.data())
def test_the_bound_never_falls_below_the_unique_rows(columns, low, data):
    frame = pd.DataFrame({f"c{i}": [v % low for v in values] for i, values in enumerate(columns)})
    names = list(frame)
    whole = data.draw(st.lists(st.sampled_from(names), min_size=2, unique=True))
    part = data.draw(
        st.lists(st.sampled_from(whole), min_size=1, max_size=len(whole) - 1, unique=True)
    )
    rest = [c for c in whole if c not in part]
    unique = int(np.count_nonzero(_sizes(frame, whole) == 1))
    assert unique <= ClassSizes.of(_sizes(frame, part)).unique_bound(_sizes(frame, rest).size)


class CountingEngine(PandasEngine):
    """The pandas engine, recording the column sets it is asked to count."""

    asked: list

    def tuple_sizes(self, column_sets):
        self.asked = [*getattr(self, "asked", []), *map(tuple, column_sets)]
        return super().tuple_sizes(column_sets)


def test_sets_that_cannot_identify_are_not_counted():
    """1,000 rows over 2, 3 and 4 values: a pair of them has classes of 167 rows or more, which
    one more column of at most 4 values cannot make unique in 10 % of the rows, so neither those
    pairs nor their triple is counted. Pairs with ``id`` (classes of 4 rows) may identify, and
    are counted: (b, id) leaves 2 of each 4 rows unique, (c, id) all of them."""
    index = np.arange(1000)
    frame = pd.DataFrame({"a": index % 2, "b": index % 3, "c": index % 4, "id": index // 4})
    engine = CountingEngine(frame)
    found, search = identifying_combinations(engine, list(frame), 3, 0.1)
    assert [(f.attributes, f.unique_share) for f in found] == [
        (("b", "id"), 0.5),
        (("c", "id"), 1.0),
    ]
    assert search.evaluations == 4 + 6 + 1  # the triples holding an identifying pair are not
    assert engine.asked == [("a",), ("b",), ("c",), ("id",), ("a", "id"), ("b", "id"), ("c", "id")]

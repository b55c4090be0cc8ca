"""Count tables in themselves: merging tuples under a value -> label map, the recent tables kept,
and a recode seen through counts (checked against the recoded frame counted from scratch)."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.engines.base import CountTable, Grouped, RecentTables, RecodePlan, tuple_keys
from broker.engines.pandas import PandasEngine, People
from broker.engines.recoded import Recoded


def _table(columns, codes, rows, people=None) -> CountTable:
    return CountTable.of(columns, [np.array(c) for c in codes], np.array(rows), people)


def test_merging_adds_the_rows_and_people_of_tuples_that_meet():
    table = _table(["a", "b"], [[0, 1, 2, 2], [0, 0, 0, 1]], [3, 1, 2, 5], np.array([2, 1, 2, 4]))
    merged = table.merged([np.array([0, 0, 1, 1]), table.codes("b")], [2, 2])
    found = {
        (int(a), int(b)): (int(n), int(p))
        for a, b, n, p in zip(
            merged.codes("a"), merged.codes("b"), merged.rows, merged.people, strict=True
        )
    }
    assert found == {(0, 0): (4, 3), (1, 0): (2, 2), (1, 1): (5, 4)}
    assert merged.tuple_ids(["a"])[1] == 2


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 3000), min_size=1, max_size=3).flatmap(
        lambda widths: st.tuples(
            st.just(widths),
            st.lists(st.tuples(*(st.integers(0, w - 1) for w in widths)), max_size=40),
            st.booleans(),
        )
    )
)
def test_grouping_without_a_sort_gives_what_np_unique_gives(case):
    # Grouped.of skips the sort for keys already distinct and ascending, and marks keys in a
    # bitmap when their space is small; either way the answer is np.unique's, dtypes included.
    widths, tuples, ordered = case
    if ordered:
        tuples = sorted(set(tuples))
    codes = [np.array([t[i] for t in tuples], dtype=np.int64) for i in range(len(widths))]
    grouped = Grouped.of(codes, widths)
    keys, packed = tuple_keys(codes, widths)
    distinct, inverse = np.unique(keys, return_inverse=True)
    assert grouped.packed == packed
    assert grouped.keys.dtype == distinct.dtype and grouped.inverse.dtype == inverse.dtype
    assert grouped.keys.tolist() == distinct.tolist()
    assert grouped.inverse.tolist() == inverse.tolist()


def test_a_relabelling_that_merges_nothing_keeps_the_codes_and_order_given():
    # Codes in order (a one-to-one relabelling of a sorted table): nothing merges or moves, and
    # the table holds the codes as given, which its keys would decode to.
    table = _table(["a", "b"], [[0, 0, 1, 2], [0, 1, 1, 0]], [1, 2, 3, 4], np.array([1, 1, 2, 3]))
    given = [np.array([0, 0, 2, 3], dtype=np.int32), np.array([0, 1, 1, 0])]
    merged = table.merged(given, [4, 2])
    assert merged.rows.tolist() == [1, 2, 3, 4] and merged.people.tolist() == [1, 1, 2, 3]
    assert merged.codes("a").dtype == np.int64
    assert merged.codes("a").tolist() == [0, 0, 2, 3] and merged.codes("b").tolist() == [0, 1, 1, 0]
    keys = np.array([0, 1, 5, 6])
    decoded = CountTable.of_keys(["a", "b"], [4, 2], keys, merged.rows)
    assert decoded.codes("a").tolist() == merged.codes("a").tolist()
    assert merged.tuple_ids(["a"])[0].tolist() == [0, 0, 1, 2]


def test_merging_keys_too_wide_for_64_bits_renumbers_them():
    widths = [2**40, 2**40]
    codes = [np.array([2**39, 5, 2**39]), np.array([7, 7, 7])]
    merged = _table(["a", "b"], codes, [1, 2, 3]).merged(codes, widths)
    found = zip(merged.codes("a").tolist(), merged.rows.tolist(), strict=True)
    assert sorted(found) == [(5, 2), (2**39, 4)]


def test_recent_tables_keep_a_few_small_tables_of_several_columns():
    recent = RecentTables(kept=2, max_tuples=10)
    one, ab, bc, cd = (
        _table(["a"], [[0, 1]], [1, 1]),
        _table(["a", "b"], [[0, 1], [0, 0]], [1, 1], np.array([1, 1])),
        _table(["b", "c"], [[0], [0]], [2]),
        _table(["c", "d"], [[0], [0]], [2]),
    )
    for table in (one, ab, bc, cd):
        assert recent.keep(table) is table
    assert recent.get(["a"], False) is None  # a column alone is not kept
    assert recent.get(["a", "b"], False) is not None  # the most tuples: the costliest
    assert recent.get(["b", "c"], False) is None  # of two of one tuple, the older went
    assert recent.get(["c", "d"], False) is cd
    assert recent.get(["c", "d"], True) is None  # counted without people
    assert recent.get(["a", "b"], False).people is None  # people asked for, not given
    assert recent.get(["a", "b"], True) is ab
    big = _table(["x", "y"], [list(range(11)), [0] * 11], [1] * 11)
    recent.keep(big)
    assert recent.get(["x", "y"], False) is None  # more tuples than the bound


def test_recent_tables_past_their_tuples_let_the_oldest_go():
    recent = RecentTables(kept=3, max_tuples=5)
    ab = _table(["a", "b"], [[0, 1, 2], [0, 0, 0]], [1, 1, 1])
    bc = _table(["b", "c"], [[0, 1], [0, 1]], [1, 1])
    cd = _table(["c", "d"], [[0, 1], [0, 0]], [1, 1])
    for table in (ab, bc, cd):
        recent.keep(table)
    assert recent.get(["a", "b"], False) is None  # 7 tuples: the oldest went
    assert (recent.get(["b", "c"], False), recent.get(["c", "d"], False)) == (bc, cd)


CELLS = st.sampled_from(["a", "b", "c", "", "7", "07"])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(CELLS, CELLS, CELLS), min_size=1, max_size=40),
    relabel=st.dictionaries(CELLS, st.sampled_from(["a", "x", "y"]), max_size=4),
)
def test_a_recode_seen_through_counts_counts_the_recoded_rows(rows, relabel):
    frame = pd.DataFrame(rows, columns=["p", "q", "s"], dtype=object)
    plan = RecodePlan(labels={"p": relabel, "q": relabel}, drop=())
    source = PandasEngine(frame, people=People.of(frame))  # who the rows are, as sent
    recoded = Recoded(source, plan)
    expected = source.recode(plan)  # the rows recoded, then counted; people as sent
    sets = [["p"], ["q"], ["s"], ["p", "q"], ["p", "q", "s"], []]
    for ours, theirs in zip(
        recoded.counts(sets, people=True), expected.counts(sets, people=True), strict=True
    ):
        assert _decoded(recoded, ours) == _decoded(expected, theirs)
    assert recoded.duplicate_rows() == expected.duplicate_rows()


def _decoded(engine, table: CountTable) -> Counter:
    dictionaries = [engine.dictionary(c).tolist() for c in table.columns]
    return Counter(
        {
            tuple(d[c] for d, c in zip(dictionaries, codes, strict=True)): (int(n), int(p))
            for *codes, n, p in zip(
                *(table.codes(c) for c in table.columns), table.rows, table.people, strict=True
            )
        }
    )


def test_a_recode_seen_through_counts_refuses_people_by_key():
    frame = pd.DataFrame({"p": ["a", "b"]})
    keyed = PandasEngine(frame, people=People.of(frame, pd.Series(["k", "k"])))
    with pytest.raises(ValueError, match="person key"):
        Recoded(keyed, RecodePlan(labels={"p": {"a": "b"}}))

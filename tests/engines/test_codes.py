"""The fast encodings give exactly the codes of the plain pandas ones they replace."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.engines import codes
from broker.engines import pandas as pandas_engine
from broker.engines.base import CountTable
from broker.engines.codes import Grouping, combine, combined_counts, encode_column
from broker.engines.pandas import PandasEngine
from broker.metrics.report import ReportOptions, analyze

# Equal strings built separately are distinct objects; None, NaN and pd.NA are all missing.
ATOMS = st.sampled_from(
    ["a", "b", "".join(["a"]), "".join(["b"]), "", None, float("nan"), np.nan, pd.NA, 1, 1.0, "1"]
)


def plain_codes(values: pd.Series) -> np.ndarray:
    return pd.factorize(values, use_na_sentinel=False)[0]


@settings(max_examples=200, deadline=None)
@given(st.lists(ATOMS, min_size=1, max_size=60))
def test_object_columns_encode_as_pandas_factorize(items):
    values = np.empty(len(items), dtype=object)
    values[:] = items
    column = pd.Series(values)
    grouping = encode_column(column)
    expected = plain_codes(column)
    assert np.array_equal(grouping.codes, expected)
    assert grouping.categories == expected.max() + 1


def test_shared_and_separate_string_objects_are_one_category():
    shared = "Private"
    separate = "".join(["Pri", "vate"])
    assert shared is not separate
    column = pd.Series([shared, "Local-gov", separate, shared, None, np.nan], dtype=object)
    assert encode_column(column).codes.tolist() == [0, 1, 0, 0, 2, 2]


def test_strided_object_column_is_encoded_correctly():
    block = np.array([["x", "y", "x", "z"], ["p", "p", "q", "q"]], dtype=object).T
    column = pd.Series(block[:, 0])
    assert encode_column(column).codes.tolist() == [0, 1, 0, 2]


def test_counts_are_cached_and_read_only():
    grouping = encode_column(pd.Series(["a", "b", "a"]))
    counts = grouping.counts()
    assert counts.tolist() == [2, 1]
    assert grouping.counts() is counts
    assert not counts.flags.writeable


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from("abc"), st.integers(0, 300)),
        min_size=1,
        max_size=80,
    )
)
def test_combinations_group_rows_by_their_tuples(rows):
    frame = pd.DataFrame(rows, columns=["x", "y", "z"])
    grouping = combine([encode_column(frame[c]) for c in frame.columns])
    by_tuple = pd.factorize(pd.Series(list(map(tuple, rows))))[0]
    assert grouping.categories == by_tuple.max() + 1
    # The same partition of the rows (numbered differently is fine).
    assert np.array_equal(pd.factorize(grouping.codes)[0], by_tuple)


def test_threaded_encoding_gives_the_serial_codes(monkeypatch):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "n": rng.integers(0, 50, 500),
            "s": rng.choice(np.array(["a", "b", None], dtype=object), 500),
            "f": rng.choice([0.5, np.nan], 500),
        }
    )
    serial = PandasEngine(frame)
    monkeypatch.setattr(codes, "_THREADED_CELLS", 0)
    monkeypatch.setattr(codes, "_available_cores", lambda: 2)
    threaded = PandasEngine(frame)
    for name in frame.columns:
        assert np.array_equal(serial.grouping([name]).codes, threaded.grouping([name]).codes)
        assert serial.grouping([name]).categories == threaded.grouping([name]).categories


@pytest.mark.parametrize("width", [3, 5_000_000])
def test_tuple_ids_number_the_projections_as_np_unique_does(width):
    # Codes up to 3: a dense table; up to 5M per column: the hash-table path.
    rng = np.random.default_rng(width)
    first, second = rng.integers(0, width, 100), rng.integers(0, width, 100)
    table = CountTable.of(("a", "b", "v"), (first, second, rng.integers(0, 4, 100)), np.ones(100))
    ids, count = table.tuple_ids(["a", "b"])
    _uniques, inverse = np.unique(np.stack([first, second]), axis=1, return_inverse=True)
    assert count == inverse.max() + 1
    # The same partition of the tuples: equal ids exactly where np.unique's are equal.
    assert np.array_equal(ids[:, None] == ids[None, :], inverse[:, None] == inverse[None, :])


@pytest.mark.parametrize("dense_limit", [codes.DENSE_LIMIT, 4])
def test_combined_counts_are_the_combination_sizes(monkeypatch, dense_limit):
    monkeypatch.setattr(codes, "DENSE_LIMIT", dense_limit)  # 4: the hash-table path
    rng = np.random.default_rng(dense_limit)
    prefix = Grouping(rng.integers(0, 6, 200), 6)
    last = Grouping(rng.integers(0, 5, 200), 5)
    expected = combine([prefix, last]).counts()
    assert sorted(combined_counts(prefix, last)) == sorted(expected)
    assert combined_counts(prefix, last).sum() == 200


def test_threaded_combination_search_matches_serial(monkeypatch):
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({name: rng.integers(0, 6, 300) for name in "abcde"})
    serial = analyze(frame, options=ReportOptions(max_combination_size=3)).as_dict()["combinations"]
    monkeypatch.setattr(codes, "_THREADED_CELLS", 0)
    monkeypatch.setattr(codes, "_available_cores", lambda: 2)
    assert (
        analyze(frame, options=ReportOptions(max_combination_size=3)).as_dict()["combinations"]
        == serial
    )
    assert serial  # the case is not vacuous


def test_the_small_table_search_counts_as_the_hash_table_one(monkeypatch):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({name: rng.integers(0, 9, 400).astype(str) for name in "abcdef"})
    frame["id"] = [str(i) for i in range(400)]
    sets = [list(combo) for size in (1, 2, 3) for combo in combinations(frame.columns, size)]
    small = PandasEngine(frame).tuple_sizes(sets)
    monkeypatch.setattr(pandas_engine, "_SMALL_SEARCH_CELLS", 0)  # the prefix-sharing path
    large = PandasEngine(frame).tuple_sizes(sets)
    assert [sorted(s) for s in small] == [sorted(s) for s in large]
    assert all(s.sum() == 400 for s in small)

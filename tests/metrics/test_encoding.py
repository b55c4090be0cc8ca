"""The fast encodings give exactly the codes of the plain pandas ones they replace."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metrics.encoding import combine, encode_column

# Equal strings built separately are distinct objects; None, NaN and pd.NA are all missing.
ATOMS = st.sampled_from(
    ["a", "b", "".join(["a"]), "".join(["b"]), "", None, float("nan"), np.nan, pd.NA, 1, 1.0, "1"]
)


def plain_codes(values: pd.Series) -> np.ndarray:
    return pd.factorize(values, use_na_sentinel=False)[0]


@settings(max_examples=200, deadline=None)
@given(st.lists(ATOMS, min_size=1, max_size=60))
def test_object_columns_encode_as_pandas_factorize(items):
    column = pd.Series(np.array(items + [None], dtype=object)[:-1])
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

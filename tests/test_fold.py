"""``fold``: the spelling under which writings of one value agree (the people count in the worst
case reads each quasi-identifier's values by it). Hand-computed answers, and the same answers as
the column-at-once pandas writing it replaced, on any mix of values."""

import datetime
import decimal

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.columns.names import attribute_key
from broker.columns.numbers import numbers_of
from broker.columns.precision import _ASCII_KEYS, fold


def test_writings_of_one_value_agree_by_hand():
    values = pd.Series(
        ["F", " f ", "Ｆ", "f\u200b", "034", 34, 34.0, "3.4e1", None, np.nan, pd.NA, "", "  "],
        dtype=object,
    )
    assert fold(values).tolist() == ["f", "f", "f", "f"] + ["#34.0"] * 4 + [""] * 5


def test_what_is_not_read_as_a_number():
    values = pd.Series(
        [True, float("inf"), "-inf", "4e4920323432353234373736", b"AB", "1,5"], dtype=object
    )
    # Booleans and infinities stay words (folded by look-alikes: i reads as 1); bytes are
    # written as pandas writes them (decoded).
    expected = ["true", "1nf", "-1nf", "4e4920323432353234373736", "ab", "1,5"]
    assert fold(values).tolist() == expected


def test_no_values_and_a_plain_array():
    assert fold(pd.Series([], dtype=object)).tolist() == []
    assert fold(np.array(["A", "b"], dtype=object)).tolist() == ["a", "b"]


def _fold_with_pandas(values: pd.Series) -> np.ndarray:
    """The writing it replaced, a pandas operation per step over the whole column."""
    text = values.astype(object).where(values.notna(), "").reset_index(drop=True)
    numbers = numbers_of(text)
    plain = text.map(type).isin([str, int, float]).to_numpy()
    numeric = np.isfinite(numbers) & plain
    folded = np.empty(len(values), dtype=object)
    folded[numeric] = ["#" + repr(n) for n in numbers[numeric].tolist()]
    rest = np.flatnonzero(~numeric)
    words = text[rest].astype(str)
    ascii_ = words.map(str.isascii).to_numpy(dtype=bool)
    folded[rest[ascii_]] = (
        words[ascii_].str.translate(_ASCII_KEYS).to_numpy(dtype=object) if ascii_.any() else []
    )
    for i in rest[~ascii_].tolist():
        folded[i] = attribute_key(str(text[i])).replace(" ", "")
    folded[rest[words.str.strip().eq("").to_numpy(dtype=bool)]] = ""
    return folded


_VALUES = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=" 0123456789.-+eE,", max_size=8),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.just(pd.NA),
    st.binary(max_size=4).filter(lambda b: b.isascii()),
    st.decimals(allow_nan=False, places=2, max_value=10**6, min_value=-(10**6)),
    st.dates(),
    st.sampled_from(["Ｆ", "ﬁ", "İ", "ß", "\u00a0", "1\u200b2", "٣٤", "Ⅻ"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, max_size=12))
def test_the_same_as_the_pandas_writing(values):
    column = pd.Series(values, dtype=object)
    assert fold(column).tolist() == _fold_with_pandas(column).tolist()


def test_the_same_on_a_wide_dictionary():
    rng = np.random.default_rng(3)
    values = [f" Rue {i}" if i % 3 else str(i) for i in rng.integers(0, 10**6, 5000)]
    values += [decimal.Decimal("2.50"), datetime.date(2020, 1, 2), "Éa", 7]
    column = pd.Series(values, dtype=object)
    assert fold(column).tolist() == _fold_with_pandas(column).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, max_size=12))
def test_numbers_as_pandas_reads_a_column_of_them(values):
    huge = [isinstance(v, str) and "e" in v.lower() and len(v) > 5 for v in values]
    values = [None if h else v for v, h in zip(values, huge, strict=True)]  # the guarded text
    column = pd.Series(values, dtype=object)
    expected = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    np.testing.assert_array_equal(numbers_of(values), expected)

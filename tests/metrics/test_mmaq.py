"""Mmaq against SPEC's worked values, exact rational arithmetic, and its defining properties."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metrics.mmaq import (
    ANONYMOUS,
    IDENTIFIER,
    QUASI_IDENTIFIER,
    format_power_of_ten,
    mmaq,
    mmaq_from_counts,
)

# SPEC section 2, computed independently: counts, N, S, Hn, log10 P, log10 Mmaq, index, class
WORKED_VALUES = [
    ([1] * 200, 200, 200, 1.0, -460.2060, -460.2060, 1.0, IDENTIFIER),
    ([200], 200, 1, 0.0, 0.0, 0.0, 0.0, ANONYMOUS),
    ([1] * 190 + [2] * 5, 200, 195, 0.993459, -447.1957, -445.0114, 0.966983, QUASI_IDENTIFIER),
    ([2] * 100, 200, 100, 0.869176, -200.0, -199.1167, 0.432669, QUASI_IDENTIFIER),
    ([20] * 10, 200, 10, 0.434588, -10.0, -9.7524, 0.021191, QUASI_IDENTIFIER),
    ([5, 4], 9, 2, 0.312650, -0.6075, -0.4446, 0.051773, QUASI_IDENTIFIER),
]


@pytest.mark.parametrize(
    ("counts", "n", "s", "hn", "log_p", "log_mmaq", "index", "klass"), WORKED_VALUES
)
def test_spec_worked_values(counts, n, s, hn, log_p, log_mmaq, index, klass):
    m = mmaq_from_counts(counts)
    assert (m.rows, m.categories, m.attribute_class) == (n, s, klass)
    assert m.shannon_normalized == pytest.approx(hn, abs=5e-7)
    assert m.log10_stabilizer == pytest.approx(log_p, abs=5e-5)
    assert m.log10_mmaq == pytest.approx(log_mmaq, abs=5e-5)
    assert m.mmaq_index == pytest.approx(index, abs=5e-7)


def test_identifier_of_200_rows_is_reported_without_underflow():
    m = mmaq_from_counts([1] * 200)
    assert m.mmaq == "6.223e-461"  # N^-N, which float64 cannot hold
    assert m.log10_mmaq == pytest.approx(-200 * math.log10(200))


def test_frame_api_counts_missing_values_as_a_category():
    frame = pd.DataFrame({"sex": ["F", "F", None, None, np.nan, "M"]})
    assert mmaq(frame, "sex").categories == 3  # None and NaN are both "missing"


def test_combination_of_columns_counts_distinct_tuples():
    frame = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["1", "2", "1", "1"]})
    m = mmaq(frame, ["a", "b"])
    assert (m.categories, m.rows) == (3, 4)


def test_numbers_and_strings_compare_as_written():
    frame = pd.DataFrame({"code": ["007", "7", "7.0", "007"]})
    assert mmaq(frame, "code").categories == 3


def test_unicode_values():
    frame = pd.DataFrame({"city": ["Thiès", "Thiès", "Saint-Louis", "Ziguinchor", "Thies"]})
    assert mmaq(frame, "city").categories == 4


def test_one_row_is_an_identifier():
    m = mmaq_from_counts([1])
    assert (m.attribute_class, m.mmaq, m.mmaq_index) == (IDENTIFIER, "1.000e+00", 1.0)


def test_no_rows_has_no_measure():
    with pytest.raises(ValueError, match="no rows"):
        mmaq_from_counts([])
    with pytest.raises(ValueError, match="no rows"):
        mmaq(pd.DataFrame({"a": []}), "a")


def test_unknown_column_is_named():
    with pytest.raises(ValueError, match="'zip'"):
        mmaq(pd.DataFrame({"a": [1]}), "zip")


@pytest.mark.parametrize(
    ("log10_value", "text"),
    [
        (-460.20599913279624, "6.223e-461"),
        (0.0, "1.000e+00"),
        (-0.4446331579198, "3.592e-01"),
        (-2.99999999, "1.000e-03"),  # mantissa rounds up to 10: the exponent moves
        (-1e-12, "1.000e+00"),
    ],
)
def test_format_power_of_ten(log10_value, text):
    assert format_power_of_ten(log10_value) == text


def exact_mmaq(counts: list[int]) -> tuple[Fraction, Fraction]:
    """(log-free) exact P and 1 - Hn scaled: returns P and sum n ln n / (N ln N) pieces."""
    n = sum(counts)
    p = Fraction(1)
    for c in counts:
        p *= Fraction(c, n)
    return p, n


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=12))
def test_stabilizer_matches_exact_rational_product(counts):
    """log10 P from the log-space code equals log10 of the exact rational product."""
    exact_p, _ = exact_mmaq(counts)
    m = mmaq_from_counts(counts)
    exact_log10 = math.log10(exact_p.numerator) - math.log10(exact_p.denominator)
    assert m.log10_stabilizer == pytest.approx(exact_log10, abs=1e-9)
    if m.attribute_class == QUASI_IDENTIFIER:
        # 1 - Hn = ln(prod n_i^n_i) / ln(N^N): both are exact integers before the logarithm.
        n = sum(counts)
        numerator = math.prod(c**c for c in counts)
        one_minus_hn = math.log(numerator) / (n * math.log(n))
        assert m.log10_mmaq == pytest.approx(exact_log10 - math.log10(one_minus_hn), abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=40))
def test_mmaq_range_and_class_rules(counts):
    m = mmaq_from_counts(counts)
    n, s = sum(counts), len(counts)
    assert m.log10_mmaq <= 0.0
    assert 0.0 <= m.mmaq_index <= 1.0
    assert 0.0 <= m.shannon_normalized <= 1.0
    if n == 1 or s == n:
        assert m.attribute_class == IDENTIFIER
        assert m.log10_mmaq == pytest.approx(-n * math.log10(n))
    elif s == 1:
        assert m.attribute_class == ANONYMOUS
        assert m.log10_mmaq == 0.0
    else:
        assert m.attribute_class == QUASI_IDENTIFIER
        assert m.log10_mmaq < 0.0  # 0 < Mmaq < 1 strictly
        # SPEC: the largest value is 0.528 (N=3, counts 2,1; exactly 0.52832, hence 0.5284)
        assert 10**m.log10_mmaq <= 0.5284


def test_largest_quasi_identifier_value():
    assert mmaq_from_counts([2, 1]).mmaq == "5.283e-01"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", None]), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
)
def test_invariant_under_row_order_and_renaming(values, rnd):
    shuffled = values[:]
    rnd.shuffle(shuffled)
    renamed = [None if v is None else f"value-{v}" for v in shuffled]
    base = mmaq(pd.DataFrame({"x": values}), "x")
    assert mmaq(pd.DataFrame({"x": shuffled}), "x") == base
    other = mmaq(pd.DataFrame({"x": renamed}), "x")
    assert other.log10_mmaq == pytest.approx(base.log10_mmaq)
    assert other.categories == base.categories

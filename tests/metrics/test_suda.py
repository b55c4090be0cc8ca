"""SUDA against an independent brute force and against the figures sdcMicro's own tests state.

The oracle enumerates every key set of every record, tests uniqueness by counting tuples with a
Counter, keeps the unique sets no smaller unique set lies inside (minimal), and computes scores,
contributions and DIS with exact rationals (the power in DIS-SUDA in 40-digit decimals).
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal, getcontext
from fractions import Fraction
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metrics.suda import MAX_KEY_SETS, suda_of_frame
from tests.shared_data import DATA

REFS = DATA / "refs" / "suda" if (DATA / "refs" / "suda").is_dir() else None


def oracle(records: list[tuple], dis_fraction: float = 0.01, max_size: int | None = None) -> dict:
    keys = len(records[0])
    limit = keys if max_size is None else max_size
    sets = [s for size in range(1, keys + 1) for s in combinations(range(keys), size)]
    held = {s: Counter(tuple(r[j] for j in s) for r in records) for s in sets}
    msus, scores, contributions = [], [], []
    for record in records:
        unique = [s for s in sets if held[s][tuple(record[j] for j in s)] == 1]
        minimal: list[frozenset] = []
        for s in sorted(unique, key=len):
            if not any(m <= frozenset(s) for m in minimal):
                minimal.append(frozenset(s))
        counted = [m for m in minimal if len(m) <= limit]
        msus.append(len(counted))
        scores.append(sum(Fraction(math.factorial(keys - len(m))) for m in counted))
        contributions.append(
            [
                sum(Fraction(math.factorial(keys - len(m))) for m in counted if j in m)
                for j in range(keys)
            ]
        )
    whole = Counter(records)
    uniques = sum(1 for r in records if whole[r] == 1)
    in_pairs = sum(1 for r in records if whole[r] == 2)
    f = Fraction(dis_fraction)
    getcontext().prec = 40
    dis_scores = [0.0] * len(records)
    if uniques:
        dis = uniques * f / (uniques * f + in_pairs * (1 - f))
        q = Decimal(1) + Decimal(8 - keys) / Decimal(20)
        powered = [Decimal(s.numerator) / Decimal(s.denominator) for s in scores]
        powered = [p**q if p else Decimal(0) for p in powered]
        adjustment = sum((1 / p for p in powered if p), Decimal(0))
        gap = uniques / dis - uniques
        gap_decimal = Decimal(gap.numerator) / Decimal(gap.denominator)
        dis_scores = [
            float(1 / (1 + gap_decimal / (p * adjustment))) if p else 0.0 for p in powered
        ]
    total = sum(scores)
    carried = [sum(c[j] for c in contributions) for j in range(keys)]
    return {
        "msus": msus,
        "scores": [float(s) for s in scores],
        "dis": dis_scores,
        "attribute": [float(100 * c / total) if total else 0.0 for c in carried],
    }


def assert_matches(frame: pd.DataFrame, dis_fraction: float = 0.01, max_size: int | None = None):
    columns = list(frame.columns)
    records = [tuple(row) for row in frame.astype(object).itertuples(index=False)]
    expected = oracle(records, dis_fraction, max_size)
    found = suda_of_frame(frame, columns, dis_fraction=dis_fraction, max_msu_size=max_size)
    assert found.msus.tolist() == expected["msus"]
    np.testing.assert_allclose(found.scores, expected["scores"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(found.dis_scores, expected["dis"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        list(found.attribute_contributions.values()), expected["attribute"], rtol=0, atol=1e-9
    )
    return found


# The figures sdcMicro's own test file states (tests/testthat/test_suda2.R), checked by hand too.
def test_sdc_guideline_scores_as_sdcmicro_states():
    frame = pd.DataFrame(
        {
            "residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
            "gender": ["F", "F", "F", "M", "F", "M", "F", "M", "F", "F"],
            "education": ["SI", "SI", "PI", "SC", "SC", "SC", "PC", "PS", "SI", "SI"],
            "labor": ["E", "E", "N", "E", "U", "E", "N", "U", "N", "N"],
        }
    )
    # Row 4: Rural alone (3! = 6) and three pairs {F,U}, {SC,U}, {F,SC} (1! each... weight 2! = 2)
    assert suda_of_frame(frame, list(frame.columns)).scores.tolist() == [
        0, 0, 6, 0, 12, 0, 6, 10, 0, 0
    ]  # fmt: skip
    assert_matches(frame)


def test_book_example_scores_as_sdcmicro_states():
    frame = pd.DataFrame(
        {
            "age": ["20s"] * 7 + ["60s"],
            "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
            "income": ["50k+"] * 2 + ["50k-"] * 6,
            "education": ["hs"] * 4 + ["uni", "hs", "ms", "uni"],
        }
    )
    assert suda_of_frame(frame, list(frame.columns)).scores[4:].tolist() == [4, 2, 6, 8]


@pytest.mark.parametrize("order", [["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"]])
def test_attribute_contributions_as_sdcmicro_states(order):
    frame = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})[order]
    found = suda_of_frame(frame, order)
    assert found.attribute_contributions == {"a": 50.0, "b": 37.5, "c": 37.5}
    # By hand: row 0 has a=2 alone (2! = 2); row 1 b=3 and c=6 alone (2 each); row 2 {a,b}
    # and {a,c} (1! each).
    assert found.scores.tolist() == [2, 4, 2]


def test_hand_computed_dis_scores():
    # 2 keys: Q = 1.3. Tuples (0,0) and (1,0) unique, (1,1) twice: U = 2, P = 2.
    frame = pd.DataFrame({"a": [0, 1, 1, 1], "b": [0, 0, 1, 1]})
    found = suda_of_frame(frame, ["a", "b"], dis_fraction=0.5)
    assert found.scores.tolist() == [1, 1, 0, 0]  # a=0 alone; {a,b}=(1,0)
    dis = 2 * 0.5 / (2 * 0.5 + 2 * 0.5)  # 0.5
    gap = 2 / dis - 2  # 2; A = 1 + 1 = 2
    assert found.dis_scores[:2].tolist() == pytest.approx([1 / (1 + gap / 2)] * 2)
    assert found.dis_scores[2:].tolist() == [0, 0]


@pytest.mark.skipif(REFS is None, reason="sdcMicro's example data sets (../shared) are absent")
@pytest.mark.parametrize(
    "name", ["francdat.csv", "free1_3keys.csv", "testdata2_5keys.csv", "testdata_7keys.csv"]
)
@pytest.mark.parametrize("dis_fraction", [0.01, 0.1])
def test_sdcmicro_data_sets_match_the_brute_force(name, dis_fraction):
    frame = pd.read_csv(REFS / name, dtype=str).drop(columns="record_id")
    found = assert_matches(frame, dis_fraction)
    assert found.scores.size == len(frame)


@pytest.mark.skipif(REFS is None, reason="sdcMicro's example data sets (../shared) are absent")
@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_bounded_search_counts_the_small_msus_with_full_weights(limit):
    frame = pd.read_csv(REFS / "testdata2_5keys.csv", dtype=str).drop(columns="record_id")
    assert_matches(frame, max_size=limit)


tables = st.integers(1, 5).flatmap(
    lambda keys: st.lists(
        st.tuples(*[st.sampled_from([0, 1, 2, None]) for _ in range(keys)]),
        min_size=1,
        max_size=25,
    )
)


@settings(max_examples=150, deadline=None)
@given(tables, st.sampled_from([0.01, 0.3, 1.0]), st.integers(1, 5))
def test_random_tables_match_the_brute_force(rows, dis_fraction, limit):
    frame = pd.DataFrame(rows, columns=[f"k{j}" for j in range(len(rows[0]))], dtype=object)
    assert_matches(frame, dis_fraction, min(limit, frame.shape[1]))


def test_identical_rows_are_not_unique_and_missing_is_a_category():
    frame = pd.DataFrame({"a": ["x", "x", None, "y"], "b": ["1", "1", "1", "1"]})
    found = suda_of_frame(frame, ["a", "b"])
    assert found.scores.tolist() == [0, 0, 1, 1]  # None and y each alone on a: (2-1)! = 1
    assert found.msus.tolist() == [0, 0, 1, 1]


def test_riskiest_rows_first():
    frame = pd.DataFrame({"a": [2, 1, 1, 5, 5], "b": [0, 3, 0, 9, 9], "c": [0, 6, 0, 1, 1]})
    found = suda_of_frame(frame, ["a", "b", "c"])
    assert found.riskiest(2).tolist() == [1, 0]  # scores 4, 2, 2: the earlier row on a tie
    assert 3 not in found.riskiest(10)


def test_bad_arguments_name_the_problem():
    frame = pd.DataFrame({"a": [1, 2], "b": [1, 1]})
    with pytest.raises(ValueError, match="'zip'"):
        suda_of_frame(frame, ["a", "zip"])
    with pytest.raises(ValueError, match="'a' is named more than once"):
        suda_of_frame(frame, ["a", "b", "a"])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        suda_of_frame(frame, ["a"], dis_fraction=0)
    with pytest.raises(ValueError, match="between 1 and 2"):
        suda_of_frame(frame, ["a", "b"], max_msu_size=3)
    wide = pd.DataFrame({f"k{j}": [0, 1] for j in range(15)})
    with pytest.raises(ValueError, match=f"more than {MAX_KEY_SETS}"):
        suda_of_frame(wide, list(wide.columns))
    assert suda_of_frame(wide, list(wide.columns), max_msu_size=2).msus.tolist() == [15, 15]

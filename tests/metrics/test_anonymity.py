"""k, l, t against the paper's Table 1, hand-computed values, brute force, and pycanon."""

import io
import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from broker.datasets.reading import read_dataset
from broker.metrics.anonymity import CATEGORICAL, ORDERED, k_anonymity, sensitive_measure
from broker.metrics.report import ReportOptions, analyze

FIXTURES = Path(__file__).parents[1] / "fixtures"


def read_fixture(name: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURES / name, dtype=str, keep_default_na=False)


def test_paper_table1_anonymized_is_3_anonymous():
    result = k_anonymity(read_fixture("patients_anonymized.csv"), ["Age", "Gender"])
    assert (result.k, result.equivalence_classes) == (3, 3)
    assert result.class_size_histogram == {3: 3}
    assert result.prosecutor_risk.max == pytest.approx(1 / 3)
    assert result.prosecutor_risk.unique_share == 0.0


def test_paper_table1_original_is_1_anonymous():
    result = k_anonymity(read_fixture("patients_original.csv"), ["Age", "Gender"])
    assert (result.k, result.equivalence_classes) == (1, 9)
    assert result.prosecutor_risk.unique_share == 1.0


def test_prosecutor_risk_average_is_over_rows():
    frame = pd.DataFrame({"q": ["a", "a", "a", "b"]})
    risk = k_anonymity(frame, ["q"]).prosecutor_risk
    assert (risk.max, risk.average, risk.unique_share) == (1.0, 0.5, 0.25)


def test_hand_computed_l_and_t_categorical():
    # class A: flu, flu, hiv ; class B: flu, cold. Table: flu 3/5, hiv 1/5, cold 1/5.
    frame = pd.DataFrame({"q": list("AAABB"), "s": ["flu", "flu", "hiv", "flu", "cold"]})
    m = sensitive_measure(frame, ["q"], "s")
    assert m.l_diversity == 2
    # entropy l: class A H = -(2/3 ln 2/3 + 1/3 ln 1/3); class B: ln 2
    h_a = -(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3))
    assert m.entropy_l_diversity == pytest.approx(np.exp(min(h_a, np.log(2))))
    # TV A: .5(|2/3-3/5| + |1/3-1/5| + |0-1/5|) = .5(1/15+2/15+3/15) = 0.2
    # TV B: .5(|1/2-3/5| + |0-1/5| + |1/2-1/5|) = .5(.1+.2+.3) = 0.3
    assert m.t_closeness == pytest.approx(0.3)
    assert m.t_closeness_method == CATEGORICAL


def brute_ordered_emd(frame, qi, sensitive) -> Fraction:
    """Li et al.'s ordered EMD with exact fractions, one class at a time."""
    values = sorted(frame[sensitive].astype(float).unique())
    n = len(frame)
    whole = [Fraction(int((frame[sensitive].astype(float) == v).sum()), n) for v in values]
    worst = Fraction(0)
    for _, group in frame.groupby(qi, dropna=False):
        size = len(group)
        part = [Fraction(int((group[sensitive].astype(float) == v).sum()), size) for v in values]
        running, total = Fraction(0), Fraction(0)
        for p, q in zip(part, whole, strict=True):
            running += p - q
            total += abs(running)
        worst = max(worst, total / (len(values) - 1))
    return worst


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(0, 9)), min_size=2, max_size=80))
def test_ordered_emd_matches_exact_brute_force(rows):
    frame = pd.DataFrame(rows, columns=["q", "s"]).astype(str)
    if frame["s"].nunique() < 2:
        return
    m = sensitive_measure(frame, ["q"], "s")
    assert m.t_closeness_method == ORDERED
    assert m.t_closeness == pytest.approx(float(brute_ordered_emd(frame, ["q"], "s")), abs=1e-12)


def test_numbers_order_numerically_not_as_text():
    # As text "10" < "9"; numerically 9 < 10. Class X holds the low values, Y the high ones.
    frame = pd.DataFrame({"q": ["X", "X", "Y", "Y"], "s": ["9", "8", "10", "11"]})
    m = sensitive_measure(frame, ["q"], "s")
    assert m.t_closeness_method == ORDERED
    assert m.t_closeness == pytest.approx(float(brute_ordered_emd(frame, ["q"], "s")))


def test_one_non_number_makes_the_attribute_categorical():
    frame = pd.DataFrame({"q": ["X", "X", "Y", "Y"], "s": ["1", "2", "3", "n/a"]})
    assert sensitive_measure(frame, ["q"], "s").t_closeness_method == CATEGORICAL


def test_errors_name_the_column():
    frame = pd.DataFrame({"q": ["a"], "s": ["b"]})
    with pytest.raises(ValueError, match="Quasi-identifier 'zip'"):
        k_anonymity(frame, ["zip"])
    with pytest.raises(ValueError, match="Sensitive attribute 'x'"):
        sensitive_measure(frame, ["q"], "x")
    with pytest.raises(ValueError, match="no rows"):
        k_anonymity(frame.iloc[:0], ["q"])


def generated_frame(seed: int, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(20, 24, rows).astype(str),
            "sex": rng.choice(["F", "M"], rows),
            "zip": rng.choice(["570", "571", "572"], rows),
            "disease": rng.choice(["flu", "hiv", "cold", "measles"], rows, p=[0.5, 0.1, 0.3, 0.1]),
            "income": rng.integers(1, 8, rows),
        }
    )


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_pycanon_on_generated_data(seed):
    frame = generated_frame(seed, 300)
    qi = ["age", "sex", "zip"] if seed % 2 else ["age", "sex"]
    assert k_anonymity(frame, qi).k == pycanon.k_anonymity(frame, qi)
    disease = sensitive_measure(frame, qi, "disease")
    assert disease.l_diversity == pycanon.l_diversity(frame, qi, ["disease"])
    assert disease.t_closeness == pytest.approx(pycanon.t_closeness(frame, qi, ["disease"]))
    # pycanon truncates entropy l to an integer
    truncated = pycanon.entropy_l_diversity(frame, qi, ["disease"])
    assert truncated - 1e-9 <= disease.entropy_l_diversity < truncated + 1 + 1e-9
    income = sensitive_measure(frame, qi, "income")
    assert income.t_closeness_method == ORDERED
    assert income.t_closeness == pytest.approx(pycanon.t_closeness(frame, qi, ["income"]))


# --- blank cells in a numeric sensitive column ---------------------------------------------------

# Three classes of a numeric sensitive attribute with one empty cell, as each format writes it.
BLANK_CELL_ROWS = [("A", 1), ("A", 2), ("A", None), ("B", 3), ("B", 4), ("B", 5)]
BLANK_CELL_ROWS += [("C", 1), ("C", 5), ("C", 2), ("C", 9)]


def exact_t_missing_last(rows: list[tuple[str, object]]) -> Fraction:
    """Li et al.'s ordered EMD in exact fractions: a missing value ranked after every number,
    None before blank strings, ties (spellings of one number, blanks) broken by the text."""

    def key(value):
        if value is None:
            return (1, Fraction(0), "")
        if not str(value).strip():
            return (2, Fraction(0), value)
        return (0, Fraction(str(value)), str(value))

    values = sorted({v for _, v in rows}, key=key)
    whole = Counter(v for _, v in rows)
    worst = Fraction(0)
    for group in {q for q, _ in rows}:
        part = Counter(v for q, v in rows if q == group)
        size = sum(part.values())
        running = total = Fraction(0)
        for value in values:
            running += Fraction(part[value], size) - Fraction(whole[value], len(rows))
            total += abs(running)
        worst = max(worst, total / (len(values) - 1))
    return worst


def _as_csv(rows) -> bytes:
    return ("q,s\n" + "".join(f"{q},{'' if s is None else s}\n" for q, s in rows)).encode()


def _as_json(rows) -> bytes:
    return json.dumps([{"q": q, "s": s} for q, s in rows]).encode()


def _as_parquet(rows) -> bytes:
    buffer = io.BytesIO()
    frame = pd.DataFrame(rows, columns=["q", "s"]).astype({"s": "Int64"})
    frame.to_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("write", "name"), [(_as_csv, "a.csv"), (_as_json, "a.json"), (_as_parquet, "a.parquet")]
)
def test_a_blank_cell_keeps_a_numeric_attribute_ordered_in_every_format(write, name):
    frame = read_dataset(write(BLANK_CELL_ROWS), name).frame
    [measure] = analyze(frame, ["q"], ["s"], ReportOptions(max_combination_size=0)).sensitive
    assert measure.t_closeness_method == ORDERED
    expected = exact_t_missing_last(BLANK_CELL_ROWS)
    assert expected == Fraction(17, 90)  # by hand: class B (3, 4, 5), with m = 7 ranks
    assert measure.t_closeness == pytest.approx(float(expected), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("ABC"), st.sampled_from(["1", "2", "7", "007", "10", "", " "])),
        min_size=2,
        max_size=60,
    )
)
def test_blank_strings_rank_last_like_missing_values(rows):
    frame = pd.DataFrame(rows, columns=["q", "s"])
    numbers = {s for _, s in rows if s.strip()}
    if len(numbers) < 2:
        return
    m = sensitive_measure(frame, ["q"], "s")
    assert m.t_closeness_method == ORDERED
    assert m.t_closeness == pytest.approx(float(exact_t_missing_last(rows)), abs=1e-12)


# --- entropy l-diversity, exact where the value is rational -------------------------------------


def frame_of_classes(classes: list[list[int]]) -> pd.DataFrame:
    """One class per list, holding a sensitive value v<j> count times for each count."""
    rows = [
        (f"c{i}", f"v{j}")
        for i, counts in enumerate(classes)
        for j, n in enumerate(counts)
        for _ in range(n)
    ]
    return pd.DataFrame(rows, columns=["q", "s"])


def exact_perplexity(counts: list[int]) -> Fraction | float:
    """exp(H) of one class: ``n / (prod c^c)^(1/n)``, a Fraction when the root is an integer
    (checked in big integers), else a float from an accurately summed H."""
    n = sum(counts)
    power = math.prod(c**c for c in counts)
    guess = round(math.exp(math.fsum(c * math.log(c) for c in counts) / n))
    for root in (guess - 1, guess, guess + 1):
        if root > 0 and root**n == power:
            return Fraction(n, root)
    return math.exp(math.log(n) - math.fsum(c * math.log(c) for c in counts) / n)


CLASS_COUNTS = st.one_of(
    st.lists(st.integers(1, 12), min_size=1, max_size=6),
    st.builds(lambda n, d: [n] * d, st.integers(1, 40), st.integers(1, 9)),  # equally frequent
    st.builds(lambda m: [m, m, m, m, 4 * m], st.integers(1, 6)),  # unequal, exp(H) = 4
)


@settings(max_examples=150, deadline=None)
@given(st.lists(CLASS_COUNTS, min_size=1, max_size=5))
def test_entropy_l_is_exact_where_the_value_is_rational(classes):
    measured = sensitive_measure(frame_of_classes(classes), ["q"], "s").entropy_l_diversity
    expected = min((exact_perplexity(c) for c in classes), key=float)
    if isinstance(expected, Fraction):
        assert measured == float(expected)  # exactly: 1, not 0.9999999999999996
    else:
        assert measured == pytest.approx(expected, rel=1e-13)


def test_entropy_l_of_a_one_valued_class_is_exactly_one():
    # Six rows of one value: ln 6 - 6 ln 6 / 6 is not 0 in floats.
    frame = frame_of_classes([[6], [3, 3, 3]])
    assert sensitive_measure(frame, ["q"], "s").entropy_l_diversity == 1.0

"""(alpha, k)-anonymity, recursive (c, l)-diversity, beta-likeness and delta-disclosure: pycanon,
exact fractions from the rows, hand-computed values."""

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from broker.metrics.anonymity import k_anonymity, sensitive_measure
from broker.metrics.report import ReportOptions, analyze
from tests.metrics.test_anonymity import generated_frame


def classes_of(frame: pd.DataFrame, qi: list[str], sensitive: str) -> list[Counter]:
    """Each equivalence class's sensitive values with their rows, straight from the rows."""
    classes: dict[tuple, Counter] = {}
    for key, value in zip(
        frame[qi].itertuples(index=False), frame[sensitive].tolist(), strict=True
    ):
        classes.setdefault(tuple(key), Counter())[value] += 1
    return list(classes.values())


def exact_alpha(classes: list[Counter]) -> Fraction:
    return max(Fraction(max(c.values()), sum(c.values())) for c in classes)


# Rows of one class (q), one sensitive value (s) each: small enough to reach every shape.
CLASS_ROWS = st.lists(
    st.tuples(st.sampled_from("abc"), st.sampled_from(["flu", "hiv", "cold", "", "é"])),
    min_size=1,
    max_size=40,
)


def frame_of(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["q", "s"])


# --- (alpha, k)-anonymity ---------------------------------------------------------------------


def test_hand_computed_alpha():
    # class A: flu, flu, hiv (flu 2/3); class B: flu, cold, cold, hiv (cold 2/4).
    frame = pd.DataFrame(
        {"q": list("AAABBBB"), "s": ["flu", "flu", "hiv", "flu", "cold", "cold", "hiv"]}
    )
    assert sensitive_measure(frame, ["q"], "s").alpha == 2 / 3
    one_class = frame.assign(q="A")  # flu 3/7
    assert sensitive_measure(one_class, ["q"], "s").alpha == 3 / 7


@pytest.mark.parametrize("seed", range(6))
def test_alpha_agrees_with_pycanon(seed):
    frame = generated_frame(seed, 300)
    qi = ["age", "sex", "zip"] if seed % 2 else ["age", "sex"]
    for sensitive in ("disease", "income"):
        measure = sensitive_measure(frame, qi, sensitive)
        their_alpha, their_k = pycanon.alpha_k_anonymity(frame, qi, [sensitive])
        assert measure.alpha == pytest.approx(their_alpha, rel=1e-15)
        assert k_anonymity(frame, qi).k == their_k
        assert measure.alpha == float(exact_alpha(classes_of(frame, qi, sensitive)))


@settings(max_examples=80, deadline=None)
@given(CLASS_ROWS)
def test_alpha_is_the_exact_largest_share(rows):
    frame = frame_of(rows)
    assert sensitive_measure(frame, ["q"], "s").alpha == float(
        exact_alpha(classes_of(frame, ["q"], "s"))
    )


def test_alpha_is_in_the_report_with_several_sensitive_attributes():
    # With two sensitive attributes each is measured within the classes of (q, the other).
    frame = pd.DataFrame({"q": list("aaaa"), "s": list("xxyy"), "u": list("1122")})
    report = analyze(frame, ["q"], ["s", "u"], ReportOptions(max_combination_size=0)).as_dict()
    assert [s["alpha"] for s in report["sensitive"]] == [1.0, 1.0]
    assert (
        analyze(frame, ["q"], ["s"], ReportOptions(max_combination_size=0)).sensitive[0].alpha
        == 0.5
    )


# --- recursive (c, l)-diversity ---------------------------------------------------------------


def exact_recursive_bound(classes: list[Counter], l: int) -> Fraction:
    """max over classes of r_1 / (r_l + ... + r_m), r sorted from the most frequent."""
    bounds = []
    for counter in classes:
        r = sorted(counter.values(), reverse=True)
        bounds.append(Fraction(r[0], sum(r[l - 1 :])))
    return max(bounds)


def test_hand_computed_recursive_c_l():
    # class A: 4 flu, 1 hiv, 1 cold; class B: 2 flu, 2 hiv, 1 cold. Distinct l = 3.
    diseases = ["flu"] * 4 + ["hiv", "cold"] + ["flu", "hiv"] * 2 + ["cold"]
    frame = pd.DataFrame({"q": ["A"] * 6 + ["B"] * 5, "s": diseases})
    measure = sensitive_measure(frame, ["q"], "s")
    # l = 2: A 4 / (1 + 1) = 2, B 2 / (2 + 1); l = 3: A 4 / 1 = 4, B 2 / 1 = 2.
    assert measure.recursive_c_bounds == (2.0, 4.0)
    assert measure.recursive_c == 5  # 4 < 5 * 1; c = 4 fails (4 < 4 is false)


def test_pycanon_takes_the_least_frequent_value_for_r1():
    """pycanon 1.3.5 sorts a class's counts ascending: for (4, 1, 1) it reads r_1 = 1 and
    reports c = 1, which the paper's r_1 = 4 < c * 1 refutes."""
    frame = pd.DataFrame({"q": ["A"] * 6, "s": ["flu"] * 4 + ["hiv", "cold"]})
    assert pycanon.recursive_c_l_diversity(frame, ["q"], ["s"]) == (1, 3)
    measure = sensitive_measure(frame, ["q"], "s")
    assert (measure.recursive_c, measure.l_diversity) == (5, 3)


@pytest.mark.parametrize("seed", range(6))
def test_recursive_c_agrees_with_pycanon_where_its_order_does_not_matter(seed):
    """Classes whose values are equally frequent: r_1 is then the same whichever end it is
    read from, and pycanon's pair must be ours."""
    rng = np.random.default_rng(seed)
    rows = []
    for cls in range(6):
        values = rng.choice(["flu", "hiv", "cold", "mumps", "polio"], rng.integers(2, 6), False)
        times = int(rng.integers(1, 4))
        rows += [(str(cls), value) for value in values for _ in range(times)]
    frame = pd.DataFrame(rows, columns=["q", "s"])
    measure = sensitive_measure(frame, ["q"], "s")
    assert pycanon.recursive_c_l_diversity(frame, ["q"], ["s"]) == (
        measure.recursive_c,
        measure.l_diversity,
    )


@settings(max_examples=80, deadline=None)
@given(CLASS_ROWS)
def test_recursive_bounds_are_the_exact_ones_of_the_paper(rows):
    frame = frame_of(rows)
    classes = classes_of(frame, ["q"], "s")
    measure = sensitive_measure(frame, ["q"], "s")
    assert len(measure.recursive_c_bounds) == max(measure.l_diversity - 1, 0)
    for l, bound in enumerate(measure.recursive_c_bounds, start=2):
        exact = exact_recursive_bound(classes, l)
        assert bound == float(exact)
        if l == measure.l_diversity:
            assert measure.recursive_c == exact.numerator // exact.denominator + 1
    if measure.l_diversity == 1:
        assert measure.recursive_c is None


# --- beta-likeness ----------------------------------------------------------------------------


def exact_gains(classes: list[Counter]) -> list[tuple[Fraction, Fraction]]:
    """(relative gain (q - p) / p, p) of every value present in a class, in fractions."""
    table = sum(classes, Counter())
    rows = sum(table.values())
    gains = []
    for counter in classes:
        size = sum(counter.values())
        for value, count in counter.items():
            p = Fraction(table[value], rows)
            gains.append(((Fraction(count, size) - p) / p, p))
    return gains


def exact_enhanced(gains: list[tuple[Fraction, Fraction]]) -> Fraction | None:
    """ARX's enhanced check for beta = the largest gain: each gain at most -ln p."""
    if all(gain <= 0 or math.log(1 / p) >= gain for gain, p in gains):
        return max(gain for gain, _ in gains)
    return None


def test_hand_computed_beta_likeness():
    # Table: flu 4/6, hiv 2/6. Class A: flu, hiv (hiv 1/2: gain 1/2); class B: flu x 3, hiv.
    frame = pd.DataFrame({"q": list("AABBBB"), "s": ["flu", "hiv", "flu", "flu", "flu", "hiv"]})
    measure = sensitive_measure(frame, ["q"], "s")
    assert measure.beta_likeness == 0.5
    assert measure.enhanced_beta_likeness == 0.5  # 1/2 <= -ln 1/3 = 1.10
    # One class of the whole table: no gain.
    whole = sensitive_measure(frame.assign(q="A"), ["q"], "s")
    assert (whole.beta_likeness, whole.enhanced_beta_likeness) == (0.0, 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_beta_likeness_agrees_with_pycanon(seed):
    frame = generated_frame(seed, 300)
    qi = ["age", "sex", "zip"] if seed % 2 else ["age", "sex"]
    for sensitive in ("disease", "income"):
        measure = sensitive_measure(frame, qi, sensitive)
        basic = pycanon.basic_beta_likeness(frame, qi, [sensitive])
        assert measure.beta_likeness == pytest.approx(basic, rel=1e-12)
        enhanced = pycanon.enhanced_beta_likeness(frame, qi, [sensitive])
        gains = exact_gains(classes_of(frame, qi, sensitive))
        ours = exact_enhanced(gains)
        if ours is None:
            assert measure.enhanced_beta_likeness is None
            assert enhanced == pytest.approx(min(basic, max(math.log(1 / p) for _, p in gains)))
        else:
            assert measure.enhanced_beta_likeness == pytest.approx(enhanced, rel=1e-12)


def test_pycanon_reports_an_enhanced_beta_no_beta_satisfies():
    # hiv is 3/4 of the table and all of class B: a gain of 1/3 above -ln 3/4 = 0.288.
    frame = pd.DataFrame({"q": list("AABB"), "s": ["flu", "hiv", "hiv", "hiv"]})
    assert pycanon.enhanced_beta_likeness(frame, ["q"], ["s"]) == pytest.approx(1.0)
    measure = sensitive_measure(frame, ["q"], "s")
    assert (measure.beta_likeness, measure.enhanced_beta_likeness) == (1.0, None)


@settings(max_examples=80, deadline=None)
@given(CLASS_ROWS)
def test_beta_likeness_is_exact(rows):
    frame = frame_of(rows)
    gains = exact_gains(classes_of(frame, ["q"], "s"))
    measure = sensitive_measure(frame, ["q"], "s")
    assert measure.beta_likeness == float(max(gain for gain, _ in gains))
    enhanced = exact_enhanced(gains)
    assert measure.enhanced_beta_likeness == (None if enhanced is None else float(enhanced))


# --- delta-disclosure -------------------------------------------------------------------------


def test_hand_computed_delta_disclosure():
    # Table: flu 4/6, hiv 2/6. Class A: flu, hiv (hiv 1/2 vs 1/3: ln 3/2; flu 1/2 vs 2/3: ln 3/4);
    # class B: flu x 3, hiv (hiv 1/4 vs 1/3: ln 3/4; flu 3/4 vs 2/3: ln 9/8).
    frame = pd.DataFrame({"q": list("AABBBB"), "s": ["flu", "hiv", "flu", "flu", "flu", "hiv"]})
    assert sensitive_measure(frame, ["q"], "s").delta_disclosure == pytest.approx(math.log(1.5))
    assert sensitive_measure(frame.assign(q="A"), ["q"], "s").delta_disclosure == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_delta_disclosure_agrees_with_pycanon(seed):
    frame = generated_frame(seed, 300)
    qi = ["age", "sex", "zip"] if seed % 2 else ["age", "sex"]
    for sensitive in ("disease", "income"):
        ours = sensitive_measure(frame, qi, sensitive).delta_disclosure
        assert ours == pytest.approx(pycanon.delta_disclosure(frame, qi, [sensitive]), rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(CLASS_ROWS)
def test_delta_disclosure_is_the_largest_log_ratio(rows):
    frame = frame_of(rows)
    gains = exact_gains(classes_of(frame, ["q"], "s"))
    ratios = [gain + 1 for gain, _ in gains]  # q / p, exactly
    exact = max(abs(math.log(ratio.numerator / ratio.denominator)) for ratio in ratios)
    assert sensitive_measure(frame, ["q"], "s").delta_disclosure == pytest.approx(exact, abs=1e-15)
    if all(ratio == 1 for ratio in ratios):
        assert sensitive_measure(frame, ["q"], "s").delta_disclosure == 0.0

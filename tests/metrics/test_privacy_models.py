"""(alpha, k)-anonymity, recursive (c, l)-diversity, beta-likeness and delta-disclosure: pycanon,
exact fractions from the rows, hand-computed values."""

from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from broker.metrics.anonymity import k_anonymity, sensitive_measure
from broker.metrics.report import analyze
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
    report = analyze(frame, ["q"], ["s", "u"], max_combination_size=0).as_dict()
    assert [s["alpha"] for s in report["sensitive"]] == [1.0, 1.0]
    assert analyze(frame, ["q"], ["s"], max_combination_size=0).sensitive[0].alpha == 0.5


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

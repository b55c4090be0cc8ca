"""(alpha, k)-anonymity, recursive (c, l)-diversity, beta-likeness and delta-disclosure: pycanon,
exact fractions from the rows, hand-computed values."""

from collections import Counter
from fractions import Fraction

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

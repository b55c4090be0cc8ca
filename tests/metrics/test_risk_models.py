"""Journalist, marketer and per-class average risk: pycanon, exact fractions, a population table."""

from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycanon import metrics as pycanon_metrics

from broker.metrics.anonymity import journalist_and_marketer_risk, k_anonymity
from broker.metrics.report import ReportOptions, analyze
from tests.metrics.test_anonymity import generated_frame


@pytest.mark.parametrize("seed", range(6))
def test_average_per_class_and_max_agree_with_pycanon(seed):
    frame = generated_frame(seed, 300)
    qi = ["age", "sex", "zip"] if seed % 2 else ["age", "sex"]
    risk = k_anonymity(frame, qi).prosecutor_risk
    assert risk.average_per_class == pytest.approx(pycanon_metrics.average_rir(frame, qi), 1e-12)
    assert risk.max == pytest.approx(pycanon_metrics.max_rir(frame, qi), 1e-12)


def test_hand_computed_risks_without_a_population_table():
    # Classes of 1, 1 and 4 rows (N = 6): per class 1, 1, 1/4; per row 3/6.
    anonymity = k_anonymity(pd.DataFrame({"q": list("abcccc")}), ["q"])
    risk, journalist = anonymity.prosecutor_risk, anonymity.journalist_risk
    assert (risk.max, risk.average, risk.average_per_class) == (1.0, 0.5, 0.75)
    assert (journalist.max, journalist.average, journalist.unique_share) == (1.0, 0.5, 2 / 6)
    assert anonymity.marketer_risk == 0.5
    assert not anonymity.against_population


def exact_risks(sample: list[str], population: list[str]) -> tuple[Fraction, Fraction, Fraction]:
    """El Emam's journalist max and average and marketer risk, from the rows, in fractions."""
    f, big_f = Counter(sample), Counter(population)
    n = len(sample)
    found = sum(Fraction(f[c], big_f[c]) for c in f) / n
    journalist_max = max(Fraction(1, big_f[c]) for c in f)
    journalist_average = max(Fraction(len(f), sum(big_f[c] for c in f)), found)
    return journalist_max, journalist_average, found


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=30),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=60),
)
def test_journalist_and_marketer_against_a_population_table(sample, others):
    population = pd.DataFrame({"q": others + sample, "other": "x"}).sample(frac=1, random_state=0)
    report = analyze(
        pd.DataFrame({"q": sample}),
        ["q"],
        options=ReportOptions(max_combination_size=0, population=population),
    )
    anonymity = report.quasi_identifiers.anonymity
    journalist_max, journalist_average, marketer = exact_risks(sample, others + sample)
    assert anonymity.against_population
    assert anonymity.journalist_risk.max == pytest.approx(float(journalist_max), abs=1e-15)
    assert anonymity.journalist_risk.average == pytest.approx(float(journalist_average), 1e-12)
    assert anonymity.marketer_risk == pytest.approx(float(marketer), 1e-12)
    # The population only lowers the risk: each class is at least as large there.
    assert anonymity.journalist_risk.max <= anonymity.prosecutor_risk.max


def test_the_population_table_is_matched_on_values_and_missing_values():
    sample = pd.DataFrame({"zip": ["750", None, "750"], "age": ["30", "40", "30"]})
    population = pd.DataFrame(
        {
            "age": ["40", "30", "30", "30", "40", "30"],
            "zip": [np.nan, "750", "750", "130", None, "750"],
        }
    )
    report = analyze(
        sample, ["zip", "age"], options=ReportOptions(max_combination_size=0, population=population)
    )
    qi = report.quasi_identifiers.as_dict()
    # Classes (750, 30): f = 2, F = 3; (missing, 40): f = 1, F = 2. Journalist average:
    # max(2 classes / 5 population rows, (2/3 + 1/2) / 3 = 7/18) = 0.4.
    assert qi["journalist_risk"] == {"max": 0.5, "average": 0.4, "unique_share": 0.0}
    assert qi["marketer_risk"] == pytest.approx(float((Fraction(2, 3) + Fraction(1, 2)) / 3))
    assert qi["risk_population"] == "population_table"


def test_a_population_table_must_contain_the_dataset():
    sample = pd.DataFrame({"zip": ["750", "130"]})
    with pytest.raises(ValueError, match="no row with \\{'zip': '130'\\}"):
        analyze(
            sample, ["zip"], options=ReportOptions(population=pd.DataFrame({"zip": ["750", "750"]}))
        )
    with pytest.raises(ValueError, match="Quasi-identifier \\(in the population table\\) 'zip'"):
        analyze(sample, ["zip"], options=ReportOptions(population=pd.DataFrame({"code": ["750"]})))
    with pytest.raises(ValueError, match="fewer rows"):
        journalist_and_marketer_risk(np.array([2, 1]), np.array([1, 5]))

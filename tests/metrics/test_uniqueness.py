"""Population uniqueness, sdcMicro's individual risk and the k they imply, against values their
reference tools publish and exact arithmetic.

ARX: ``src/test/org/deidentifier/arx/test/TestRiskMetrics.java`` (arx-deidentifier/arx),
``testDecisionRule`` and ``testDecisionRule2``. The latter measures ARX's ``data/adult.csv``
(30,162 rows) on the nine attributes that have a hierarchy file; ADULT_CLASSES is that table's
class-size histogram (a pandas ``groupby(...).size().value_counts()`` of the file as ARX ships
it), the only input the models take.

sdcMicro: ``tests/testthat/test_indivRisk.R`` and ``test_calcRisks.R`` (sdcTools/sdcMicro).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metrics.report import ReportOptions, analyze
from broker.metrics.uniqueness import (
    DANKAR,
    PITMAN,
    SNB,
    ZAYATZ,
    digamma,
    individual_risk,
    individual_risks,
    k_for_expected_reidentifications,
    pitman_uniques,
    population_uniqueness,
    shlosser_classes,
    snb_sample_probabilities,
    snb_uniques,
    trigamma,
    uniform_individual_risk,
    zayatz_uniques,
)

ADULT_CLASSES = {
    1: 15512, 2: 2098, 3: 754, 4: 375, 5: 189, 6: 155, 7: 97, 8: 73, 9: 39, 10: 37, 11: 29,
    12: 18, 13: 23, 14: 14, 15: 15, 16: 9, 17: 11, 18: 10, 19: 10, 20: 5, 21: 3, 22: 4, 23: 3,
    24: 2, 25: 1, 26: 3, 27: 5, 29: 1, 30: 2, 32: 1, 34: 1, 35: 1, 36: 1, 45: 1,
}  # fmt: skip


def test_adult_histogram_is_arx_adult():
    assert sum(s * c for s, c in ADULT_CLASSES.items()) == 30162
    # ARX's sample uniqueness of the file (testDecisionRule2 at pi = 1): 15512 / 30162.
    assert ADULT_CLASSES[1] / 30162 == pytest.approx(0.5142895033485844, abs=1e-15)


def test_pitman_at_ten_percent_is_arx_decision_rule():
    """testDecisionRule2, pi = 0.1: Dankar's rule takes Pitman, 0.27684993883653597."""
    result = population_uniqueness(ADULT_CLASSES, 0.1)
    assert result.population_size == 301620
    assert result.dankar_model == PITMAN
    assert result.dankar.share == pytest.approx(0.27684993883653597, rel=1e-9)
    assert result.dankar.uniques == pytest.approx(0.27684993883653597 * 301620, rel=1e-9)


def test_zayatz_at_ten_percent_is_arx_fallback_value():
    """testDecisionRule2, pi = 0.1: the value ARX accepts when its rule falls back to Zayatz."""
    assert population_uniqueness(ADULT_CLASSES, 0.1).zayatz.share == pytest.approx(
        0.3207402393466189, rel=1e-12
    )


def test_pitman_at_one_percent_is_arx_decision_rule():
    """testDecisionRule2, pi = 0.01: 0.1446083531167384."""
    result = population_uniqueness(ADULT_CLASSES, 0.01)
    assert result.dankar_model == PITMAN
    assert result.dankar.share == pytest.approx(0.1446083531167384, rel=1e-9)


def test_zayatz_at_twenty_percent_is_arx_decision_rule():
    """testDecisionRule2, pi = 0.2: ARX reports 0.3577099234829125, its Zayatz estimate (its SNB
    solver finds no solution with the second equation as ARX writes it). Our SNB, with the
    equation as the expectation gives it (checked below), solves and is smaller, so Dankar's
    rule takes it here: the one place we knowingly differ from ARX."""
    result = population_uniqueness(ADULT_CLASSES, 0.2)
    assert result.zayatz.share == pytest.approx(0.3577099234829125, rel=1e-12)
    assert result.snb.share is not None and result.snb.share < result.zayatz.share
    assert result.dankar_model == SNB


def test_whole_population_gives_sample_uniqueness():
    """testDecisionRule2, pi = 1: 0.5142895033485844, the sample uniqueness."""
    result = population_uniqueness(ADULT_CLASSES, 1.0)
    assert result.dankar.share == pytest.approx(0.5142895033485844, rel=1e-12)
    assert result.zayatz.uniques == pytest.approx(15512, rel=1e-12)


def test_all_unique_sample_is_all_unique_population():
    """testDecisionRule: ARX's seven-row example, every row unique, pi = 0.2: uniqueness 1."""
    result = population_uniqueness({1: 7}, 0.2)
    assert result.population_size == 35
    assert result.dankar.share == pytest.approx(1.0)
    assert result.dankar_model == ZAYATZ  # no class of 2: SNB has no second equation


def test_no_sample_unique_gives_zero_everywhere():
    """testDecisionRule: the same data 2-anonymized estimates 0 at pi = 0.1."""
    result = population_uniqueness({2: 2, 3: 1}, 0.1)
    assert result.dankar_model == DANKAR
    for estimate in (result.pitman, result.zayatz, result.snb, result.dankar):
        assert (estimate.uniques, estimate.share) == (0.0, 0.0)


def test_zayatz_against_exact_hypergeometric():
    """No published Zayatz value on a tiny table: this checks it against its definition in
    exact rationals, h(j) = C(j, 1) C(N - j, n - 1) / C(N, n)."""
    histogram, big_n = {1: 3, 2: 2, 3: 1}, 20
    n = sum(s * c for s, c in histogram.items())

    def h(j: int) -> Fraction:
        return Fraction(j * math.comb(big_n - j, n - 1), math.comb(big_n, n))

    u = sum(histogram.values())
    conditional = (
        Fraction(histogram[1], u) * h(1) / sum(Fraction(c, u) * h(s) for s, c in histogram.items())
    )
    exact = histogram[1] * conditional / Fraction(n, big_n)
    sizes, counts = np.array([1, 2, 3]), np.array([3, 2, 1])
    assert zayatz_uniques(sizes, counts, big_n) == pytest.approx(float(exact), rel=1e-13)
    assert population_uniqueness(histogram, n / big_n).zayatz.uniques == pytest.approx(
        float(exact), rel=1e-13
    )


def test_snb_probabilities_against_direct_summation():
    """Chen and McNulty's P(1 sample row), P(2) against the sum over population class sizes
    F of P(F) C(F, m) pi^m (1 - pi)^(F - m), in exact rationals (a = 2, b = 1/2, pi = 1/3)."""
    a, b, pi = 2, Fraction(1, 2), Fraction(1, 3)

    def p_population(j: int) -> Fraction:
        return math.comb(j + a - 2, j - 1) * b**a * (1 - b) ** (j - 1)

    def p_sample(m: int) -> Fraction:
        return sum(
            p_population(j) * math.comb(j, m) * pi**m * (1 - pi) ** (j - m) for j in range(m, 400)
        )

    one, two = snb_sample_probabilities(a, float(b), float(pi))
    assert one == pytest.approx(float(p_sample(1)), rel=1e-12)
    assert two == pytest.approx(float(p_sample(2)), rel=1e-12)


def test_snb_solves_its_equations():
    sizes, counts = (
        np.array(sorted(ADULT_CLASSES)),
        np.array([ADULT_CLASSES[s] for s in sorted(ADULT_CLASSES)]),
    )
    uniques = snb_uniques(sizes, counts, 0.2)
    assert uniques is not None and 0 < uniques < 150810


def test_shlosser_counts_every_class_without_sampling():
    sizes, counts = np.array([1, 2, 5]), np.array([4, 2, 1])
    assert shlosser_classes(sizes, counts, 1.0) == 7.0
    assert shlosser_classes(sizes, counts, 0.1) > 7.0  # a sample misses classes


def test_large_classes_do_not_overflow():
    """(1 + q)^j overflows float64 for a class of 100,000 rows at q = 0.5."""
    sizes, counts = np.array([1, 2, 100_000]), np.array([5, 3, 1])
    with np.errstate(over="raise", invalid="raise"):
        assert math.isfinite(shlosser_classes(sizes, counts, 0.5))
    assert population_uniqueness({1: 5, 2: 3, 100_000: 1}, 0.5).dankar.share is not None


def test_pitman_needs_alpha_in_the_open_unit_interval():
    """A sample with fewer classes than Pitman's alpha > 0 expects: no Pitman estimate, and
    Dankar's rule falls back to Zayatz, as ARX's does when Pitman is invalid."""
    sizes, counts = np.array([1, 2, 3, 5]), np.array([40, 10, 5, 2])
    assert pitman_uniques(sizes, counts, 1700) is None
    result = population_uniqueness({1: 40, 2: 10, 3: 5, 5: 2}, 0.05)
    assert result.pitman.uniques is None and result.dankar_model == ZAYATZ


def test_digamma_and_trigamma_against_scipy():
    special = pytest.importorskip("scipy.special")
    x = np.array([1e-3, 0.3, 1.0, 2.5, 9.99, 10.0, 57.0, 1e7])
    np.testing.assert_allclose(digamma(x), special.digamma(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(trigamma(x), special.polygamma(1, x), rtol=1e-12)


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5])
def test_sampling_fraction_must_be_a_share(fraction):
    with pytest.raises(ValueError, match="sampling fraction"):
        population_uniqueness({1: 3}, fraction)


# sdcMicro, test_indivRisk.R: "data frame with weight, method = approx, qual = default,
# survey = TRUE". Keys A, B, C and weights of eight rows.
SDC_KEYS = [(2, 3, 1), (3, 3, 3), (2, 3, 1), (2, 3, 2), (3, 3, 1), (3, 3, 1), (1, 4, 1), (2, 3, 1)]
SDC_WEIGHTS = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0]
SDC_RK = [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883, 0.03931625,
          0.01369863]  # fmt: skip


def test_individual_risk_is_sdcmicro_indivrisk():
    keys = sorted(set(SDC_KEYS))
    f = np.array([SDC_KEYS.count(k) for k in keys])
    big_f = np.array(
        [sum(w for k2, w in zip(SDC_KEYS, SDC_WEIGHTS, strict=True) if k2 == k) for k in keys]
    )
    per_class = dict(zip(keys, individual_risks(f, big_f), strict=True))
    np.testing.assert_allclose([per_class[k] for k in SDC_KEYS], SDC_RK, atol=5e-9)
    summary = individual_risk(f, big_f, "weight")
    assert summary.expected_reidentifications == pytest.approx(sum(SDC_RK), abs=1e-7)
    assert summary.max == pytest.approx(0.17707583, abs=1e-8)


def test_individual_risk_beyond_two_rows_is_exact():
    """f > 2: p / (f - (1 - p)) is rational; (2,3,1) has f = 3, F = 108: exactly 1/73."""
    p = Fraction(3, 108)
    assert p / (3 - (1 - p)) == Fraction(1, 73)
    assert individual_risks(np.array([3]), np.array([108.0]))[0] == pytest.approx(1 / 73, rel=1e-15)


def test_unweighted_is_one_over_f():
    """test_calcRisks.R "sdc without missing": no weights (F = f), risks 1/f, 8 expected
    re-identifications over 10 rows (two classes of 2, six of 1)."""
    assert uniform_individual_risk({1: 6, 2: 2}, 1.0) == 8.0


def test_weights_below_one_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        individual_risks(np.array([2]), np.array([1.5]))


def test_uniform_weights_match_per_class_weights():
    histogram, pi = {1: 5, 2: 3, 4: 2}, 0.25
    sizes = np.repeat([1, 2, 4], [5, 3, 2])
    expected = individual_risk(sizes, sizes / pi, "uniform").expected_reidentifications
    assert uniform_individual_risk(histogram, pi) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("pi", [0.01, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("bound", [1.0, 10.0, 250.0])
def test_k_for_expected_reidentifications_is_sufficient(pi, bound):
    """Every class of k rows (the worst case: all classes as small as allowed) keeps the
    expected re-identifications within the bound, and k - 1 would not, beyond k = 3."""
    rows = 1000
    k = k_for_expected_reidentifications(rows, pi, bound)
    for f in range(k, k + 5):
        assert uniform_individual_risk({f: 1}, pi) * rows / f <= bound * (1 + 1e-12)
    if k > 3:
        assert uniform_individual_risk({k - 1: 1}, pi) * rows / (k - 1) > bound


# In the report


def sdc_frame() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"A": str(a), "B": str(b), "C": str(c), "weight": str(w)}
            for (a, b, c), w in zip(SDC_KEYS, SDC_WEIGHTS, strict=True)
        ]
    )


def test_report_has_no_population_section_unless_asked():
    report = analyze(sdc_frame(), ["A", "B", "C"], options=ReportOptions(max_combination_size=0))
    assert report.population is None and "population" not in report.as_dict()


def test_report_weights_give_sdcmicro_risks_and_the_fraction():
    report = analyze(
        sdc_frame(),
        ["A", "B", "C"],
        options=ReportOptions(max_combination_size=0, weights="weight"),
    )
    section = report.as_dict()["population"]
    assert section["sampling_fraction"] == pytest.approx(8 / 394)
    assert section["sampling_fraction_from"] == "weights"
    assert section["individual_risk"]["expected_reidentifications"] == pytest.approx(
        sum(SDC_RK), abs=1e-7
    )
    assert section["individual_risk"]["average"] == pytest.approx(sum(SDC_RK) / 8, abs=1e-8)


def test_report_stated_fraction_uses_the_class_sizes():
    report = analyze(
        sdc_frame(),
        ["A", "B", "C"],
        options=ReportOptions(max_combination_size=0, sampling_fraction=0.2),
    )
    expected = population_uniqueness({1: 3, 2: 1, 3: 1}, 0.2)
    assert report.population.uniqueness == expected
    assert report.population.individual_risk.weights == "uniform 1/pi"


def test_report_k_map_against_a_population_table():
    sample = pd.DataFrame({"zip": ["750", "130", "750"]})
    population = pd.DataFrame({"zip": ["130"] * 4 + ["750"] * 6 + ["690"] * 5})
    report = analyze(
        sample, ["zip"], options=ReportOptions(max_combination_size=0, population=population)
    )
    assert report.population.k_map == 4
    assert report.population.sampling_fraction == pytest.approx(3 / 15)
    assert report.population.fraction_from == "population_table"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"sampling_fraction": 0.5, "quasi_identifiers": []}, "need declared quasi-identifiers"),
        ({"weights": "nope"}, "Weight column 'nope'"),
        ({"sampling_fraction": 0.0}, "sampling fraction"),
    ],
)
def test_report_population_errors(arguments, message):
    options = {k: v for k, v in arguments.items() if k != "quasi_identifiers"}
    quasi_identifiers = arguments.get("quasi_identifiers", ["A", "B", "C"])
    with pytest.raises(ValueError, match=message):
        analyze(
            sdc_frame(), quasi_identifiers, [], ReportOptions(max_combination_size=0, **options)
        )


def test_report_weights_below_one_are_refused():
    frame = sdc_frame().assign(weight="0.5")
    with pytest.raises(ValueError, match="The weights give a sampling fraction of 2"):
        analyze(
            frame, ["A", "B", "C"], options=ReportOptions(max_combination_size=0, weights="weight")
        )


def test_report_weights_must_be_numbers():
    frame = sdc_frame().assign(weight=["x"] + ["2"] * 7)
    with pytest.raises(ValueError, match="positive number on every row"):
        analyze(
            frame, ["A", "B", "C"], options=ReportOptions(max_combination_size=0, weights="weight")
        )


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.integers(1, 40), st.integers(1, 60), min_size=1, max_size=8),
    st.floats(0.005, 1.0),
)
def test_estimates_are_shares_and_dankar_picks_one(histogram, fraction):
    result = population_uniqueness(histogram, fraction)
    estimates = {PITMAN: result.pitman, ZAYATZ: result.zayatz, SNB: result.snb}
    for estimate in (*estimates.values(), result.dankar):
        assert estimate.share is None or 0 <= estimate.share <= 1
    if histogram.get(1, 0) == 0:
        assert result.dankar.share == 0.0
    else:
        assert result.dankar == estimates[result.dankar_model]
        assert result.zayatz.uniques is not None  # the fallback always has a value
    n = sum(s * c for s, c in histogram.items())
    expected = uniform_individual_risk(histogram, fraction)
    assert 0 < expected <= sum(histogram.values()) * (1 + 1e-12)  # at most one per class
    assert expected <= n

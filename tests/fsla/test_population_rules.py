"""The population rules: uniqueness and expected re-identifications at a stated sampling
fraction, stricter wins per rule set, and verified remedies."""

import pandas as pd
import pytest
from pydantic import ValidationError

from broker.engines.pandas import PandasEngine
from broker.fsla.evaluate import combine, evaluate
from broker.fsla.models import RuleSet
from broker.fsla.remedy import find_remedy, target_for
from broker.fsla.results import TransferContext
from broker.metrics.report import ReportOptions, analyze
from broker.metrics.uniqueness import population_uniqueness, uniform_individual_risk
from broker.wire.statuses import TransferStatus
from tests.fsla.test_evaluate import record

OPEN = {"identifiers_allowed": True}

# 60 ages: 30 unique, 15 in pairs, 15 in classes of 4 (120 rows).
AGES = pd.DataFrame(
    {
        "age": [str(i) for i in range(30)]
        + [str(30 + i // 2) for i in range(30)]
        + [str(45 + i // 4) for i in range(60)]
    }
)
HISTOGRAM = {1: 30, 2: 15, 4: 15}


def decided(frame: pd.DataFrame, export: dict, incoming: dict | None = None):
    source = record("SN", export={**OPEN, **export})
    destination = record("FR", incoming={**OPEN, **(incoming or {})})
    report = analyze(frame, ["age"], [], ReportOptions(max_combination_size=0))
    context = TransferContext("SN", "FR", "research", ("age",), ())
    return source, destination, report, context, evaluate(report, context, source, destination)


@pytest.mark.parametrize("rule", ["max_population_uniqueness", "max_expected_reidentifications"])
def test_a_population_rule_needs_a_sampling_fraction(rule):
    with pytest.raises(ValidationError, match=f"{rule} needs sampling_fraction"):
        RuleSet(**{rule: 0.5})
    assert RuleSet(**{rule: 0.5, "sampling_fraction": 0.1})


@pytest.mark.parametrize("value", [0.0, 1.01])
def test_sampling_fraction_bounds(value):
    with pytest.raises(ValidationError, match="sampling_fraction"):
        RuleSet(sampling_fraction=value)


def test_population_uniqueness_rule_at_each_rule_sets_fraction():
    """Each rule set judges at the fraction it states; the measured value is Dankar's share."""
    export = {"sampling_fraction": 0.05, "max_population_uniqueness": 0.9}
    incoming = {"sampling_fraction": 0.5, "max_population_uniqueness": 0.01}
    *_, decision = decided(AGES, export, incoming)
    results = {(r.rule, r.jurisdiction): r for r in decision.rules}
    sn, fr = results["max_population_uniqueness", "SN"], results["max_population_uniqueness", "FR"]
    assert sn.passed and sn.measured == round(
        population_uniqueness(HISTOGRAM, 0.05).dankar.share, 6
    )
    expected = population_uniqueness(HISTOGRAM, 0.5)
    assert not fr.passed and fr.measured == round(expected.dankar.share, 6)
    assert expected.dankar_model in fr.detail and "k >= 2" in fr.detail
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED


def test_population_rules_combine_lowest_and_per_rule_set():
    first = RuleSet(
        sampling_fraction=0.1, max_population_uniqueness=0.05, max_expected_reidentifications=3
    )
    second = RuleSet(
        sampling_fraction=0.5, max_population_uniqueness=0.02, max_expected_reidentifications=9
    )
    combined = combine([first, second, RuleSet()])
    assert combined.max_population_uniqueness == 0.02
    assert combined.expected_reidentification_bounds == ((0.1, 3), (0.5, 9))


def test_expected_reidentifications_rule_measures_sdcmicro_risk():
    export = {"sampling_fraction": 0.1, "max_expected_reidentifications": 2.0}
    *_, decision = decided(AGES, export)
    [failing] = decision.failed
    assert failing.rule == "max_expected_reidentifications"
    assert failing.measured == round(uniform_individual_risk(HISTOGRAM, 0.1), 6)
    assert "k >= 7" in failing.detail  # 120 * 0.1 / 2 + 1 - 0.1 = 6.9


def test_population_uniqueness_is_remedied_with_k_2():
    export = {"sampling_fraction": 0.2, "max_population_uniqueness": 0.001}
    source, destination, report, context, decision = decided(AGES, export)
    assert [r.rule for r in decision.failed] == ["max_population_uniqueness"]
    assert target_for(AGES.__getitem__, decision, report, context, 0.05).k == 2
    found = find_remedy(PandasEngine(AGES), report, decision, context, source, destination)
    assert found.verified
    after = found.report.quasi_identifiers.anonymity
    assert after.k >= 2
    assert population_uniqueness(after.class_size_histogram, 0.2).dankar.share == 0.0


def test_expected_reidentifications_are_remedied():
    export = {"sampling_fraction": 0.1, "max_expected_reidentifications": 2.0}
    source, destination, report, context, decision = decided(AGES, export)
    assert target_for(AGES.__getitem__, decision, report, context, 0.05).k == 7
    found = find_remedy(PandasEngine(AGES), report, decision, context, source, destination)
    assert found.verified
    histogram = found.report.quasi_identifiers.anonymity.class_size_histogram
    assert uniform_individual_risk(histogram, 0.1) <= 2.0


def test_a_passing_population_rule_asks_for_no_k():
    """Another rule fails; the uniqueness rule passes, so it adds nothing to the target."""
    export = {"sampling_fraction": 0.5, "max_population_uniqueness": 0.99, "max_marketer_risk": 0.9}
    _, _, report, context, decision = decided(AGES, {**export, "min_k": 1})
    assert decision.status == TransferStatus.APPROVED
    failing = {**export, "forbidden_attributes": ["age"]}
    _, _, report, context, decision = decided(AGES, failing)
    assert target_for(AGES.__getitem__, decision, report, context, 0.05).k is None

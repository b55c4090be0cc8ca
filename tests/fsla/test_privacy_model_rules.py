"""The rules of the privacy models beyond k, l and t: stricter wins, and verified remedies."""

import math

import pandas as pd
import pytest

from broker.engines.pandas import PandasEngine
from broker.fsla.evaluate import combine, evaluate
from broker.fsla.remedy import find_remedy, target_for
from broker.fsla.results import TransferContext
from broker.metrics.report import ReportOptions, analyze
from broker.wire.statuses import TransferStatus
from tests.fsla.test_evaluate import decide, record

OPEN = {"identifiers_allowed": True}

# Ages 20..79, three diseases by age band: narrow age ranges hold one disease each.
SKEWED = pd.DataFrame(
    {
        "age": [str(20 + i % 60) for i in range(180)],
        "disease": [["flu", "hiv", "cold"][(i % 60) // 20] for i in range(180)],
    }
)


def remedied(frame: pd.DataFrame, rules: dict):
    """The decision on ``frame`` (age the quasi-identifier, disease sensitive) and its remedy."""
    source = record("SN", export={**OPEN, **rules})
    destination = record("FR", incoming=OPEN)
    report = analyze(frame, ["age"], ["disease"], ReportOptions(max_combination_size=0))
    context = TransferContext("SN", "FR", "research", ("age",), ("disease",))
    decision = evaluate(report, context, source, destination)
    found = find_remedy(PandasEngine(frame), report, decision, context, source, destination)
    return report, context, decision, found


def test_alpha_rule_stricter_wins():
    # FRAME: two classes of flu, hiv, flu, cold: alpha = 1/2.
    source = record("SN", export={**OPEN, "max_alpha": 0.6})
    destination = record("FR", incoming={**OPEN, "max_alpha": 0.4})
    decision = decide(source, destination)
    results = {(r.rule, r.jurisdiction): r for r in decision.rules}
    assert results["max_alpha", "SN"].passed
    failing = results["max_alpha", "FR"]
    assert (failing.passed, failing.measured, failing.threshold) == (False, 0.5, 0.4)
    assert "l >= 3" in failing.detail and "measured again" in failing.detail
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    assert combine([source.cross_border_export, destination.import_rules]).max_alpha == 0.4


def test_alpha_rule_is_remedied_and_verified():
    report, context, decision, found = remedied(SKEWED, {"max_alpha": 0.6})
    assert [r.rule for r in decision.failed] == ["max_alpha"]
    target = target_for(SKEWED.__getitem__, decision, report, context, 0.05)
    assert (target.l, target.k) == (2, 2)  # no class of one value; k raised by verification
    assert found.verified
    assert found.report.sensitive[0].alpha <= 0.6


def test_an_alpha_below_the_table_share_is_not_offered():
    # flu is 2/3 of the table: merging classes cannot bring it under 1/2, suppression aside.
    frame = SKEWED.assign(disease=["flu", "flu", "hiv"] * 60)
    _, _, decision, found = remedied(frame, {"max_alpha": 0.5})
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    assert not found.verified
    assert "makes up" in found.reason


@pytest.mark.parametrize("value", [0, 1.5])
def test_alpha_bounds(value):
    from broker.fsla.models import RuleSet

    with pytest.raises(ValueError, match="max_alpha"):
        RuleSet(max_alpha=value)


def test_recursive_c_l_rule_stricter_wins():
    # FRAME: two classes of flu 2, hiv 1, cold 1: c must exceed 2/2 = 1 for l = 2, 2/1 for l = 3.
    source = record("SN", export={**OPEN, "recursive_c_l": {"c": 3, "l": 2}})
    destination = record("FR", incoming={**OPEN, "recursive_c_l": {"c": 2, "l": 3}})
    decision = decide(source, destination)
    results = {(r.rule, r.jurisdiction): r for r in decision.rules}
    assert results["recursive_c_l", "SN"].passed
    failing = results["recursive_c_l", "FR"]
    assert (failing.passed, failing.measured, failing.threshold) == (False, 2.0, "c = 2, l = 3")
    assert "l >= 3" in failing.detail and "measured again" in failing.detail
    combined = combine([source.cross_border_export, destination.import_rules])
    assert (combined.recursive_c_l.c, combined.recursive_c_l.l) == (2, 3)


def test_recursive_c_l_fails_when_a_class_has_fewer_than_l_values():
    destination = record("FR", incoming={**OPEN, "recursive_c_l": {"c": 100, "l": 4}})
    [failing] = decide(record("SN", export=OPEN), destination).failed
    assert (failing.rule, failing.measured) == ("recursive_c_l", "l = 3")


def test_recursive_c_l_rule_is_remedied_and_verified():
    report, context, decision, found = remedied(SKEWED, {"recursive_c_l": {"c": 1.5, "l": 2}})
    assert [r.rule for r in decision.failed] == ["recursive_c_l"]
    assert target_for(SKEWED.__getitem__, decision, report, context, 0.05).l == 2
    assert found.verified
    after = found.report.sensitive[0]
    assert after.l_diversity >= 2 and after.recursive_c_bounds[0] < 1.5


def test_recursive_c_l_rule_bounds():
    from broker.fsla.models import RuleSet

    with pytest.raises(ValueError, match=r"recursive_c_l\.l"):
        RuleSet(recursive_c_l={"c": 2, "l": 1})
    with pytest.raises(ValueError, match=r"recursive_c_l\.c"):
        RuleSet(recursive_c_l={"c": 0, "l": 2})


def test_beta_rules_stricter_wins():
    # FRAME: both classes are the table's distribution (flu 1/2, hiv 1/4, cold 1/4): beta 0.
    skewed = pd.DataFrame(
        {"age": ["20-30"] * 4 + ["30-40"] * 4, "disease": ["flu"] * 3 + ["hiv"] * 5}
    )
    # Table: flu 3/8, hiv 5/8. Class 20-30: flu 3/4, a gain of 1; class 30-40: hiv 1, 3/5.
    # Enhanced: hiv's gain 3/5 is above -ln 5/8 = 0.47, so no beta holds.
    source = record("SN", export={**OPEN, "max_beta": 1.0})
    destination = record("FR", incoming={**OPEN, "max_beta": 0.5, "max_enhanced_beta": 2})
    decision = decide(source, destination, qi=("age",), frame=skewed)
    results = {(r.rule, r.jurisdiction): r for r in decision.rules}
    assert results["max_beta", "SN"].passed
    failing = results["max_beta", "FR"]
    assert (failing.passed, failing.measured, failing.threshold) == (False, 1.0, 0.5)
    enhanced = results["max_enhanced_beta", "FR"]
    assert (enhanced.passed, enhanced.measured) == (False, "none")
    assert "no beta holds" in enhanced.detail and "measured again" in enhanced.detail
    combined = combine([source.cross_border_export, destination.import_rules])
    assert (combined.max_beta, combined.max_enhanced_beta) == (0.5, 2)
    assert decide(source, destination).status == TransferStatus.APPROVED


@pytest.mark.parametrize("rule", ["max_beta", "max_enhanced_beta"])
def test_beta_rules_are_remedied_and_verified(rule):
    report, context, decision, found = remedied(SKEWED, {rule: 0.5})
    assert [r.rule for r in decision.failed] == [rule]
    assert target_for(SKEWED.__getitem__, decision, report, context, 0.05).k == 2
    assert found.verified
    after = found.report.sensitive[0]
    assert after.beta_likeness <= 0.5
    assert after.enhanced_beta_likeness is not None and after.enhanced_beta_likeness <= 0.5


def test_delta_rule_is_strict_and_stricter_wins():
    # Classes flu, flu and hiv, hiv (table 1/2 each): every ratio q / p is 2, delta = ln 2.
    split = pd.DataFrame(
        {"age": ["20-30"] * 2 + ["30-40"] * 2, "disease": ["flu"] * 2 + ["hiv"] * 2}
    )
    source = record("SN", export={**OPEN, "max_delta": 1.0})
    at_the_bound = round(math.log(2), 6)
    destination = record("FR", incoming={**OPEN, "max_delta": math.log(2)})
    decision = decide(source, destination, qi=("age",), frame=split)
    results = {(r.rule, r.jurisdiction): r for r in decision.rules}
    assert results["max_delta", "SN"].passed
    failing = results["max_delta", "FR"]
    assert (failing.passed, failing.measured) == (False, at_the_bound)  # delta < ln 2 fails
    assert "measured again" in failing.detail
    assert combine([source.cross_border_export, destination.import_rules]).max_delta == math.log(2)


def test_delta_rule_is_remedied_and_verified():
    report, context, decision, found = remedied(SKEWED, {"max_delta": 0.5})
    assert [r.rule for r in decision.failed] == ["max_delta"]
    assert target_for(SKEWED.__getitem__, decision, report, context, 0.05).k == 2
    assert found.verified
    assert found.report.sensitive[0].delta_disclosure < 0.5

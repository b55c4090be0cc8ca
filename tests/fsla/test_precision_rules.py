"""F-SLA rules on identifying precision: dates, postcodes and ages (broker.fsla.precision)."""

import dataclasses

import pandas as pd
import pytest
from pydantic import ValidationError

from broker.columns.precision import Limits
from broker.engines.pandas import PandasEngine
from broker.fsla.evaluate import combine, evaluate
from broker.fsla.lint import warnings
from broker.fsla.models import RuleSet
from broker.fsla.precision import limits_of
from broker.fsla.remedy import find_remedy
from broker.fsla.replay import replay
from broker.fsla.results import TransferContext
from broker.fsla.summary import summarize
from broker.metrics.report import ReportOptions, analyze
from broker.wire.statuses import TransferStatus
from tests.fsla.test_evaluate import record
from tests.fsla.test_replay import past
from tests.fsla.test_replay import record as replay_record

SAFE_HARBOR = {"max_date_precision": "year", "max_postcode_prefix": 3, "max_age": 89}
# Eight people, each once: coarse enough for k, precise in every other way.
FRAME = pd.DataFrame(
    {
        "born": ["1983-04-12", "12/05/1983", "1983-06-01 08:00", "1983"] * 2,
        "zip": ["10230", "10 231", "102", "102*"] * 2,
        "age": ["40", "41 ans", "93", "40"] * 2,
        "sex": ["F"] * 8,
        "diagnosis": ["flu", "hiv", "flu", "cold"] * 2,
    }
)


def decide(frame=FRAME, export=None, incoming=None, qi=("sex",), sensitive=("diagnosis",)):
    source = record("SN", export={"identifiers_allowed": True, **(export or {})})
    destination = record("FR", incoming={"identifiers_allowed": True, **(incoming or {})})
    report = analyze(frame, list(qi), list(sensitive), ReportOptions(max_combination_size=0))
    context = TransferContext("SN", "FR", "research", qi, sensitive)
    return report, context, source, destination, evaluate(report, context, source, destination)


def test_each_column_finer_than_the_rule_fails_with_what_it_holds():
    *_, decision = decide(export=SAFE_HARBOR)
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    failed = {(r.rule, r.attribute): r for r in decision.failed}
    assert set(failed) == {
        ("max_date_precision", "born"),
        ("max_postcode_prefix", "zip"),
        ("max_age", "age"),
    }
    assert (
        failed["max_date_precision", "born"].measured,
        failed["max_date_precision", "born"].threshold,
    ) == ("day", "year")
    assert failed["max_postcode_prefix", "zip"].measured == 5
    assert failed["max_age", "age"].measured == 93
    assert "'born' holds dates to the day" in failed["max_date_precision", "born"].detail
    assert "45 CFR 164.514(b)(2)" in failed["max_age", "age"].detail


def test_a_column_within_every_rule_passes_once_per_rule_set():
    coarse = FRAME.assign(born="1983", zip="102*", age=["40", "90+"] * 4)
    *_, decision = decide(coarse, export=SAFE_HARBOR)
    assert decision.status == TransferStatus.APPROVED
    [passed] = [r for r in decision.rules if r.rule == "identifying_precision"]
    assert passed.passed and "dates to the year" in passed.detail


def test_values_that_cannot_be_read_fail_as_their_precision_is_unknown():
    frame = FRAME.assign(born=["1983", "12 brumaire 1983"] * 4)
    *_, decision = decide(frame, export={"max_date_precision": "day"})
    [failed] = decision.failed
    assert failed.measured == "year" and "cannot read as dates" in failed.detail


def test_a_declared_sensitive_column_of_dates_is_judged_too():
    *_, decision = decide(export={"max_date_precision": "year"}, sensitive=("born",))
    assert ("max_date_precision", "born") in {(r.rule, r.attribute) for r in decision.failed}


def test_stricter_wins_across_rule_sets():
    rule_sets = [
        RuleSet(max_date_precision="month", max_postcode_prefix=3),
        RuleSet(max_date_precision="year", max_postcode_prefix=2, max_age=89),
    ]
    assert limits_of(combine(rule_sets)) == Limits("year", 2, 89)
    *_, decision = decide(
        export={"max_date_precision": "day"}, incoming={"max_date_precision": "month"}
    )
    [failed] = decision.failed
    assert (failed.scope, failed.jurisdiction, failed.threshold) == ("import", "FR", "month")


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_date_precision", "week"), ("max_postcode_prefix", -1), ("max_age", 200)],
)
def test_a_bad_rule_is_refused_naming_its_field(field, value):
    with pytest.raises(ValidationError, match=field):
        RuleSet(**{field: value})


def test_lint_warns_when_domestic_precision_is_stricter():
    found = record("SN", domestic={"max_date_precision": "year"}, export={})
    found = found.model_copy(update={"allowed_destinations": ["FR"]})
    codes = [(w.code, w.path) for w in warnings(found, [record("FR")])]
    assert ("domestic-stricter", "domestic_export.max_date_precision") in codes


def test_the_remedy_generalizes_truncates_and_top_codes_and_is_verified():
    report, context, source, destination, decision = decide(export=SAFE_HARBOR)
    found = find_remedy(PandasEngine(FRAME), report, decision, context, source, destination)
    assert found.verified, found.reason
    steps = {(s.column, s.method): s.parameters for s in found.remedy.steps}
    assert steps == {
        ("born", "date_precision"): {"level": "year"},
        ("zip", "postcode_prefix"): {"keep": 3},
        ("age", "top_code"): {"max_age": 89},
    }
    out = found.remedy.frame
    assert set(out["born"]) == {"1983"}
    assert set(out["zip"]) == {"102", "102*"}  # a postcode no longer than allowed stays
    assert set(out["age"]) == {"40", "41", "90+"}
    assert found.decision.status == TransferStatus.APPROVED


def test_the_summary_says_to_generalize_the_column():
    *_, decision = decide(export={"max_postcode_prefix": 3})
    [entry] = summarize(decision.status, [r.as_dict() for r in decision.rules], None)
    assert entry["problem"].startswith("zip: postcodes too long")
    assert entry["do"].startswith("generalize zip")


def test_a_draft_with_precision_rules_is_replayed_and_an_old_report_says_it_cannot_be():
    source, destination = replay_record("SN"), replay_record("FR")
    decided = past(source, destination, frame=FRAME, qi=("sex",), sensitive=("diagnosis",))
    draft = replay_record("SN", export={"identifiers_allowed": True, "max_date_precision": "year"})
    found = replay(decided, "SN", draft)
    assert [(c.rule, c.attribute) for c in found.newly_failed] == [("max_date_precision", "born")]
    old = dict(decided.report)
    old["attributes"] = [
        {k: v for k, v in a.items() if k != "precision"} for a in old["attributes"]
    ]
    found = replay(dataclasses.replace(decided, report=old), "SN", draft)
    assert found.replayable and found.newly_failed == ()
    assert any("before the broker measured how precise" in n for n in found.not_replayed)

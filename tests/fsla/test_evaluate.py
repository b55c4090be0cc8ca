"""The decision as a pure function: rule sets that apply, stricter wins, what is fixable."""

import pandas as pd
import pytest

from broker.fsla.evaluate import combine, evaluate
from broker.fsla.models import FSLARecord, RuleSet
from broker.fsla.results import TransferContext
from broker.metrics.report import ReportOptions, analyze
from broker.wire.statuses import TransferStatus


def record(code: str, **rules) -> FSLARecord:
    return FSLARecord(
        jurisdiction=code,
        name=code,
        legal_basis="law",
        authority="authority",
        allowed_destinations=["*"],
        allowed_purposes=["research"],
        cross_border_export=RuleSet(**rules.get("export", {})),
        import_rules=RuleSet(**rules.get("incoming", {})),
        domestic_export=RuleSet(**rules.get("domestic", {})),
    )


FRAME = pd.DataFrame(
    {
        "age": ["20-30"] * 4 + ["30-40"] * 4,
        "sex": ["F, M"] * 8,
        "disease": ["flu", "hiv", "flu", "cold"] * 2,
        "id": [str(i) for i in range(8)],
    }
)


def decide(
    source, destination, qi=("age", "sex"), sensitive=("disease",), purpose="research", frame=FRAME
):
    report = analyze(frame, list(qi), list(sensitive), ReportOptions(max_combination_size=0))
    context = TransferContext(source.jurisdiction, destination.jurisdiction, purpose, qi, sensitive)
    return evaluate(report, context, source, destination)


def test_stricter_of_export_and_import_wins():
    source = record("SN", export={"identifiers_allowed": True, "min_k": 2})
    destination = record("FR", incoming={"identifiers_allowed": True, "min_k": 5})
    decision = decide(source, destination)
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    [failing] = decision.failed
    assert (failing.rule, failing.scope, failing.jurisdiction) == ("min_k", "import", "FR")
    assert combine([source.cross_border_export, destination.import_rules]).min_k == 5


def test_domestic_transfer_uses_domestic_rules_only():
    source = record("SN", domestic={"identifiers_allowed": True}, export={"min_k": 100})
    decision = decide(source, source)
    assert decision.status == TransferStatus.APPROVED
    assert {r.scope for r in decision.rules} == {"export"}


DISEASES = ["flu", "hiv", "cold", "measles", "mumps", "polio", "rabies", "typhus"]


def test_identifier_attribute_fails_unless_allowed_and_sensitive_text_is_exempt():
    frame = FRAME.assign(disease=DISEASES)  # sensitive, all distinct, text
    decision = decide(record("SN"), record("FR"), frame=frame)
    failing = {(r.rule, r.attribute) for r in decision.failed}
    assert ("no_identifiers", "id") in failing
    assert ("no_identifiers", "disease") not in failing


@pytest.mark.parametrize(
    "values",
    [
        [f"d{i}" for i in range(8)],  # codes
        [str(1.0 + i * 1e-9) for i in range(8)],  # numbers with jitter
        [f"2024-01-0{i + 1}T10:00" for i in range(8)],  # date-times
    ],
)
def test_a_unique_sensitive_attribute_of_numbers_dates_or_codes_is_an_identifier(values):
    """Declaring a column sensitive does not let unique ids, numbers or dates through."""
    decision = decide(record("SN"), record("FR"), frame=FRAME.assign(disease=values))
    assert ("no_identifiers", "disease") in {(r.rule, r.attribute) for r in decision.failed}


def test_e_mails_are_identifiers_whatever_their_counts_and_role():
    mails = ["ana@x.org", "ana@x.org", "bo@y.sn", "bo@y.sn"] * 2
    decision = decide(record("SN"), record("FR"), frame=FRAME.assign(disease=mails))
    assert ("no_identifiers", "disease") in {(r.rule, r.attribute) for r in decision.failed}


def test_unfixable_rules_reject():
    decision = decide(
        record("SN", export={"identifiers_allowed": True}),
        record("FR", incoming={"identifiers_allowed": True}),
        purpose="marketing",
    )
    assert decision.status == TransferStatus.REJECTED
    assert {r.rule for r in decision.failed} == {"purpose_allowed"}


def test_l_and_t_thresholds():
    source = record("SN", export={"identifiers_allowed": True, "min_l": 3, "max_t": 0.1})
    decision = decide(source, record("FR", incoming={"identifiers_allowed": True}))
    by_rule = {r.rule: r for r in decision.rules}
    assert by_rule["min_l"].passed and by_rule["min_l"].measured == 3
    assert by_rule["max_t"].passed and by_rule["max_t"].measured == 0.0


def test_without_quasi_identifiers_the_table_is_one_class():
    source = record("SN", export={"identifiers_allowed": True, "min_k": 8, "min_l": 3})
    decision = decide(source, record("FR", incoming={"identifiers_allowed": True}), qi=())
    assert decision.status == TransferStatus.APPROVED
    assert {r.rule: r.measured for r in decision.rules}["min_k"] == 8


def test_forbidden_attributes_compare_without_case():
    source = record("SN", export={"identifiers_allowed": True, "forbidden_attributes": ["ID"]})
    decision = decide(source, record("FR", incoming={"identifiers_allowed": True}))
    assert [(r.rule, r.attribute) for r in decision.failed] == [("forbidden_attribute", "id")]


def test_mmaq_index_threshold_per_attribute():
    source = record("SN", export={"identifiers_allowed": True, "max_mmaq_index": 0.2})
    decision = decide(source, record("FR", incoming={"identifiers_allowed": True}))
    assert [(r.rule, r.attribute) for r in decision.failed] == [("max_mmaq_index", "id")]


@pytest.mark.parametrize(
    ("field", "value"), [("min_k", 0), ("max_t", 2), ("max_mmaq_index", -1), ("min_log10_mmaq", 1)]
)
def test_rule_set_bounds(field, value):
    with pytest.raises(ValueError, match=field):
        RuleSet(**{field: value})


def test_record_refuses_its_own_jurisdiction_as_destination():
    with pytest.raises(ValueError, match="own jurisdiction"):
        FSLARecord(
            jurisdiction="SN",
            name="x",
            legal_basis="x",
            authority="x",
            allowed_destinations=["SN"],
            allowed_purposes=["research"],
        )


def test_the_remedy_search_stops_at_its_time_budget():
    """Young people have flu, older ones hiv: Mondrian's classes of 2 ages are far from the
    table's mix (t = 0.5), so the search raises k again; with no time left it stops after the
    first attempt and says why."""
    from broker.engines.pandas import PandasEngine
    from broker.fsla.remedy import Effort, find_remedy

    frame = pd.DataFrame(
        {"age": [str(20 + i) for i in range(40)], "disease": ["flu"] * 20 + ["hiv"] * 20}
    )
    source = record("SN", export={"identifiers_allowed": True, "min_k": 2, "max_t": 0.2})
    destination = record("FR", incoming={"identifiers_allowed": True})
    report = analyze(frame, ["age"], ["disease"], ReportOptions(max_combination_size=0))
    context = TransferContext("SN", "FR", "research", ("age",), ("disease",))
    decision = evaluate(report, context, source, destination)
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    engine = PandasEngine(frame)
    found = find_remedy(
        engine, report, decision, context, source, destination, Effort(budget_seconds=0)
    )
    assert not found.verified
    assert "0 s budget (BROKER_REMEDY_SECONDS) after 1 attempt(s)" in found.reason
    assert find_remedy(engine, report, decision, context, source, destination).verified


def test_journalist_and_marketer_risk_rules_stricter_wins():
    # FRAME has two classes of 4 rows: journalist (highest) risk 1/4, marketer risk 2/8.
    source = record("SN", export={"identifiers_allowed": True, "max_journalist_risk": 0.5})
    destination = record(
        "FR",
        incoming={
            "identifiers_allowed": True,
            "max_journalist_risk": 0.2,
            "max_marketer_risk": 0.3,
        },
    )
    decision = decide(source, destination)
    results = {(r.rule, r.jurisdiction): r for r in decision.rules}
    assert results["max_journalist_risk", "SN"].passed
    assert results["max_marketer_risk", "FR"].passed
    failing = results["max_journalist_risk", "FR"]
    assert (failing.passed, failing.measured, failing.threshold) == (False, 0.25, 0.2)
    assert "k >= 5" in failing.detail and "whole population" in failing.detail
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    combined = combine([source.cross_border_export, destination.import_rules])
    assert (combined.max_journalist_risk, combined.max_marketer_risk) == (0.2, 0.3)


@pytest.mark.parametrize("rule", ["max_journalist_risk", "max_marketer_risk"])
def test_a_risk_rule_is_remedied_by_k_anonymity(rule):
    from broker.engines.pandas import PandasEngine
    from broker.fsla.remedy import find_remedy, target_for

    frame = pd.DataFrame({"age": [str(20 + i % 30) for i in range(120)]})  # classes of 4
    source = record("SN", export={rule: 0.1})
    destination = record("FR", incoming={"identifiers_allowed": True})
    report = analyze(frame, ["age"], [], ReportOptions(max_combination_size=0))
    context = TransferContext("SN", "FR", "research", ("age",), ())
    decision = evaluate(report, context, source, destination)
    assert [r.rule for r in decision.failed] == [rule]
    target = target_for(frame.__getitem__, decision, report, context, 0.05)
    assert target.k == 10  # 1 / 0.1
    found = find_remedy(PandasEngine(frame), report, decision, context, source, destination)
    assert found.verified
    after = found.report.quasi_identifiers.anonymity
    assert after.journalist_risk.max <= 0.1 and after.marketer_risk <= 0.1

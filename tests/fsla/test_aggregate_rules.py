"""The rules of an aggregate release: allowed, per-release caps, budgets in their windows,
stricter wins, and the note a microdata decision carries when statistics could leave instead."""

from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest
from pydantic import ValidationError

from broker.fsla.aggregate import decide_release, lookback
from broker.fsla.decide import Parties, Party, TransferRequest
from broker.fsla.evaluate import combine
from broker.fsla.models import FSLARecord, RuleSet
from broker.privacy.budget import Asked, Spend
from broker.wire.statuses import TransferStatus

NOW = datetime(2026, 11, 26, tzinfo=UTC)
ALLOW = {
    "aggregate_releases_allowed": True,
    "max_epsilon_per_release": 1.0,
    "max_delta_per_release": 1e-6,
    "epsilon_budget": 2.0,
    "budget_period_days": 30,
}


def record(code: str, export=None, incoming=None) -> FSLARecord:
    return FSLARecord(
        jurisdiction=code,
        name=code,
        legal_basis="law",
        authority="authority",
        allowed_destinations=["*"],
        allowed_purposes=["research"],
        cross_border_export=RuleSet(**(export or {})),
        import_rules=RuleSet(**(incoming or {})),
    )


def parties(export=None, incoming=None) -> Parties:
    return Parties(
        Party("sn-hospital", "SN", "active"),
        Party("fr-research", "FR", "active"),
        {"SN": (record("SN", export=export), 1), "FR": (record("FR", incoming=incoming), 4)},
    )


REQUEST = TransferRequest("fr-research", "research", kind="aggregate")


def ask(epsilon, delta=0, dataset="d1") -> Asked:
    return Asked(dataset, Fraction(epsilon), Fraction(delta))


def spent(epsilon, days_ago=1, dataset="d1") -> Spend:
    return Spend(dataset, NOW - timedelta(days=days_ago), Fraction(epsilon), Fraction(0))


def failed(decision):
    return [(r.rule, r.jurisdiction) for r in decision.failed()]


def test_approved_when_both_sides_allow_and_the_budget_holds():
    decision = decide_release(parties(ALLOW, ALLOW), REQUEST, ask("0.5"), [], NOW)
    assert decision.status == TransferStatus.APPROVED
    assert decision.versions == {"SN": 1, "FR": 4}


def test_one_side_that_does_not_allow_aggregates_rejects():
    decision = decide_release(parties(ALLOW, {}), REQUEST, ask("0.5"), [], NOW)
    assert decision.status == TransferStatus.REJECTED
    assert failed(decision) == [("aggregate_allowed", "FR")]


def test_stricter_epsilon_and_delta_caps_win():
    strict = ALLOW | {"max_epsilon_per_release": 0.25, "max_delta_per_release": None}
    decision = decide_release(parties(ALLOW, strict), REQUEST, ask("0.5", "1e-7"), [], NOW)
    assert failed(decision) == [("max_epsilon_per_release", "FR"), ("max_delta_per_release", "FR")]
    requirements = combine([RuleSet(**ALLOW), RuleSet(**strict)])
    assert requirements.max_epsilon_per_release == 0.25
    assert requirements.max_delta_per_release is None  # empty: no delta at all
    assert not combine([RuleSet(**ALLOW), RuleSet()]).aggregate_releases_allowed


def test_the_budget_is_met_exactly_then_refused_with_what_remains():
    earlier = [spent("0.1", d) for d in range(1, 16)]  # 1.5 in all, exactly
    decision = decide_release(parties(ALLOW, ALLOW), REQUEST, ask("0.5"), earlier, NOW)
    assert decision.approved  # 1.5 + 0.5 = 2 exactly: allowed
    refused = decide_release(parties(ALLOW, ALLOW), REQUEST, ask("0.6"), earlier, NOW)
    assert not refused.approved
    budgets = [r for r in refused.rules if r.rule == "epsilon_budget" and not r.passed]
    assert [r.jurisdiction for r in budgets] == ["SN", "FR"]
    budget = budgets[0]
    assert "0.5 remains" in budget.detail and "nothing spent" in budget.detail
    assert budget.measured == pytest.approx(2.1) and budget.threshold == 2.0


def test_spends_outside_the_window_or_of_another_dataset_do_not_count():
    earlier = [spent("2", days_ago=31), spent("2", dataset="d2")]
    assert decide_release(parties(ALLOW, ALLOW), REQUEST, ask("1"), earlier, NOW).approved


def test_the_source_budget_counts_every_dataset():
    per_source = ALLOW | {"source_epsilon_budget": 2.5}
    earlier = [spent("1", dataset="d2"), spent("1", dataset="d3")]
    decision = decide_release(parties(per_source, ALLOW), REQUEST, ask("1"), earlier, NOW)
    assert failed(decision) == [("source_epsilon_budget", "SN")]


def test_each_rule_set_counts_in_its_own_window():
    longer = ALLOW | {"budget_period_days": 365}
    earlier = [spent("1.5", days_ago=100)]
    decision = decide_release(parties(ALLOW, longer), REQUEST, ask("1"), earlier, NOW)
    assert failed(decision) == [("epsilon_budget", "FR")]
    assert lookback(parties(ALLOW, longer), REQUEST) == 365
    forever = ALLOW | {"budget_period_days": None}
    assert lookback(parties(ALLOW, forever), REQUEST) is None


def test_a_record_that_allows_aggregates_must_bound_them():
    with pytest.raises(ValidationError, match="needs max_epsilon_per_release"):
        RuleSet(aggregate_releases_allowed=True, epsilon_budget=1.0)
    with pytest.raises(ValidationError, match="needs epsilon_budget"):
        RuleSet(aggregate_releases_allowed=True, max_epsilon_per_release=1.0)
    with pytest.raises(ValidationError):
        RuleSet(max_epsilon_per_release=0)


def test_an_unknown_destination_is_rejected_before_any_budget():
    lone = Parties(
        Party("sn-hospital", "SN", "active"), None, {"SN": (record("SN", export=ALLOW), 1)}
    )
    decision = decide_release(lone, REQUEST, ask("0.5"), [], NOW)
    assert failed(decision) == [("destination_known", "SN")]

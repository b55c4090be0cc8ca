"""The decision of an aggregate release, as a pure function (the transfer's, for statistics).

An aggregate release is a transfer of kind ``aggregate``: the same parties, the same
federation rules (destination known, active, not the source), the same gate (destination and
purpose allowed by both sides), then, instead of the data rules, the aggregate rules of every
rule set that applies (:func:`broker.fsla.rules.aggregate_rules`): allowed at all, epsilon and
delta within each per-release cap, and each budget with what earlier releases spent in its
window. Every rule must pass, so the stricter wins, as for every rule; none is fixable by
anonymization, so a failure is ``rejected``, with what remains of a budget in its detail.

The budget is read and this decision made again under the ledger's lock when the release is
recorded (``broker/budget/service.py``), so two releases decided together cannot both spend the
last of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from broker.fsla.decide import Parties, TransferRequest, federation_rules
from broker.fsla.evaluate import applicable_rule_sets
from broker.fsla.results import RuleResult, TransferContext
from broker.fsla.rules import aggregate_rules, gate_rules
from broker.privacy.budget import Asked, Spend
from broker.wire.statuses import TransferStatus


@dataclass(frozen=True)
class ReleaseDecision:
    status: str
    rules: list[RuleResult]
    versions: dict[str, int]

    @property
    def approved(self) -> bool:
        return self.status == TransferStatus.APPROVED

    def failed(self) -> list[RuleResult]:
        return [rule for rule in self.rules if not rule.passed]


def decide_release(
    parties: Parties,
    request: TransferRequest,
    asked: Asked,
    spends: Sequence[Spend],
    now: datetime,
) -> ReleaseDecision:
    """Approved when every rule passes; else rejected (nothing here is fixable)."""
    source, destination = parties.source, parties.destination
    source_policy, source_version = parties.policies[source.jurisdiction]
    versions = {source.jurisdiction: source_version}
    rules = federation_rules(source, destination, request)
    if any(not rule.passed for rule in rules):
        return ReleaseDecision(TransferStatus.REJECTED, rules, versions)
    destination_policy, destination_version = parties.policies[destination.jurisdiction]
    versions[destination.jurisdiction] = destination_version
    context = TransferContext(source.jurisdiction, destination.jurisdiction, request.purpose)
    rules += gate_rules(context, source_policy, destination_policy)
    for scope, jurisdiction, rule_set in applicable_rule_sets(
        context, source_policy, destination_policy
    ):
        rules += aggregate_rules(scope, jurisdiction, rule_set, asked, spends, now)
    passed = all(rule.passed for rule in rules)
    return ReleaseDecision(
        TransferStatus.APPROVED if passed else TransferStatus.REJECTED, rules, versions
    )


def lookback(parties: Parties, request: TransferRequest) -> int | None:
    """The longest budget window of the rule sets that apply, in days: how far back earlier
    spends must be read (None: every spend, when some budget counts for ever)."""
    source, destination = parties.source, parties.destination
    if destination is None or destination.jurisdiction not in parties.policies:
        return 0
    context = TransferContext(source.jurisdiction, destination.jurisdiction, request.purpose)
    days = []
    for _scope, _jurisdiction, rule_set in applicable_rule_sets(
        context,
        parties.policies[source.jurisdiction][0],
        parties.policies[destination.jurisdiction][0],
    ):
        if rule_set.epsilon_budget is None and rule_set.source_epsilon_budget is None:
            continue
        if rule_set.budget_period_days is None:
            return None
        days.append(rule_set.budget_period_days)
    return max(days, default=0)

"""One home per rule: every rule-set field is judged by one rule family (or by the one place
named below), and every family says what it judges and the paper it follows."""

from broker.fsla.models import RuleSet
from broker.fsla.rules import FAMILIES

# Rules judged outside the data rules of one rule set, and where.
ELSEWHERE = {
    "linkage_lookback_days": "broker.fsla.linkage.rule",
    "min_utility_percent": "broker.fsla.decide (the remedy's utility floor)",
    "auto_anonymize": "broker.fsla.decide (whether the remedy is applied)",
    "max_retention_days": "broker.fsla.decide (the delivery's deletion date)",
    "aggregate_releases_allowed": "broker.fsla.rules.aggregate",
    "max_epsilon_per_release": "broker.fsla.rules.aggregate",
    "max_delta_per_release": "broker.fsla.rules.aggregate",
    "epsilon_budget": "broker.fsla.rules.aggregate",
    "source_epsilon_budget": "broker.fsla.rules.aggregate",
    "budget_period_days": "broker.fsla.rules.aggregate",
}


def test_every_rule_has_one_home():
    owners: dict[str, list[str]] = {}
    for family in FAMILIES:
        for name in family.RULES:
            owners.setdefault(name, []).append(family.__name__)
    for name in ELSEWHERE:
        owners.setdefault(name, []).append(ELSEWHERE[name])
    assert {name: homes for name, homes in owners.items() if len(homes) != 1} == {}
    assert set(owners) == set(RuleSet.model_fields)


def test_every_family_checks_and_names_its_source():
    for family in FAMILIES:
        assert callable(family.check) and family.RULES
        assert family.__doc__ and len(family.__doc__) > 80, family.__name__
        assert family.PAPER is None or family.PAPER.strip(), family.__name__

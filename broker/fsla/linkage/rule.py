"""The linkage rule: each joint class held to the rule set's k and l within its look-back (see
:mod:`broker.fsla.linkage`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from broker.fsla import stricter
from broker.fsla.linkage.releases import Joint
from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult

RULE = "linkage"


def linkage_rules(
    joints: Sequence[Joint], scope: str, jurisdiction: str, rules_: RuleSet
) -> list[RuleResult]:
    """One result per earlier release within the rule set's look-back window (none when the
    rule set does not look back, or asks for neither k nor l)."""
    window = rules_.linkage_lookback_days
    if window is None or (rules_.min_k is None and rules_.min_l is None):
        return []
    results = []
    for joint in joints:
        if joint.age > timedelta(days=window):
            continue
        results.append(_result(joint, scope, jurisdiction, rules_))
    return results


def _result(joint: Joint, scope: str, jurisdiction: str, rules_: RuleSet) -> RuleResult:
    earlier = joint.release.transfer_id
    attributes = ", ".join(joint.attributes)
    threshold = rules_.min_k
    if joint.unchecked is not None:
        return RuleResult(
            RULE,
            scope,
            jurisdiction,
            False,
            f"the earlier transfer {earlier} to this destination cannot be checked against: "
            f"{joint.unchecked}; {jurisdiction} ({scope}) looks back "
            f"{rules_.linkage_lookback_days} days",
            attributes,
            None,
            threshold,
            fixable=False,
        )
    if joint.smallest is None:
        return RuleResult(
            RULE,
            scope,
            jurisdiction,
            True,
            f"no one of this table can be placed in a class of the earlier transfer {earlier} "
            "(it held none of them, or the two share no quasi-identifier)",
            attributes,
            None,
            threshold,
        )
    too_small = rules_.min_k is not None and joint.smallest < rules_.min_k
    thin = {
        name: value
        for name, value in joint.diversity.items()
        if rules_.min_l is not None and value < rules_.min_l
    }
    joined = (
        f"joined with the earlier transfer {earlier} on {attributes} (the same people assumed "
        f"in both), {joint.linked_people:,} people fall in {joint.classes:,} joint classes, the "
        f"smallest of {joint.smallest} people"
        + (
            f" ({joint.people - joint.linked_people:,} fall in no class of it: people it did "
            "not hold, or values given already generalized, which the broker cannot place)"
            if joint.people > joint.linked_people
            else ""
        )
    )
    if not too_small and not thin:
        return RuleResult(
            RULE, scope, jurisdiction, True, joined, attributes, joint.smallest, threshold
        )
    failing = []
    if too_small:
        failing.append(f"{jurisdiction} ({scope}) requires k >= {rules_.min_k}")
    failing += [
        f"{name} has only {value} distinct value(s) in one, {jurisdiction} ({scope}) requires "
        f"l >= {rules_.min_l}"
        for name, value in thin.items()
    ]
    return RuleResult(
        RULE,
        scope,
        jurisdiction,
        False,
        f"{joined}: {'; '.join(failing)}; generalize these attributes at least as the earlier "
        "release did, or coarser",
        attributes,
        joint.smallest,
        threshold,
    )


def lookback(rule_sets: Sequence[RuleSet]) -> int | None:
    """The longest look-back of the rule sets (the stricter wins, as the rule declares), None
    when none looks back."""
    days = [r.linkage_lookback_days for r in rule_sets]
    return stricter.strictest(RuleSet, "linkage_lookback_days", days)

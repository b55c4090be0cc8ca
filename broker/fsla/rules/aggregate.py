"""The rules of an aggregate release (statistics under differential privacy): allowed at all,
epsilon and delta within the per-release caps, and the budgets within their windows (Dwork and
Roth 2014, *The Algorithmic Foundations of Differential Privacy*, sequential composition)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from broker.fsla.models import RuleSet
from broker.fsla.results import Requirements, RuleResult
from broker.privacy.budget import Asked, Budget, Spend, Standing, parse_amount, show, total


def aggregate_rules(
    scope: str,
    jurisdiction: str,
    rules_: RuleSet,
    asked: Asked,
    spends: Sequence[Spend],
    now: datetime,
) -> list[RuleResult]:
    """The rules of one rule set for an aggregate release: allowed at all, its epsilon and
    delta within the per-release caps, and the budgets (per dataset and destination, per
    source and destination) within their window, counting every earlier release's spend.

    ``spends``: what earlier releases from the same source to the same destination spent (at
    least those within this rule set's window). Every amount is an exact fraction.
    """
    where = f"{jurisdiction} ({scope})"
    if not rules_.aggregate_releases_allowed:
        return [
            RuleResult(
                "aggregate_allowed",
                scope,
                jurisdiction,
                False,
                f"{where} does not allow aggregate releases (statistics under differential "
                "privacy) of personal data",
                measured="aggregate",
                threshold="not allowed",
                fixable=False,
            )
        ]
    results = [
        RuleResult(
            "aggregate_allowed",
            scope,
            jurisdiction,
            True,
            f"{where} allows aggregate releases",
            fixable=False,
        )
    ]
    cap = parse_amount(rules_.max_epsilon_per_release)
    results.append(
        RuleResult(
            "max_epsilon_per_release",
            scope,
            jurisdiction,
            asked.epsilon <= cap,
            f"the release asks epsilon {show(asked.epsilon)}; {where} allows at most "
            f"{show(cap)} per release"
            + ("" if asked.epsilon <= cap else ": ask less (fewer queries, or more noise)"),
            measured=float(asked.epsilon),
            threshold=float(cap),
            fixable=False,
        )
    )
    delta_cap = parse_amount(rules_.max_delta_per_release or 0)
    results.append(
        RuleResult(
            "max_delta_per_release",
            scope,
            jurisdiction,
            asked.delta <= delta_cap,
            f"the release asks delta {show(asked.delta)}; {where} allows at most "
            f"{show(delta_cap)}"
            + (
                ""
                if asked.delta <= delta_cap
                else ": declare each histogram's keys (then no delta is needed) or ask less"
            ),
            measured=float(asked.delta),
            threshold=float(delta_cap),
            fixable=False,
        )
    )
    since = (
        None
        if rules_.budget_period_days is None
        else now - timedelta(days=rules_.budget_period_days)
    )
    window = "for ever" if since is None else f"in the last {rules_.budget_period_days} days"
    in_window = [s for s in spends if since is None or s.at >= since]
    budgets = (
        (
            "epsilon_budget",
            rules_.epsilon_budget,
            "this dataset to this destination",
            [s for s in in_window if s.dataset_key == asked.dataset_key],
        ),
        (
            "source_epsilon_budget",
            rules_.source_epsilon_budget,
            "this source to this destination, every dataset",
            in_window,
        ),
    )
    for rule, limit, what, counted in budgets:
        if limit is None:
            continue
        standing = Standing(
            Budget(parse_amount(limit), rules_.budget_period_days),
            total(s.epsilon for s in counted),
            asked.epsilon,
        )
        spent = (
            f"{len(counted)} earlier release{'s' if len(counted) != 1 else ''} of {what} "
            f"spent epsilon {show(standing.spent)} {window}"
        )
        results.append(
            RuleResult(
                rule,
                scope,
                jurisdiction,
                standing.fits,
                f"{spent}; {where} allows {show(standing.budget.limit)} in all, so "
                f"{show(standing.remaining)} remains"
                + (
                    f" and this release's {show(asked.epsilon)} fits"
                    if standing.fits
                    else f", less than this release's {show(asked.epsilon)}: refused, nothing spent"
                ),
                measured=float(standing.spent + asked.epsilon),
                threshold=float(standing.budget.limit),
                fixable=False,
            )
        )
    return results


def aggregate_instead(scope: str, jurisdiction: str, rules_: Requirements) -> RuleResult | None:
    """A note for a microdata transfer that may not leave as it is: when every rule set that
    applies allows aggregate releases, statistics of the same data could leave instead."""
    if not rules_.aggregate_releases_allowed:
        return None
    budgets = "; ".join(
        f"{b.jurisdiction} ({b.scope}) allows epsilon {b.limit:g} per "
        + ("dataset" if b.per == "dataset" else "source")
        + " and destination"
        + ("" if b.days is None else f" over {b.days} days")
        for b in rules_.budgets
    )
    delta = rules_.max_delta_per_release
    return RuleResult(
        "aggregate_release_possible",
        scope,
        jurisdiction,
        True,
        "the rows cannot leave as sent, but an aggregate release of this data would be "
        "allowed instead (kind=aggregate: counts, histograms, sums, means and quantiles under "
        f"differential privacy), spending at most epsilon {rules_.max_epsilon_per_release:g}"
        + (f" and delta {delta:g}" if delta else " and no delta (declare histogram keys)")
        + f" per release ({budgets})",
        measured=None,
        threshold=rules_.max_epsilon_per_release,
        fixable=False,
    )

"""Identifiers: an attribute that identifies people on its own (:mod:`broker.fsla.identifying`)
may not pass unless the rule set allows it; the remedy drops or generalizes it
(:func:`broker.fsla.identifying.dropped`)."""

from __future__ import annotations

from broker.fsla.identifying import identifying
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Aim, Judged
from broker.metrics.mmaq import IDENTIFIER

RULES = ("identifiers_allowed",)
PAPER = "Sweeney 2002, k-anonymity: a model for protecting privacy (explicit identifiers)"


def k_sources(aim: Aim) -> list[tuple[int, str]]:
    """The remedy's contribution: an identifier kept as a quasi-identifier (ordered values,
    generalized into ranges) needs classes of 2 rows at least. The others are dropped
    (:func:`broker.fsla.identifying.dropped`)."""
    if aim.requirements.identifiers_allowed:
        return []
    report = aim.report
    if any(
        report.attribute(q).measure.attribute_class == IDENTIFIER for q in aim.quasi_identifiers
    ):
        return [(2, "a class of one row is an identifier, which the rule sets forbid")]
    return []


def check(j: Judged) -> list[RuleResult]:
    if j.rules.identifiers_allowed:
        return []
    sensitive = set(j.context.sensitive)
    k = max(j.rules.min_k or 2, 2)

    def describe(a) -> str:
        if a.content.direct_identifier:
            return (
                f"{a.name!r} holds {a.content.direct_identifier.replace('_', ' ')} values, "
                f"direct identifiers, and {j.where} forbids identifiers: drop it"
            )
        if a.measure.attribute_class != IDENTIFIER:
            return (
                f"{a.name!r} singles out {a.rows_in_values_smaller_than(k):,} of "
                f"{a.measure.rows:,} rows (values fewer than {k} rows hold) and {j.where} "
                "forbids identifiers: declared sensitive or not, drop or generalize it"
            )
        return (
            f"{a.name!r} is an identifier (all {a.measure.categories:,} values are distinct) "
            f"and {j.where} forbids identifiers: drop or generalize it"
        )

    return j.per_attribute(
        "no_identifiers",
        [(a, IDENTIFIER) for a in j.report.attributes if identifying(a, sensitive, j.rules.min_k)],
        describe,
        "no identifier",
        f"no attribute is an identifier ({j.where} forbids them)",
    )

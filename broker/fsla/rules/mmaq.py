"""Mmaq: how much one attribute, or the quasi-identifiers together, separate rows (the measure
of the project's SPEC, docs/explanations/measures.md). Declared sensitive attributes are judged
by l and t instead. The remedy generalizes or suppresses an attribute until its index is within
the bound."""

from __future__ import annotations

import math

from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Judged

RULES = ("min_log10_mmaq", "max_mmaq_index", "qi_max_mmaq_index")
PAPER = "the Mmaq measure (SPEC.md; docs/explanations/measures.md)"


def check(j: Judged) -> list[RuleResult]:
    sensitive = set(j.context.sensitive)
    judged = [a for a in j.report.attributes if a.name not in sensitive]
    results: list[RuleResult] = []
    if j.rules.min_log10_mmaq is not None:
        floor = j.rules.min_log10_mmaq
        results += j.per_attribute(
            "min_log10_mmaq",
            [(a, round(a.measure.log10_mmaq, 6)) for a in judged if a.measure.log10_mmaq < floor],
            lambda a: (
                f"{a.name!r} has log10 Mmaq {a.measure.log10_mmaq:.4g}, below the "
                f"{floor:g} that {j.where} requires: generalize or suppress it"
            ),
            floor,
            f"every attribute has log10 Mmaq >= {floor:g}",
        )
    if j.rules.max_mmaq_index is not None:
        ceiling = j.rules.max_mmaq_index
        results += j.per_attribute(
            "max_mmaq_index",
            [(a, round(a.measure.mmaq_index, 6)) for a in judged if a.measure.mmaq_index > ceiling],
            lambda a: (
                f"{a.name!r} has Mmaq index {a.measure.mmaq_index:.4f}, above the "
                f"{ceiling:g} that {j.where} allows: generalize or suppress it"
            ),
            ceiling,
            f"every attribute has Mmaq index <= {ceiling:g}",
        )
    if j.rules.qi_max_mmaq_index is not None:
        qi = j.report.quasi_identifiers
        measured = qi.measure.mmaq_index if qi else 0.0
        bound = j.rules.qi_max_mmaq_index
        results.append(
            j.result(
                "qi_max_mmaq_index",
                measured <= bound,
                f"the quasi-identifiers {j.qi_names} together have Mmaq index {measured:.4f}; "
                f"{j.where} allows at most {bound:g}",
                j.qi_names,
                round(measured, 6),
                bound,
            )
        )
    return results


def index_bound(rules: RuleSet, rows: int) -> float | None:
    """The remedy's contribution: both per-attribute rules as one bound on each non-sensitive
    attribute's index (log10 Mmaq >= m <=> index <= m / (-N log10 N))."""
    bounds = [] if rules.max_mmaq_index is None else [rules.max_mmaq_index]
    if rules.min_log10_mmaq is not None and rows > 1:
        bounds.append(rules.min_log10_mmaq / (-rows * math.log10(rows)))
    return min(bounds) if bounds else None

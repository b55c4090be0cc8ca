"""Diversity of each declared sensitive attribute within the classes: distinct l-diversity and
recursive (c, l)-diversity (Machanavajjhala, Kifer, Gehrke and Venkitasubramaniam 2007,
*l-diversity: privacy beyond k-anonymity*) and (alpha, k)-anonymity (Wong, Li, Fu and Wang
2006). The remedy asks the anonymizer for the l they imply and raises k until the result,
measured again, passes."""

from __future__ import annotations

import math
from fractions import Fraction

from broker.fsla.models import RecursiveDiversityRule, RuleSet
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Aim, Judged
from broker.metrics.anonymity import SensitiveMeasure

RULES = ("min_l", "max_alpha", "recursive_c_l")
PAPER = "Machanavajjhala et al. 2007 (l-diversity); Wong et al. 2006 ((alpha, k)-anonymity)"
SENSITIVE = True  # judges declared sensitive attributes


def l_needed(rules: RuleSet) -> int | None:
    """The l the anonymizer is asked for: distinct l, or the l that alpha and recursive (c, l)
    imply (necessary, not sufficient: the remedy raises k until the result passes)."""
    needed = rules.min_l
    if rules.max_alpha is not None:
        needed = max(needed or 1, l_for(rules.max_alpha))
    if rules.recursive_c_l is not None:
        needed = max(needed or 1, rules.recursive_c_l.l)
    return needed


def k_sources(aim: Aim) -> list[tuple[int, str]]:
    """The remedy's contribution: classes of at least l rows."""
    needed = l_needed(aim.requirements)
    if needed and aim.diverse:
        return [(needed, f"l = {needed} needs classes of at least {needed} rows")]
    return []


def check(j: Judged) -> list[RuleResult]:
    results = []
    for measure in j.report.sensitive:
        name = measure.name
        if j.rules.min_l is not None:
            results.append(
                j.result(
                    "min_l",
                    measure.l_diversity >= j.rules.min_l,
                    f"{name!r} has l = {measure.l_diversity} distinct values in its poorest "
                    f"class; {j.where} requires l >= {j.rules.min_l}",
                    name,
                    measure.l_diversity,
                    j.rules.min_l,
                )
            )
        if j.rules.max_alpha is not None:
            share, bound = measure.alpha, j.rules.max_alpha
            results.append(
                j.result(
                    "max_alpha",
                    share <= bound,
                    f"one value of {name!r} makes up {share:.4g} of a class; {j.where} allows "
                    f"at most {bound:g} ((alpha, k)-anonymity)"
                    + (
                        ""
                        if share <= bound
                        else f": the remedy asks for l >= {l_for(bound)} distinct values per "
                        "class and raises k until the result, measured again, passes"
                    ),
                    name,
                    round(share, 6),
                    bound,
                )
            )
        if j.rules.recursive_c_l is not None:
            results.append(_recursive_rule(measure, j.rules.recursive_c_l, j.scope, j.jurisdiction))
    return results


def l_for(share: float) -> int:
    """The fewest distinct values a class needs for no value to exceed ``share`` of it: what
    (alpha, k)-anonymity asks of l (necessary, not sufficient: the remedy is verified).

    Examples
    --------
    >>> l_for(0.5), l_for(0.3), l_for(1.0)
    (2, 4, 1)
    """
    return math.ceil(1 / Fraction(share))


def _recursive_rule(
    measure: SensitiveMeasure, rule: RecursiveDiversityRule, scope: str, jurisdiction: str
) -> RuleResult:
    """Recursive (c, l)-diversity of one sensitive attribute, from the report's bounds."""
    where, name = f"{jurisdiction} ({scope})", measure.name
    stated = f"{where} requires recursive ({rule.c:g}, {rule.l})-diversity"
    remedy = (
        f": the remedy asks for l >= {rule.l} distinct values per class and raises k until the "
        "result, measured again, passes"
    )
    if rule.l > measure.l_diversity:
        return RuleResult(
            "recursive_c_l",
            scope,
            jurisdiction,
            False,
            f"{name!r} has a class of {measure.l_diversity} distinct values, fewer than "
            f"l = {rule.l}; {stated}{remedy}",
            name,
            f"l = {measure.l_diversity}",
            f"c = {rule.c:g}, l = {rule.l}",
        )
    bound = measure.recursive_c_bounds[rule.l - 2]
    passed = rule.c > bound
    return RuleResult(
        "recursive_c_l",
        scope,
        jurisdiction,
        passed,
        f"{name!r} holds recursive (c, {rule.l})-diversity for every c above {bound:.4g}; "
        f"{stated}" + ("" if passed else remedy),
        name,
        round(bound, 6),
        f"c = {rule.c:g}, l = {rule.l}",
    )

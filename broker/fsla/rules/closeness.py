"""Closeness of each declared sensitive attribute's distribution in a class to the table's:
t-closeness (Li, Li and Venkatasubramanian 2007), basic and enhanced beta-likeness (Cao and
Karras 2012) and delta-disclosure privacy (Brickell and Shmatikov 2008). The remedy raises k
(larger classes come closer to the table) until the result, measured again, passes."""

from __future__ import annotations

from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Aim, Judged
from broker.metrics.anonymity import SensitiveMeasure

RULES = ("max_beta", "max_enhanced_beta", "max_delta", "max_t")
PAPER = (
    "Li et al. 2007 (t-closeness); Cao and Karras 2012 (beta-likeness); Brickell and Shmatikov "
    "2008 (delta-disclosure)"
)
SENSITIVE = True  # judges declared sensitive attributes


def k_sources(aim: Aim) -> list[tuple[int, str]]:
    """The remedy's contribution: beta-likeness and delta-disclosure need classes of 2 rows
    (k then rises until the result passes); t is asked of the anonymizer itself."""
    req = aim.requirements
    likeness = (req.max_beta, req.max_enhanced_beta, req.max_delta)
    if aim.diverse and any(bound is not None for bound in likeness):
        return [(2, "beta-likeness and delta-disclosure need classes of 2 rows or more")]
    return []


def check(j: Judged) -> list[RuleResult]:
    results = []
    for measure in j.report.sensitive:
        results += _likeness_rules(measure, j.rules, j.scope, j.jurisdiction)
        if j.rules.max_t is not None:
            t, bound = measure.t_closeness, j.rules.max_t
            results.append(
                j.result(
                    "max_t",
                    t <= bound,
                    f"{measure.name!r} has t = {t:.4f}; {j.where} allows t <= {bound:g}",
                    measure.name,
                    round(t, 6),
                    bound,
                )
            )
    return results


GROWING_K = (
    ": the remedy k-anonymizes the quasi-identifiers with k raised (larger classes come closer "
    "to the table's distribution) until the result, measured again, passes"
)


def _likeness_rules(
    measure: SensitiveMeasure, rules_: RuleSet, scope: str, jurisdiction: str
) -> list[RuleResult]:
    """Basic and enhanced beta-likeness and delta-disclosure of one sensitive attribute."""
    where, name = f"{jurisdiction} ({scope})", measure.name
    results = []
    if rules_.max_beta is not None:
        beta, bound = measure.beta_likeness, rules_.max_beta
        results.append(
            RuleResult(
                "max_beta",
                scope,
                jurisdiction,
                beta <= bound,
                f"a value of {name!r} gains {beta:.4g} (relative) on its share of the table "
                f"in a class; {where} allows at most {bound:g} (basic beta-likeness)"
                + ("" if beta <= bound else GROWING_K),
                name,
                round(beta, 6),
                bound,
            )
        )
    if rules_.max_enhanced_beta is not None:
        beta, bound = measure.enhanced_beta_likeness, rules_.max_enhanced_beta
        passed = beta is not None and beta <= bound
        found = (
            f"holds enhanced beta-likeness for every beta from {beta:.4g}"
            if beta is not None
            else "has a value whose gain in a class exceeds -ln of its share of the table, so "
            "no beta holds"
        )
        results.append(
            RuleResult(
                "max_enhanced_beta",
                scope,
                jurisdiction,
                passed,
                f"{name!r} {found}; {where} requires enhanced {bound:g}-likeness"
                + ("" if passed else GROWING_K),
                name,
                "none" if beta is None else round(beta, 6),
                bound,
            )
        )
    if rules_.max_delta is not None:
        delta, bound = measure.delta_disclosure, rules_.max_delta
        results.append(
            RuleResult(
                "max_delta",
                scope,
                jurisdiction,
                delta < bound,
                f"a value of {name!r} has |ln(class share / table share)| = {delta:.4g}; "
                f"{where} requires it below {bound:g} (delta-disclosure privacy)"
                + ("" if delta < bound else GROWING_K),
                name,
                round(delta, 6),
                bound,
            )
        )
    return results

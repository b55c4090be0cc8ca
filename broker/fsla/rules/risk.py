"""Re-identification risk: the journalist and marketer risks of the quasi-identifiers (El Emam,
*Guide to the De-Identification of Personal Health Information*, 2013, as ARX reports them), the
population uniqueness estimated at the rule set's sampling fraction (Dankar, El Emam, Neisa and
Roffey 2012, *Estimating the re-identification risk of clinical data sets*) and the expected
re-identifications (Benedetti and Franconi's individual risk, as sdcMicro). The remedy
k-anonymizes the quasi-identifiers with the k that brings each within its bound."""

from __future__ import annotations

import math
from fractions import Fraction

from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Aim, Judged
from broker.metrics.report import AnalysisReport
from broker.metrics.uniqueness import (
    k_for_expected_reidentifications,
    population_uniqueness,
    uniform_individual_risk,
)

RULES = (
    "max_journalist_risk",
    "max_marketer_risk",
    "sampling_fraction",
    "max_population_uniqueness",
    "max_expected_reidentifications",
)
PAPER = (
    "El Emam 2013 (journalist, marketer risk); Dankar et al. 2012 (population uniqueness); "
    "Benedetti and Franconi 1998 (individual risk)"
)


def k_sources(aim: Aim) -> list[tuple[int, str]]:
    """The remedy's contribution: the k that brings each risk within its bound."""
    req, sources = aim.requirements, []
    for label, risk in (
        ("journalist", req.max_journalist_risk),
        ("marketer", req.max_marketer_risk),
    ):
        if risk is not None:
            sources.append(
                (k_for(risk), f"the rule sets bound {label} risk at {risk:g} <= 1/{k_for(risk)}")
            )
    if "max_population_uniqueness" in aim.failing:
        # no sample unique: every estimate is 0
        sources.append((2, "population uniqueness is 0 once no class holds a single row"))
    if "max_expected_reidentifications" in aim.failing:
        for fraction, bound in req.expected_reidentification_bounds:
            sources.append(
                (
                    k_for_expected_reidentifications(aim.report.rows, fraction, bound),
                    f"at most {bound:g} expected re-identifications at sampling fraction "
                    f"{fraction:g}",
                )
            )
    return sources


def check(j: Judged) -> list[RuleResult]:
    report, qi = j.report, j.report.quasi_identifiers
    results = []
    risks = (
        ("max_journalist_risk", "journalist risk", j.rules.max_journalist_risk),
        ("max_marketer_risk", "marketer risk", j.rules.max_marketer_risk),
    )
    for rule, label, ceiling in risks:
        if ceiling is None:
            continue
        measured = _risk(report, rule)
        against = (
            "its population table"
            if qi and qi.anonymity.against_population
            else "the dataset taken as the whole population"
        )
        results.append(
            j.result(
                rule,
                measured <= ceiling,
                f"the quasi-identifiers {j.qi_names} give a {label} of {measured:.4g} (against "
                f"{against}); {j.where} allows at most {ceiling:g}"
                + ("" if measured <= ceiling else f": k-anonymize them with k >= {k_for(ceiling)}"),
                j.qi_names,
                round(measured, 6),
                ceiling,
            )
        )
    return results + _population_rules(report, j.rules, j.scope, j.jurisdiction, j.qi_names)


def _risk(report: AnalysisReport, rule: str) -> float:
    """The journalist (highest) or marketer risk; without quasi-identifiers the table is one
    class."""
    qi = report.quasi_identifiers
    if qi is None:
        return 1.0 / report.rows
    if rule == "max_journalist_risk":
        return qi.anonymity.journalist_risk.max
    return qi.anonymity.marketer_risk


def k_for(risk: float) -> int:
    """The smallest k whose classes bring both risks down to ``risk``: every class of k rows or
    more has a population class as large, so 1 / k bounds the journalist risk and classes / N
    (or the mean of f / F) the marketer risk.

    Examples
    --------
    >>> k_for(0.2), k_for(0.1), k_for(0.3), k_for(1.0)
    (5, 10, 4, 1)
    """
    return math.ceil(1 / Fraction(risk))


def _population_rules(
    report: AnalysisReport, rules_: RuleSet, scope: str, jurisdiction: str, qi_names: str
) -> list[RuleResult]:
    """Population uniqueness and expected re-identifications at the rule set's stated sampling
    fraction, from the quasi-identifiers' class sizes (without them, the table is one class)."""
    pi = rules_.sampling_fraction
    if pi is None:
        return []
    where = f"{jurisdiction} ({scope})"
    qi = report.quasi_identifiers
    histogram = qi.anonymity.class_size_histogram if qi else {report.rows: 1}
    results = []
    if rules_.max_population_uniqueness is not None:
        estimate = population_uniqueness(histogram, pi)
        bound = rules_.max_population_uniqueness
        share = estimate.dankar.share
        if share is None:  # no model gives an estimate: the sample's own uniqueness
            share = histogram.get(1, 0) / report.rows
        passed = share <= bound
        results.append(
            RuleResult(
                "max_population_uniqueness",
                scope,
                jurisdiction,
                passed,
                f"the quasi-identifiers {qi_names} leave an estimated {share:.4%} of the "
                f"population unique (Dankar et al.'s rule chose {estimate.dankar_model}; "
                f"sampling fraction {pi:g} as {where} states); {where} allows at most "
                f"{bound:g}" + ("" if passed else ": k-anonymize them with k >= 2"),
                qi_names,
                round(share, 6),
                bound,
            )
        )
    if rules_.max_expected_reidentifications is not None:
        expected = uniform_individual_risk(histogram, pi)
        bound = rules_.max_expected_reidentifications
        passed = expected <= bound
        k = k_for_expected_reidentifications(report.rows, pi, bound)
        results.append(
            RuleResult(
                "max_expected_reidentifications",
                scope,
                jurisdiction,
                passed,
                f"the quasi-identifiers {qi_names} give {expected:.4g} expected "
                f"re-identifications (individual risk, each row standing for {1 / pi:.4g} "
                f"people as {where} states); {where} allows at most {bound:g}"
                + ("" if passed else f": k-anonymize them with k >= {k}"),
                qi_names,
                round(expected, 6),
                bound,
            )
        )
    return results

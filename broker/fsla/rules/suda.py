"""Special uniques: the highest DIS-SUDA score of any record on the quasi-identifiers (Elliot,
Manning and Ford 2002, SUDA; Skinner and Elliot 2002, DIS), as sdcMicro's ``suda2`` computes it
(:mod:`broker.metrics.suda`), at the rule set's sampling fraction.

SUDA is a search over the subsets of the quasi-identifiers, so it runs only when a rule set sets
``max_dis_suda`` (:func:`strictest_fraction` is None otherwise): the decision then adds its
figures to the report (:func:`with_suda`), measured within the broker's bound
(:data:`broker.metrics.suda.BROKER_MAX_UNIQUE_BITS`). A search
beyond its bounds (:func:`broker.metrics.suda.over_budget`) is not run: the rule fails, saying
so, and the remedy still applies. The remedy k-anonymizes the quasi-identifiers with k >= 2 (in
rows): no record is then unique on any subset of them, so nothing scores; the anonymized table's
SUDA is measured again before the remedy is offered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from broker.engines.base import Engine
from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Aim, Judged
from broker.metrics import suda as metrics_suda
from broker.metrics.report import AnalysisReport, SudaOptions, suda_figures
from broker.metrics.suda import DEFAULT_DIS_FRACTION, over_budget

RULES = ("max_dis_suda",)

PAPER = (
    "Elliot, Manning and Ford 2002 (SUDA, IJUFKS 10(5)); Skinner and Elliot 2002 (DIS, JRSS B "
    "64(4)); sdcMicro's suda2"
)


def dis_fraction(rules: RuleSet) -> float:
    """The sampling fraction DIS-SUDA is judged at: the rule set's, else sdcMicro's 0.01."""
    fraction = rules.sampling_fraction
    return DEFAULT_DIS_FRACTION if fraction is None else fraction


def k_sources(aim: Aim) -> list[tuple[int, str]]:
    """The remedy's contribution: k = 2 leaves no sample unique on any key set."""
    if "max_dis_suda" not in aim.failing:
        return []
    return [(2, "no record has a minimal sample unique (DIS-SUDA 0) once every class holds 2 rows")]


def check(j: Judged) -> list[RuleResult]:
    bound = j.rules.max_dis_suda
    if bound is None:
        return []
    fraction = dis_fraction(j.rules)
    report, qi = j.report, j.report.quasi_identifiers
    if qi is None:  # the whole table is one class: unique only when it has one row
        unique = report.rows == 1
        measured = 1.0 if unique else 0.0
        return [
            j.result(
                "max_dis_suda",
                measured <= bound,
                f"without quasi-identifiers no record is a sample unique (DIS-SUDA {measured:g}); "
                f"{j.where} allows at most {bound:g}",
                None,
                measured,
                bound,
            )
        ]
    figures = report.suda
    if figures is None or list(figures.quasi_identifiers) != list(qi.attributes):
        bits = metrics_suda.BROKER_MAX_UNIQUE_BITS
        why = over_budget(len(qi.attributes), qi.anonymity.equivalence_classes, max_bits=bits)
        reason = f"{why.split(':')[0]}: beyond the broker's bounds" if why else "not measured"
        return [
            j.result(
                "max_dis_suda",
                False,
                f"the DIS-SUDA of the quasi-identifiers {j.qi_names} is unknown ({reason}); "
                f"{j.where} allows at most {bound:g}: k-anonymize them with k >= 2, which "
                "leaves no sample unique, or declare fewer quasi-identifiers",
                j.qi_names,
                None,
                bound,
            )
        ]
    measured = figures.max_dis_at(fraction)
    passed = measured <= bound
    detail = (
        f"the riskiest record on the quasi-identifiers {j.qi_names} has DIS-SUDA "
        f"{measured:.4g} (SUDA score {figures.max_score:g}; {figures.records_with_msus:,} "
        f"record(s) have minimal sample uniques; sampling fraction {fraction:g}); {j.where} "
        f"allows at most {bound:g}"
    )
    if not passed:
        carriers = sorted(figures.attribute_contributions.items(), key=lambda item: -item[1])
        named = ", ".join(f"{name} {share:.0f} %" for name, share in carriers[:3] if share > 0)
        detail += (
            f": the attributes that carry most of the SUDA scores are {named}; generalize "
            "them, or k-anonymize the quasi-identifiers with k >= 2 (no sample unique is left)"
        )
    return [j.result("max_dis_suda", passed, detail, j.qi_names, round(measured, 6), bound)]


def strictest_fraction(rule_sets: Iterable[RuleSet]) -> float | None:
    """The largest sampling fraction of the rule sets that bound DIS-SUDA (the one giving the
    highest scores, which the report then shows); None when none does."""
    fractions = [dis_fraction(rules) for rules in rule_sets if rules.max_dis_suda is not None]
    return max(fractions) if fractions else None


def with_suda(engine: Engine, report: AnalysisReport, fraction: float) -> AnalysisReport:
    """``report`` with the SUDA figures of its quasi-identifiers at ``fraction`` (unchanged when
    it has them, has no quasi-identifiers, or when the search would pass its bounds: the rule
    then says so)."""
    qi = report.quasi_identifiers
    if qi is None:
        return report
    found = report.suda
    if found is not None and found.quasi_identifiers == qi.attributes:
        return report
    try:
        bits = metrics_suda.BROKER_MAX_UNIQUE_BITS  # read at the call: one home, patchable
        options = SudaOptions(dis_fraction=fraction, max_bits=bits)
        figures = suda_figures(engine, qi.attributes, options)
    except ValueError:  # beyond the search's bounds
        return report
    return dataclasses.replace(report, suda=figures)

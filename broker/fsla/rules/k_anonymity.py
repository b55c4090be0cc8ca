"""k-anonymity: every class of the quasi-identifiers holds at least k people (Sweeney 2002,
*k-anonymity: a model for protecting privacy*); with several sensitive attributes, each is
protected as if the others were known (multi-attribute: k, l and t within the classes of all the
other attributes). The remedy k-anonymizes the quasi-identifiers."""

from __future__ import annotations

from broker.engines.base import PERSON_KEY, WORST_CASE
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Aim, Judged
from broker.metrics.report import AnalysisReport

RULES = ("min_k",)
PAPER = "Sweeney 2002, k-anonymity: a model for protecting privacy (IJUFKS 10(5))"


def k_sources(aim: Aim) -> list[tuple[int, str]]:
    """The remedy's contribution: k = min_k."""
    k = aim.requirements.min_k
    return [(k, f"the rule sets ask min_k = {k}")] if k else []


def check(j: Judged) -> list[RuleResult]:
    if j.rules.min_k is None:
        return []
    report, minimum = j.report, j.rules.min_k
    qi = report.quasi_identifiers
    k = qi.anonymity.k_people if qi else report.rows - report.duplicate_rows
    rows_k = qi.anonymity.k if qi else report.rows
    results = [
        j.result(
            "min_k",
            k >= minimum,
            f"the quasi-identifiers {j.qi_names} give k = {k}{_in_people(report, k, rows_k)}; "
            f"{j.where} requires k >= {minimum}" + ("" if k >= minimum else ": k-anonymize them"),
            j.qi_names,
            k,
            minimum,
        )
    ]
    if len(report.sensitive) > 1:
        for measure in report.sensitive:
            known = ", ".join(measure.known_attributes)
            results.append(
                j.result(
                    "min_k",
                    measure.k >= minimum,
                    f"whoever knows {known} narrows a row down to k = {measure.k} rows before "
                    f"learning its {measure.name!r}; {j.where} requires k >= {minimum} (with "
                    "several sensitive attributes, each is protected as if the others were "
                    "known)",
                    measure.name,
                    measure.k,
                    minimum,
                )
            )
    return results


def _in_people(report: AnalysisReport, k: int, rows_k: int) -> str:
    """What the people count means, when it differs from the row count."""
    if k == rows_k:
        return ""
    rare = (
        f"{report.rare_tuple_rows:,} rows repeat {report.rare_tuples:,} rare tuple(s) of the "
        "quasi-identifiers (or tuples nudged a little apart), each one person at worst, as the "
        "broker cannot tell one person sent several times from several"
    )
    if report.people_counted_by == PERSON_KEY:
        joined = f"; {rare}, whatever the key says" if report.rare_tuples else ""
        return (
            f" people by the declared person key, which only joins rows ({rows_k} counted in "
            f"rows{joined})"
        )
    if report.people_counted_by == WORST_CASE:
        return (
            f" people at worst ({rows_k} counted in rows: {rare}; a person key would not split "
            "them, it only joins rows: generalize the quasi-identifiers)"
        )
    return (
        f" people ({rows_k} counted in rows: {report.duplicate_rows:,} rows repeat another row "
        "exactly, and identical rows are one person; a person key only joins rows)"
    )

"""The verdict of a report in words: a headline and a few sentences, before any figure.

Pure: it reads the report as a dict (``AnalysisReport.as_dict()``, or the ``report`` of a
transfer answer) and, for a transfer, the transfer answer itself (``TransferRead`` as JSON).
Without a policy (``fedbroker analyze``) the verdict says what an attacker can do, never whether
that is allowed; for a transfer, the decision and the rules that failed say that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from broker.fsla.stored import RemedyStep, StoredRemedy
from broker.fsla.summary import summarize

# What the headline's tone is: "good" (green), "warn" (amber), "bad" (red).
GOOD, WARN, BAD = "good", "warn", "bad"

DECISIONS = {
    "approved": ("Approved", GOOD),
    "anonymization_required": ("Anonymization required", WARN),
    "rejected": ("Rejected", BAD),
}


@dataclass(frozen=True)
class Verdict:
    """A headline (one short sentence), its tone, and the sentences that explain it."""

    headline: str
    tone: str
    sentences: list[str] = field(default_factory=list)


def percent(share: float) -> str:
    """A share in 0..1 as a percentage a person reads: ``"33 %"``, ``"0.4 %"``, ``"0 %"``."""
    value = 100 * share
    if value == 0 or value >= 10 or value == round(value):
        return f"{value:.0f} %"
    return f"{value:.2g} %"


def data_sentences(report: Mapping[str, Any]) -> tuple[list[str], str]:
    """What the measures say about the data, and the tone they call for (without a policy)."""
    sentences, tone = [], GOOD
    sensitive = {s["name"] for s in report.get("sensitive") or []}  # judged by l and t
    identifiers = [
        a["name"]
        for a in report.get("attributes", [])
        if (a.get("class") == "identifier" or a.get("direct_identifier"))
        and a["name"] not in sensitive
    ]
    if identifiers:
        tone = BAD
        sentences.append(
            f"{_names(identifiers)} {'identifies' if len(identifiers) == 1 else 'identify'} "
            "people on their own (every value distinct, or direct identifiers such as phone "
            "numbers): drop or generalize them before the data leaves."
        )
    qi = report.get("quasi_identifiers")
    rows = report.get("rows", 0)
    if qi is None:
        sentences.append(
            "No quasi-identifiers were declared, so the records' equivalence classes and their "
            "re-identification risk are not measured: declare the columns an outsider may know."
        )
        return sentences, tone
    risk = qi["prosecutor_risk"]
    k = qi["k"]
    known = _names(qi["attributes"])
    unique = round(risk["unique_share"] * rows)
    if k <= 1:
        tone = BAD
        sentences.append(
            f"{unique:,} of {rows:,} records ({percent(risk['unique_share'])}) are unique on "
            f"{known}: whoever knows these values of a person finds that person's record."
        )
    else:
        sentences.append(
            f"Every record shares its values of {known} with at least {k - 1:,} other "
            f"record{'s' if k > 2 else ''} (k = {k:,})."
        )
    sentences.append(
        f"An attacker who knows {known} picks the right record with probability at most "
        f"{percent(risk['max'])} and {percent(risk['average'])} on average "
        f"({qi['equivalence_classes']:,} classes over {rows:,} records)."
    )
    if k > 1 and risk["max"] > 0.2 and tone == GOOD:
        tone = WARN
    for sensitive in report.get("sensitive") or []:
        l_value = sensitive["l_diversity"]
        t_value = sensitive["t_closeness"]
        if l_value <= 1:
            tone = BAD
            sentences.append(
                f"Some class of records has a single value of {sensitive['name']!r} (l = 1): "
                "knowing who is in the class discloses it."
            )
        else:
            sentences.append(
                f"Every class holds at least {l_value:,} distinct values of "
                f"{sensitive['name']!r} (l = {l_value:,}); its distribution in a class differs "
                f"from the whole table's by at most t = {t_value:.2f}."
            )
    return sentences, tone


def analysis_verdict(report: Mapping[str, Any]) -> Verdict:
    """The verdict on a measured dataset, with no policy to judge it by."""
    sentences, tone = data_sentences(report)
    qi = report.get("quasi_identifiers")
    if tone == BAD and any("identif" in s and "on their own" in s for s in sentences):
        headline = "Not anonymized: some columns identify people on their own"
    elif qi is None:
        headline = "Measured column by column; no quasi-identifiers declared"
    elif qi["k"] <= 1:
        headline = "Some records can be singled out"
    elif tone == BAD:
        headline = f"k-anonymous (k = {qi['k']:,}), but a sensitive value can be disclosed"
    else:
        headline = f"k-anonymous with k = {qi['k']:,}"
    return Verdict(headline, tone, sentences)


def transfer_verdict(transfer: Mapping[str, Any]) -> Verdict:
    """The verdict on a transfer: its decision, why, and what the data that leaves looks like."""
    status = transfer.get("status", "")
    headline, tone = DECISIONS.get(status, (status.replace("_", " ").capitalize(), WARN))
    remedy = StoredRemedy.of(transfer.get("remedy")) or StoredRemedy(verified=False, steps=[])
    sentences = []
    route = f"{transfer.get('source')} to {transfer.get('destination')}"
    purpose = transfer.get("purpose")
    if status == "approved" and remedy.applied:
        headline = "Approved after anonymization by the broker"
        sentences.append(
            f"From {route} for {purpose!r}: the broker anonymized the data itself and delivers "
            "only the anonymized result; the figures below are those of the data that leaves."
        )
    elif status == "approved" and (transfer.get("dataset") or {}).get("anonymized"):
        sentences.append(
            f"From {route} for {purpose!r}: the broker anonymized the data before delivering it, "
            "and the data delivered passed every rule."
        )
    elif status == "approved":
        sentences.append(f"From {route} for {purpose!r}: every rule passed.")
    else:
        sentences.append(f"From {route} for {purpose!r}.")
    sentences += _problems(transfer)
    if remedy.steps and not remedy.applied:
        verified = "verified on this data" if remedy.verified else "not verified"
        steps = "; ".join(_step(step) for step in remedy.steps)
        sentences.append(f"Remedy ({verified}): {steps}.")
    if remedy.note:
        sentences.append(remedy.note)
    report = transfer.get("report")
    if report:
        data, _ = data_sentences(report)
        sentences += data
    else:
        sentences.append(
            "The measurement report of the upload is shown to its source and to admins only."
        )
    return Verdict(headline, tone, sentences)


def _problems(transfer: Mapping[str, Any]) -> list[str]:
    """One sentence per problem, as the decision's ``summary`` merges them across rules and
    jurisdictions (:func:`broker.fsla.summary.summarize`, computed here for a transfer read
    without one), with what to do next."""
    entries = transfer.get("summary") or summarize(
        transfer.get("status", ""),
        transfer.get("rules") or [],
        transfer.get("remedy"),
        transfer.get("quasi_identifiers") or (),
        transfer.get("anonymize", "none"),
    )
    sentences = []
    for entry in entries:
        if entry.get("kind") != "problem":
            continue
        where = ", ".join(entry.get("jurisdictions") or [])
        rules = ", ".join(entry.get("rules") or [])
        sentences.append(
            f"Failed: {entry['problem'].rstrip('.')}. Rules failed: {rules}"
            + (f" ({where})" if where else "")
            + f". To do: {entry['do'].rstrip('.')}."
        )
    return sentences


def _step(step: RemedyStep) -> str:
    column, method, parameters = step.column, step.method, step.parameters
    if method == "mondrian":
        names = _names(parameters.get("quasi_identifiers") or []) or "the quasi-identifiers"
        return f"k-anonymize {names} with k = {parameters.get('k')}"
    return f"{method} {column}" if column else method


def _names(names: list[str]) -> str:
    names = [str(name) for name in names]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]

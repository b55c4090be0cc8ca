"""Replay a draft F-SLA record over past decisions: which verdicts would change, and why.

Pure: the service reads the past transfers and the policy versions they used; this module
rebuilds each stored report (:func:`report_from_dict`), checks that it gives the stored rule
results again under the versions the decision used, then evaluates it under the draft with
:func:`broker.fsla.evaluate.evaluate`, the function the broker decides with.

The data itself is not kept, so some things cannot be replayed, and each replay says which
instead of guessing:

- the **verdict** replayed is the rules' verdict *before* any remedy (``approved``,
  ``anonymization_required`` or ``rejected``). Whether a verified remedy exists, and what
  ``anonymize=auto`` would deliver, depends on the rows. A transfer anonymized by the broker is
  replayed from the report of the data it received (``remedy.before``), and the report of what
  it delivered is also judged under the draft (``delivered_passes``).
- **linkage** with earlier releases joins the rows with the released classes: a rule set that
  looks back is named in ``not_replayed``, and its stored results are left out of the comparison.
- **identifiers among sensitive attributes** at k > 2: the report keeps the rows whose value no
  other row holds (k = 2), not how many hold values shared by fewer than k rows. When that is not
  enough to decide, the attribute is named in ``not_replayed``.
- a stored report that does not give the stored results again under the versions the decision
  used (a decision made by an older broker, whose rules measured something else) is not replayed
  at all (``replayable`` false, with the rules that differ).

Federation rules (destination unknown, suspended or the source itself) do not depend on any
F-SLA record: such a rejection never changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from broker.columns.precision import ColumnPrecision, Limits
from broker.engines.base import PERSON_KEY
from broker.fsla.evaluate import applicable_rule_sets, evaluate
from broker.fsla.identifying import identifying
from broker.fsla.linkage import RULE as LINKAGE
from broker.fsla.linkage import lookback
from broker.fsla.models import FSLARecord, RuleSet
from broker.fsla.precision import FIELDS, limits_of
from broker.fsla.results import RuleResult, TransferContext
from broker.fsla.stored import StoredRemedy, StoredRule
from broker.metrics.anonymity import JournalistRisk, KAnonymity, ProsecutorRisk, SensitiveMeasure
from broker.metrics.content import Content
from broker.metrics.mmaq import IDENTIFIER, MmaqMeasure
from broker.metrics.report import AnalysisReport, AttributeReport, QuasiIdentifierReport
from broker.metrics.stored import MmaqFields, StoredReport
from broker.metrics.suda import SudaFigures
from broker.wire.statuses import TransferStatus

FEDERATION = "federation"
REMEDY_FOUND = "remedy_found"
NO_IDENTIFIERS = "no_identifiers"
MAX_DIS_SUDA = "max_dis_suda"
PRECISION_RULES = frozenset({*FIELDS, "identifying_precision"})
PASSED, FAILED, NOT_CHECKED = "passed", "failed", "not checked"

# (rule, scope, jurisdiction, attribute): one rule result of one decision
RuleKey = tuple[str, str, str, str | None]


def _measure(data: MmaqFields) -> MmaqMeasure:
    return MmaqMeasure(
        rows=data.rows,
        categories=data.categories,
        shannon=data.shannon,
        shannon_normalized=data.shannon_normalized,
        log10_stabilizer=data.log10_stabilizer,
        log10_mmaq=data.log10_mmaq,
        mmaq_index=data.mmaq_index,
        attribute_class=data.class_,
    )


def report_from_dict(data: dict[str, Any] | StoredReport) -> AnalysisReport:
    """The report a decision stored (:meth:`AnalysisReport.stored`), read with its model
    (:class:`broker.metrics.stored.StoredReport`, which gives an older row its defaults) and
    rebuilt for the rules.

    What the rules read is rebuilt exactly, except each attribute's value-class sizes: only the
    number of rows whose value no other row holds is stored, so ``class_sizes`` is
    ``(0, singled_out_rows)`` (exact for k <= 2, a lower bound above). Combinations and the
    population section, which no rule reads, are left out.

    Examples
    --------
    >>> from broker.metrics.report import analyze
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"age": [30, 30, 40, 40], "zip": ["1", "1", "2", "3"]})
    >>> report = analyze(frame, quasi_identifiers=["age", "zip"])
    >>> again = report_from_dict(report.stored())
    >>> again.quasi_identifiers.anonymity.k, again.attribute("zip").singled_out
    (1, 2)
    """
    document = StoredReport.model_validate(data)
    qi = document.quasi_identifiers
    quasi_identifiers = None
    if qi is not None:
        quasi_identifiers = QuasiIdentifierReport(
            attributes=tuple(qi.attributes),
            anonymity=KAnonymity(
                k=qi.k,
                equivalence_classes=qi.equivalence_classes,
                class_size_histogram={
                    int(size): count for size, count in qi.class_size_histogram.items()
                },
                prosecutor_risk=ProsecutorRisk(**qi.prosecutor_risk.model_dump()),
                k_people=qi.k_people,
                journalist_risk=JournalistRisk(**qi.journalist_risk.model_dump()),
                marketer_risk=qi.marketer_risk,
                against_population=qi.risk_population == "population_table",
            ),
            measure=_measure(qi),
        )
    return AnalysisReport(
        rows=document.rows,
        attributes=[
            AttributeReport(
                name=a.name,
                measure=_measure(a),
                qir_risk_percent=a.qir_risk_percent,
                qir_class=a.qir_class,
                content=Content(a.values, a.direct_identifier, a.identifier_evidence),
                singled_out=a.singled_out_rows,
                class_sizes=(0, a.singled_out_rows),
                precision=ColumnPrecision.from_dict(
                    None if a.precision is None else a.precision.model_dump()
                ),
            )
            for a in document.attributes
        ],
        combinations=[],
        quasi_identifiers=quasi_identifiers,
        sensitive=[
            SensitiveMeasure(
                name=s.name,
                l_diversity=s.l_diversity,
                entropy_l_diversity=s.entropy_l_diversity,
                t_closeness=s.t_closeness,
                t_closeness_method=s.t_closeness_method,
                k=s.k,
                known_attributes=tuple(s.known_attributes),
                alpha=s.alpha,
                recursive_c=s.recursive_c,
                recursive_c_bounds=tuple(
                    bound
                    for _, bound in sorted((int(l), b) for l, b in s.recursive_c_bounds.items())
                ),
                beta_likeness=s.beta_likeness,
                enhanced_beta_likeness=s.enhanced_beta_likeness,
                delta_disclosure=s.delta_disclosure,
            )
            for s in document.sensitive
        ],
        duplicate_rows=document.duplicate_rows,
        people_counted_by=document.people_counted_by,
        rare_tuples=document.rare_tuples,
        rare_tuple_rows=document.rare_tuple_rows,
        suda=None if document.suda is None else SudaFigures.of_dict(document.suda.model_dump()),
    )


def _first_problem(error: Exception) -> str:
    """Where a stored report does not fit its model and why, without the stored values."""
    if not isinstance(error, ValidationError):
        return f"{type(error).__name__}: {error}"
    [first, *_] = error.errors(include_input=False, include_url=False)
    where = ".".join(str(part) for part in first["loc"]) or "the report"
    return f"{where}: {first['msg']}"


@dataclass(frozen=True)
class PastDecision:
    """What a transfer stored, with the records of the versions its decision used."""

    transfer_id: str
    status: str
    source_jurisdiction: str
    destination_jurisdiction: str | None
    purpose: str
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    report: dict[str, Any] | None
    rules: list[dict[str, Any]]
    remedy: dict[str, Any] | None
    source_policy: FSLARecord | None  # None: the version used is no longer readable
    destination_policy: FSLARecord | None
    kind: str = "microdata"  # or aggregate: statistics under differential privacy


@dataclass(frozen=True)
class RuleChange:
    rule: str
    scope: str
    jurisdiction: str
    attribute: str | None
    before: str  # passed, failed, not checked
    after: str
    detail: str  # the draft's wording, or the stored one for a rule no longer checked


@dataclass(frozen=True)
class Replay:
    transfer_id: str
    status: str  # what was decided, remedy included
    replayable: bool
    old_verdict: str | None = None  # the rules' verdict then, before any remedy
    new_verdict: str | None = None  # under the draft
    newly_failed: tuple[RuleChange, ...] = ()
    newly_passed: tuple[RuleChange, ...] = ()
    not_replayed: tuple[str, ...] = ()
    delivered_passes: bool | None = None  # anonymized by the broker: what left meets the draft
    note: str = ""

    @property
    def verdict_changed(self) -> bool:
        return self.replayable and self.old_verdict != self.new_verdict

    @property
    def changed(self) -> bool:
        """The verdict or a rule changes, or what the broker delivered would not meet the
        draft."""
        return (
            self.verdict_changed
            or bool(self.newly_failed or self.newly_passed)
            or self.delivered_passes is False
        )


def _key(rule: StoredRule | RuleResult) -> RuleKey:
    return (rule.rule, rule.scope, rule.jurisdiction, rule.attribute)


def _state(results: Iterable[StoredRule | RuleResult]) -> dict[RuleKey, tuple[bool, str]]:
    """Each rule's outcome (failed if any result under one key failed) and its wording."""
    states: dict[RuleKey, tuple[bool, str]] = {}
    for result in results:
        key = _key(result)
        if key not in states or (states[key][0] and not result.passed):
            states[key] = (result.passed, result.detail)
    return states


def _verdict(results: Iterable[RuleResult]) -> str:
    results = list(results)
    if any(not r.passed and not r.fixable for r in results):
        return TransferStatus.REJECTED
    if any(not r.passed for r in results):
        return TransferStatus.ANONYMIZATION_REQUIRED
    return TransferStatus.APPROVED


def _undecided_identifiers(
    report: AnalysisReport, context: TransferContext, rule_sets: list[tuple[str, str, RuleSet]]
) -> dict[tuple[str, str], list[str]]:
    """Per (scope, jurisdiction), the sensitive attributes whose ``no_identifiers`` outcome the
    stored report cannot settle: singled-out rows alone do not make them identifying, and the
    rule set's k asks about values held by up to k - 1 rows."""
    undecided: dict[tuple[str, str], list[str]] = {}
    for scope, jurisdiction, rule_set in rule_sets:
        k = max(rule_set.min_k or 2, 2)
        if rule_set.identifiers_allowed or k <= 2:
            continue
        names = [
            a.name
            for a in report.attributes
            if a.name in context.sensitive
            and not a.content.direct_identifier
            and a.measure.attribute_class != IDENTIFIER
            and not identifying(a, context.sensitive, rule_set.min_k)
        ]
        if names:
            found = undecided.setdefault((scope, jurisdiction), [])
            found += [name for name in names if name not in found]
    return undecided


def _comparable(
    states: dict[RuleKey, tuple[bool, str]],
    undecided: dict[tuple[str, str], list[str]],
    precision_unknown: bool = False,
    suda_unknown: bool = False,
) -> dict[RuleKey, tuple[bool, str]]:
    """Leave out what is not replayed: federation rules, the remedy, linkage, and
    ``no_identifiers`` of an undecided attribute (and the rule set's summary, which says that
    no attribute failed); with ``precision_unknown`` (a report from before precision was
    measured), the precision rules; with ``suda_unknown`` (a report without SUDA figures),
    ``max_dis_suda``."""

    def undecided_identifier(key: RuleKey) -> bool:
        names = undecided.get((key[1], key[2]))
        return key[0] == NO_IDENTIFIERS and names is not None and key[3] in [*names, None]

    return {
        key: value
        for key, value in states.items()
        if key[1] != FEDERATION
        and key[0] != LINKAGE
        and not undecided_identifier(key)
        and not (precision_unknown and key[0] in PRECISION_RULES)
        and not (suda_unknown and key[0] == MAX_DIS_SUDA)
    }


def replay(past: PastDecision, jurisdiction: str, draft: FSLARecord) -> Replay:
    """The decision ``past`` under ``draft`` in place of ``jurisdiction``'s record."""
    if past.kind == "aggregate":
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note="an aggregate release: its budget rules depend on what the ledger held when it "
            "was decided, which a replay does not rebuild",
        )
    try:
        rules = [StoredRule.of(rule) for rule in past.rules]
        remedy = StoredRemedy.of(past.remedy)
    except ValueError as error:
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note=f"the stored decision cannot be read back ({_first_problem(error)})",
        )
    stored = _state(rules)
    federation_failed = [
        key
        for key, (passed, _) in stored.items()
        if key[1] == FEDERATION and key[0] != REMEDY_FOUND and not passed
    ]
    if federation_failed:
        return Replay(
            past.transfer_id,
            past.status,
            True,
            TransferStatus.REJECTED,
            TransferStatus.REJECTED,
            note=f"rejected by the federation's rule {federation_failed[0][0]}, which no F-SLA "
            "record changes",
        )
    if past.report is None or past.destination_jurisdiction is None:
        return Replay(past.transfer_id, past.status, False, note="no report was stored")
    if past.source_policy is None or past.destination_policy is None:
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note="a policy version this decision used cannot be read",
        )
    applied = bool(remedy and remedy.applied)
    if applied and remedy.before is None:
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note="the remedy was applied but the report of the data as uploaded was not stored",
        )
    try:
        if applied:
            document, rules_then = remedy.before.report, remedy.before.rules
        else:
            document, rules_then = StoredReport.model_validate(past.report), rules
        report = report_from_dict(document)
    except (KeyError, TypeError, ValueError) as error:
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note=f"the stored report cannot be read back ({_first_problem(error)})",
        )
    context = TransferContext(
        past.source_jurisdiction,
        past.destination_jurisdiction,
        past.purpose,
        past.quasi_identifiers,
        past.sensitive,
        "(declared)" if report.people_counted_by == PERSON_KEY else None,
    )
    code = jurisdiction.upper()
    source = draft if past.source_jurisdiction == code else past.source_policy
    destination = draft if past.destination_jurisdiction == code else past.destination_policy
    used_sets = applicable_rule_sets(context, past.source_policy, past.destination_policy)
    draft_sets = applicable_rule_sets(context, source, destination)
    undecided = _undecided_identifiers(report, context, used_sets + draft_sets)
    try:
        then = evaluate(report, context, past.source_policy, past.destination_policy)
        now = evaluate(report, context, source, destination)
    except (IndexError, KeyError, ValueError) as error:
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note=f"the stored report lacks a figure the rules need ({type(error).__name__}: "
            f"{error})",
        )

    # A report stored before precision was measured says nothing of its dates, postcodes, ages.
    unknown = not document.precision_measured
    # SUDA is measured only when a rule asked for it: without its figures the rule is not replayed.
    suda_unknown = document.suda is None
    # The stored report must give the stored results again under the versions then used.
    recorded = _comparable(_state(rules_then), undecided, unknown, suda_unknown)
    again = _comparable(_state(then.rules), undecided, unknown, suda_unknown)
    differ = sorted(
        key
        for key in recorded.keys() | again.keys()
        if (key in recorded) != (key in again) or recorded[key][0] != again[key][0]
    )
    if differ:
        return Replay(
            past.transfer_id,
            past.status,
            False,
            note="the stored report does not give the stored results again under the versions "
            "this decision used (decided by an older broker?): "
            + ", ".join(f"{rule} ({scope} {where})" for rule, scope, where, _ in differ[:5]),
        )

    not_replayed = []
    for (scope, where), names in sorted(undecided.items()):
        not_replayed.append(
            f"no_identifiers ({scope} {where}) for the sensitive attribute(s) "
            f"{', '.join(map(repr, names))}: the stored report counts the rows whose value no "
            "other row holds, not those held by fewer than k rows"
        )
    if unknown and any(limits_of(r) != Limits() for _, _, r in draft_sets):
        not_replayed.append(
            "max_date_precision, max_postcode_prefix, max_age: the stored report is from before "
            "the broker measured how precise dates, postcodes and ages are"
        )
    if suda_unknown and any(r.max_dis_suda is not None for _, _, r in draft_sets):
        not_replayed.append(
            "max_dis_suda: the stored report has no SUDA figures (no rule asked for them when "
            "the transfer was decided), and SUDA needs the rows, which are not kept"
        )
    looks_back = lookback([r for _, _, r in draft_sets])
    if looks_back is not None:
        not_replayed.append(
            f"linkage: the draft looks back {looks_back} days on earlier releases to the same "
            "destination; that needs the rows, which are not kept"
        )
    old_rules = list(then.rules)
    if any(key[0] == LINKAGE and not passed for key, (passed, _) in stored.items()):
        old_verdict = (
            then.status
            if then.status == TransferStatus.REJECTED
            else TransferStatus.ANONYMIZATION_REQUIRED
        )
    else:
        old_verdict = _verdict(old_rules)
    new_verdict = now.status
    after = _comparable(_state(now.rules), undecided, unknown, suda_unknown)
    newly_failed, newly_passed = [], []
    for key in sorted(recorded.keys() | after.keys(), key=lambda k: tuple(map(str, k))):
        was = recorded.get(key)
        will = after.get(key)
        before_state = NOT_CHECKED if was is None else (PASSED if was[0] else FAILED)
        after_state = NOT_CHECKED if will is None else (PASSED if will[0] else FAILED)
        if before_state == after_state or (before_state, after_state) in {
            (NOT_CHECKED, PASSED),
            (PASSED, NOT_CHECKED),
        }:
            continue
        change = RuleChange(
            key[0], key[1], key[2], key[3], before_state, after_state, (will or was)[1]
        )
        (newly_failed if after_state == FAILED else newly_passed).append(change)

    delivered_passes = None
    if applied:
        delivered = evaluate(report_from_dict(past.report), context, source, destination)
        delivered_passes = delivered.status == TransferStatus.APPROVED
    notes = {
        TransferStatus.ANONYMIZATION_REQUIRED: "anonymization required: whether a verified "
        "remedy exists (and what anonymize=auto would deliver) depends on the rows, which are "
        "not kept",
        TransferStatus.REJECTED: "rejected by a rule anonymization cannot fix",
        TransferStatus.APPROVED: "approved as sent",
    }
    note = notes[new_verdict]
    if delivered_passes is not None:
        note += (
            "; the anonymized data the broker delivered "
            + ("meets" if delivered_passes else "does not meet")
            + " the draft"
        )
    return Replay(
        past.transfer_id,
        past.status,
        True,
        old_verdict,
        new_verdict,
        tuple(newly_failed),
        tuple(newly_passed),
        tuple(not_replayed),
        delivered_passes,
        note,
    )

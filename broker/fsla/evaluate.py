"""Decide a transfer from its measurement report and the F-SLA records that apply.

Pure function of its inputs: ``evaluate(report, context, source_policy, destination_policy)``.

Which rule sets apply: a domestic transfer (same jurisdiction) follows the record's
``domestic_export``; a cross-border one follows the source's ``cross_border_export`` *and* the
destination's ``import_rules``. Every rule of every set that applies must pass, so the stricter
rule wins; each result names its scope and jurisdiction. Declared sensitive attributes are judged
by l and t, not by the Mmaq thresholds; but an identifier is an identifier whatever its declared
role, and with several sensitive attributes each is judged within the classes of all the other
attributes (k, l and t: multi-attribute l-diversity), so declaring a column sensitive never takes
it out of the k check. Rules that anonymization can fix (identifiers, forbidden attributes, Mmaq,
k, l, t) make the decision ``anonymization_required``; rules it cannot fix (destination or
purpose not allowed) make it ``rejected``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.engines.pandas import PERSON_KEY
from broker.fsla.models import FSLARecord, RuleSet
from broker.metrics.content import TEXT
from broker.metrics.mmaq import IDENTIFIER
from broker.metrics.report import AnalysisReport, AttributeReport
from broker.names import attribute_key
from broker.statuses import TransferStatus

EXPORT = "export"
IMPORT = "import"


@dataclass(frozen=True)
class TransferContext:
    source_jurisdiction: str
    destination_jurisdiction: str
    purpose: str
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    person_key: str | None = None

    @property
    def cross_border(self) -> bool:
        return self.source_jurisdiction != self.destination_jurisdiction


@dataclass(frozen=True)
class RuleResult:
    rule: str
    scope: str
    jurisdiction: str
    passed: bool
    detail: str
    attribute: str | None = None
    measured: float | int | str | None = None
    threshold: float | int | str | None = None
    fixable: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "scope": self.scope,
            "jurisdiction": self.jurisdiction,
            "attribute": self.attribute,
            "passed": self.passed,
            "measured": self.measured,
            "threshold": self.threshold,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Requirements:
    """The strictest combination of every rule set that applies: what the data must meet."""

    identifiers_allowed: bool = True
    min_log10_mmaq: float | None = None
    max_mmaq_index: float | None = None
    qi_max_mmaq_index: float | None = None
    min_k: int | None = None
    min_l: int | None = None
    max_t: float | None = None
    forbidden_attributes: frozenset[str] = field(default_factory=frozenset)
    require_person_key: bool = False
    auto_anonymize: bool = True


@dataclass(frozen=True)
class Decision:
    status: TransferStatus
    rules: tuple[RuleResult, ...]
    requirements: Requirements

    @property
    def failed(self) -> tuple[RuleResult, ...]:
        return tuple(rule for rule in self.rules if not rule.passed)


# A declared-sensitive attribute singles people out when at least this share of its rows hold a
# value that fewer than k rows hold; for text, also at least this many rows (on a small table,
# one diagnosis per patient is expected and is what l-diversity protects).
SINGLED_OUT_SHARE = 0.5
SINGLED_OUT_TEXT_ROWS = 20


def identifying(
    attribute: AttributeReport, sensitive: tuple[str, ...] | set[str], k: int | None = None
) -> bool:
    """Whether ``attribute`` identifies rows on its own, whatever role it was declared in.

    Values that hold e-mails, phone numbers or national ids always do. An attribute not declared
    sensitive does when its values are all distinct (its Mmaq class is ``identifier``). A
    declared-sensitive one does when most of its rows hold a value that fewer than ``k`` rows
    hold (see the constants above; pairs of birth dates count, not only unique ones): its values
    are what is protected, but values shared by so few people link to outside records however
    they are declared (national ids, birth dates, a column of names).
    """
    if attribute.content.direct_identifier:
        return True
    if attribute.name not in sensitive:
        return attribute.measure.attribute_class == IDENTIFIER
    rare = attribute.rows_in_values_smaller_than(max(k or 2, 2))
    many = rare >= SINGLED_OUT_SHARE * attribute.measure.rows
    if attribute.content.values != TEXT:
        return many or attribute.measure.attribute_class == IDENTIFIER
    return many and rare >= SINGLED_OUT_TEXT_ROWS


def applicable_rule_sets(
    context: TransferContext, source: FSLARecord, destination: FSLARecord
) -> list[tuple[str, str, RuleSet]]:
    """(scope, jurisdiction, rule set) for every rule set the transfer must satisfy."""
    if not context.cross_border:
        return [(EXPORT, source.jurisdiction, source.domestic_export)]
    return [
        (EXPORT, source.jurisdiction, source.cross_border_export),
        (IMPORT, destination.jurisdiction, destination.import_rules),
    ]


def combine(rule_sets: list[RuleSet]) -> Requirements:
    """Stricter wins: the highest minimum, the lowest maximum, every prohibition."""

    def highest(values):
        present = [v for v in values if v is not None]
        return max(present) if present else None

    def lowest(values):
        present = [v for v in values if v is not None]
        return min(present) if present else None

    return Requirements(
        identifiers_allowed=all(r.identifiers_allowed for r in rule_sets),
        min_log10_mmaq=highest(r.min_log10_mmaq for r in rule_sets),
        max_mmaq_index=lowest(r.max_mmaq_index for r in rule_sets),
        qi_max_mmaq_index=lowest(r.qi_max_mmaq_index for r in rule_sets),
        min_k=highest(r.min_k for r in rule_sets),
        min_l=highest(r.min_l for r in rule_sets),
        max_t=lowest(r.max_t for r in rule_sets),
        forbidden_attributes=frozenset(
            attribute_key(a) for r in rule_sets for a in r.forbidden_attributes
        ),
        require_person_key=any(r.require_person_key for r in rule_sets),
        auto_anonymize=all(r.auto_anonymize for r in rule_sets),
    )


def evaluate(
    report: AnalysisReport,
    context: TransferContext,
    source: FSLARecord,
    destination: FSLARecord,
) -> Decision:
    """Check every rule that applies to the transfer and decide.

    Without declared quasi-identifiers the whole table is one equivalence class (k = N, l = the
    number of distinct sensitive values, t = 0); callers that want a stricter reading infer the
    quasi-identifiers before measuring.
    """
    rules: list[RuleResult] = []
    rules += _gate_rules(context, source, destination)
    rule_sets = applicable_rule_sets(context, source, destination)
    for scope, jurisdiction, rule_set in rule_sets:
        rules += _data_rules(report, context, scope, jurisdiction, rule_set)

    if any(not r.passed and not r.fixable for r in rules):
        status = TransferStatus.REJECTED
    elif any(not r.passed for r in rules):
        status = TransferStatus.ANONYMIZATION_REQUIRED
    else:
        status = TransferStatus.APPROVED
    return Decision(status, tuple(rules), combine([r for _, _, r in rule_sets]))


def _in_people(report: AnalysisReport, k: int, rows_k: int) -> str:
    """What the people count means, when it differs from the row count."""
    if k == rows_k:
        return ""
    if report.people_counted_by == PERSON_KEY:
        return f" people by the declared person key ({rows_k} counted in rows)"
    return (
        f" people ({rows_k} counted in rows: {report.duplicate_rows:,} rows repeat another row "
        "exactly and, without a person key, the broker counts identical rows as one person; "
        "declare person_key to count people)"
    )


def _gate_rules(
    context: TransferContext, source: FSLARecord, destination: FSLARecord
) -> list[RuleResult]:
    to = context.destination_jurisdiction
    rules = [
        RuleResult(
            "destination_allowed",
            EXPORT,
            source.jurisdiction,
            passed=source.allows_destination(to),
            measured=to,
            threshold=", ".join(source.allowed_destinations) or "domestic only",
            detail=(
                f"{source.jurisdiction} allows transfers to {to}"
                if source.allows_destination(to)
                else f"{source.jurisdiction} does not allow personal data to go to {to}"
            ),
            fixable=False,
        )
    ]
    checks = [(EXPORT, source)] + ([(IMPORT, destination)] if context.cross_border else [])
    for scope, record in checks:
        allowed = record.allows_purpose(context.purpose)
        rules.append(
            RuleResult(
                "purpose_allowed",
                scope,
                record.jurisdiction,
                passed=allowed,
                measured=context.purpose,
                threshold=", ".join(record.allowed_purposes),
                detail=(
                    f"{record.jurisdiction} allows the purpose {context.purpose!r}"
                    if allowed
                    else f"{record.jurisdiction} does not allow the purpose {context.purpose!r}"
                ),
                fixable=False,
            )
        )
    return rules


def _data_rules(
    report: AnalysisReport, context: TransferContext, scope: str, jurisdiction: str, rules_: RuleSet
) -> list[RuleResult]:
    where = f"{jurisdiction} ({scope})"
    sensitive = set(context.sensitive)
    judged_by_mmaq = [a for a in report.attributes if a.name not in sensitive]
    results: list[RuleResult] = []

    def per_attribute(rule: str, failing: list, describe, threshold, summary: str) -> None:
        for attribute, measured in failing:
            results.append(
                RuleResult(
                    rule,
                    scope,
                    jurisdiction,
                    False,
                    describe(attribute),
                    attribute.name,
                    measured,
                    threshold,
                )
            )
        if not failing:
            results.append(
                RuleResult(rule, scope, jurisdiction, True, summary, threshold=threshold)
            )

    if rules_.require_person_key:
        declared = context.person_key is not None
        results.append(
            RuleResult(
                "person_key_declared",
                scope,
                jurisdiction,
                declared,
                f"k counts people by the declared person key {context.person_key!r}"
                if declared
                else f"{where} requires a person key: send again with person_key naming the "
                "column that identifies each row's person (pseudonymous; it never leaves)",
                context.person_key,
                fixable=False,
            )
        )

    if rules_.forbidden_attributes:
        forbidden = {attribute_key(a) for a in rules_.forbidden_attributes}
        per_attribute(
            "forbidden_attribute",
            [(a, a.name) for a in report.attributes if attribute_key(a.name) in forbidden],
            lambda a: f"{where} forbids the attribute {a.name!r} from passing: drop it",
            ", ".join(rules_.forbidden_attributes),
            f"no attribute forbidden by {where} is present",
        )

    if not rules_.identifiers_allowed:
        per_attribute(
            "no_identifiers",
            [(a, IDENTIFIER) for a in report.attributes if identifying(a, sensitive, rules_.min_k)],
            lambda a: (
                f"{a.name!r} holds {a.content.direct_identifier.replace('_', ' ')} values, "
                f"direct identifiers, and {where} forbids identifiers: drop it"
                if a.content.direct_identifier
                else f"{a.name!r} singles out "
                f"{a.rows_in_values_smaller_than(max(rules_.min_k or 2, 2)):,} of "
                f"{a.measure.rows:,} rows (values fewer than {max(rules_.min_k or 2, 2)} rows "
                f"hold) and {where} forbids identifiers: declared sensitive or not, drop or "
                "generalize it"
                if a.measure.attribute_class != IDENTIFIER
                else f"{a.name!r} is an identifier (all {a.measure.categories:,} values are "
                f"distinct) and {where} forbids identifiers: drop or generalize it"
            ),
            "no identifier",
            f"no attribute is an identifier ({where} forbids them)",
        )

    if rules_.min_log10_mmaq is not None:
        floor = rules_.min_log10_mmaq
        per_attribute(
            "min_log10_mmaq",
            [
                (a, round(a.measure.log10_mmaq, 6))
                for a in judged_by_mmaq
                if a.measure.log10_mmaq < floor
            ],
            lambda a: (
                f"{a.name!r} has log10 Mmaq {a.measure.log10_mmaq:.4g}, below the "
                f"{floor:g} that {where} requires: generalize or suppress it"
            ),
            floor,
            f"every attribute has log10 Mmaq >= {floor:g}",
        )

    if rules_.max_mmaq_index is not None:
        ceiling = rules_.max_mmaq_index
        per_attribute(
            "max_mmaq_index",
            [
                (a, round(a.measure.mmaq_index, 6))
                for a in judged_by_mmaq
                if a.measure.mmaq_index > ceiling
            ],
            lambda a: (
                f"{a.name!r} has Mmaq index {a.measure.mmaq_index:.4f}, above the "
                f"{ceiling:g} that {where} allows: generalize or suppress it"
            ),
            ceiling,
            f"every attribute has Mmaq index <= {ceiling:g}",
        )

    qi = report.quasi_identifiers
    qi_names = ", ".join(context.quasi_identifiers) or "(none)"
    if rules_.qi_max_mmaq_index is not None:
        measured = qi.measure.mmaq_index if qi else 0.0
        results.append(
            RuleResult(
                "qi_max_mmaq_index",
                scope,
                jurisdiction,
                measured <= rules_.qi_max_mmaq_index,
                f"the quasi-identifiers {qi_names} together have Mmaq index {measured:.4f}; "
                f"{where} allows at most {rules_.qi_max_mmaq_index:g}",
                qi_names,
                round(measured, 6),
                rules_.qi_max_mmaq_index,
            )
        )

    if rules_.min_k is not None:
        k = qi.anonymity.k_people if qi else report.rows - report.duplicate_rows
        rows_k = qi.anonymity.k if qi else report.rows
        results.append(
            RuleResult(
                "min_k",
                scope,
                jurisdiction,
                k >= rules_.min_k,
                f"the quasi-identifiers {qi_names} give k = {k}{_in_people(report, k, rows_k)}; "
                f"{where} requires k >= {rules_.min_k}"
                + ("" if k >= rules_.min_k else ": k-anonymize them"),
                qi_names,
                k,
                rules_.min_k,
            )
        )

    several = len(report.sensitive) > 1
    for measure in report.sensitive:
        name = measure.name
        l_value, t_value = measure.l_diversity, measure.t_closeness
        if several and rules_.min_k is not None:
            known = ", ".join(measure.known_attributes)
            results.append(
                RuleResult(
                    "min_k",
                    scope,
                    jurisdiction,
                    measure.k >= rules_.min_k,
                    f"whoever knows {known} narrows a row down to k = {measure.k} rows before "
                    f"learning its {name!r}; {where} requires k >= {rules_.min_k} (with several "
                    "sensitive attributes, each is protected as if the others were known)",
                    name,
                    measure.k,
                    rules_.min_k,
                )
            )
        if rules_.min_l is not None:
            results.append(
                RuleResult(
                    "min_l",
                    scope,
                    jurisdiction,
                    l_value >= rules_.min_l,
                    f"{name!r} has l = {l_value} distinct values in its poorest class; {where} "
                    f"requires l >= {rules_.min_l}",
                    name,
                    l_value,
                    rules_.min_l,
                )
            )
        if rules_.max_t is not None:
            results.append(
                RuleResult(
                    "max_t",
                    scope,
                    jurisdiction,
                    t_value <= rules_.max_t,
                    f"{name!r} has t = {t_value:.4f}; {where} allows t <= {rules_.max_t:g}",
                    name,
                    round(t_value, 6),
                    rules_.max_t,
                )
            )
    return results

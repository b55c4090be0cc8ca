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
k, journalist and marketer risk, population uniqueness and expected re-identifications, l,
alpha, recursive (c, l), beta, delta, t, linkage with an earlier release, the precision of
dates, postcodes and ages) make the decision
``anonymization_required``; rules it cannot fix (destination or purpose not allowed) make it
``rejected``.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.fsla.linkage import Joint, linkage_rules
from broker.fsla.models import FSLARecord, RuleSet
from broker.fsla.precision import strictest
from broker.fsla.results import (
    AGREEMENT,
    EXPORT,
    IMPORT,
    BudgetRule,
    Decision,
    Requirements,
    RuleResult,
    TransferContext,
)
from broker.fsla.rules import data_rules, gate_rules
from broker.metrics.report import AnalysisReport
from broker.names import attribute_key
from broker.wire.statuses import TransferStatus


def applicable_rule_sets(
    context: TransferContext, source: FSLARecord, destination: FSLARecord
) -> list[tuple[str, str, RuleSet]]:
    """(scope, jurisdiction, rule set) for every rule set the transfer must satisfy: the
    records' and, for a transfer under an agreement, its terms (the "jurisdiction" of that
    scope is the agreement's id)."""
    if not context.cross_border:
        found = [(EXPORT, source.jurisdiction, source.domestic_export)]
    else:
        found = [
            (EXPORT, source.jurisdiction, source.cross_border_export),
            (IMPORT, destination.jurisdiction, destination.import_rules),
        ]
    if context.agreement is not None:
        found.append((AGREEMENT, *context.agreement))
    return found


def combine(
    rule_sets: list[RuleSet], where: Sequence[tuple[str, str]] | None = None
) -> Requirements:
    """Stricter wins: the highest minimum, the lowest maximum, every prohibition, the coarsest
    precision (:func:`broker.fsla.precision.strictest` says how for its rules).

    ``where``: each rule set's (scope, jurisdiction), which names its budgets.
    """
    where = list(where) if where is not None else [("", "")] * len(rule_sets)

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
        max_journalist_risk=lowest(r.max_journalist_risk for r in rule_sets),
        max_marketer_risk=lowest(r.max_marketer_risk for r in rule_sets),
        max_population_uniqueness=lowest(r.max_population_uniqueness for r in rule_sets),
        expected_reidentification_bounds=tuple(
            (r.sampling_fraction, r.max_expected_reidentifications)
            for r in rule_sets
            if r.max_expected_reidentifications is not None
        ),
        min_l=highest(r.min_l for r in rule_sets),
        max_alpha=lowest(r.max_alpha for r in rule_sets),
        recursive_c=lowest(r.recursive_c_l.c for r in rule_sets if r.recursive_c_l),
        recursive_l=highest(r.recursive_c_l.l for r in rule_sets if r.recursive_c_l),
        max_beta=lowest(r.max_beta for r in rule_sets),
        max_enhanced_beta=lowest(r.max_enhanced_beta for r in rule_sets),
        max_delta=lowest(r.max_delta for r in rule_sets),
        max_t=lowest(r.max_t for r in rule_sets),
        linkage_lookback_days=highest(r.linkage_lookback_days for r in rule_sets),
        precision=strictest(rule_sets),
        forbidden_attributes=frozenset(
            attribute_key(a) for r in rule_sets for a in r.forbidden_attributes
        ),
        require_person_key=any(r.require_person_key for r in rule_sets),
        min_utility_percent=highest(r.min_utility_percent for r in rule_sets),
        auto_anonymize=all(r.auto_anonymize for r in rule_sets),
        max_retention_days=lowest(r.max_retention_days for r in rule_sets),
        aggregate_releases_allowed=bool(rule_sets)
        and all(r.aggregate_releases_allowed for r in rule_sets),
        max_epsilon_per_release=lowest(r.max_epsilon_per_release for r in rule_sets),
        max_delta_per_release=min((r.max_delta_per_release or 0.0 for r in rule_sets), default=0.0),
        budgets=tuple(
            BudgetRule(scope, jurisdiction, per, limit, r.budget_period_days)
            for r, (scope, jurisdiction) in zip(rule_sets, where, strict=True)
            for per, limit in (("dataset", r.epsilon_budget), ("source", r.source_epsilon_budget))
            if limit is not None
        ),
    )


def evaluate(
    report: AnalysisReport,
    context: TransferContext,
    source: FSLARecord,
    destination: FSLARecord,
    linkage: Sequence[Joint] = (),
) -> Decision:
    """Check every rule that applies to the transfer and decide.

    Without declared quasi-identifiers the whole table is one equivalence class (k = N, l = the
    number of distinct sensitive values, t = 0); callers that want a stricter reading infer the
    quasi-identifiers before measuring. ``linkage``: the table joined with each earlier release
    to the same destination (:mod:`broker.fsla.linkage`), judged by each rule set's look-back.
    """
    rules: list[RuleResult] = []
    rules += gate_rules(context, source, destination)
    rule_sets = applicable_rule_sets(context, source, destination)
    for scope, jurisdiction, rule_set in rule_sets:
        rules += data_rules(report, context, scope, jurisdiction, rule_set)
        rules += linkage_rules(linkage, scope, jurisdiction, rule_set)

    if any(not r.passed and not r.fixable for r in rules):
        status = TransferStatus.REJECTED
    elif any(not r.passed for r in rules):
        status = TransferStatus.ANONYMIZATION_REQUIRED
    else:
        status = TransferStatus.APPROVED
    where = [(scope, jurisdiction) for scope, jurisdiction, _ in rule_sets]
    return Decision(status, tuple(rules), combine([r for _, _, r in rule_sets], where))

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

from broker.fsla import stricter
from broker.fsla.linkage import Joint, linkage_rules
from broker.fsla.models import FSLARecord, RuleSet
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
    """Stricter wins, rule by rule as each declares (:mod:`broker.fsla.stricter`): the highest
    minimum, the lowest maximum, every prohibition, the coarsest precision.

    ``where``: each rule set's (scope, jurisdiction), which names its budgets.
    """
    where = list(where) if where is not None else [("", "")] * len(rule_sets)
    strictest = stricter.combine(RuleSet, rule_sets)
    return Requirements(
        **{name: getattr(strictest, name) for name in RuleSet.model_fields},
        expected_reidentification_bounds=tuple(
            (r.sampling_fraction, r.max_expected_reidentifications)
            for r in rule_sets
            if r.max_expected_reidentifications is not None
        ),
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

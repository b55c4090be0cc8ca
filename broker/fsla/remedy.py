"""Find a remedy the broker has verified: anonymize, measure again, decide again.

A remedy is only offered when applying it to the very data of the request gives a report that
passes every rule that applies (the same :func:`evaluate` as the original decision), so an
``anonymization_required`` answer never promises what the broker could not achieve.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from broker.anonymize import Remedy, Target, plan_on_engine, plan_remedy
from broker.anonymize.steps import GENERALIZATION, MONDRIAN, OPTIMAL
from broker.engines.base import Engine
from broker.engines.pandas import PandasEngine
from broker.fsla.evaluate import applicable_rule_sets, evaluate
from broker.fsla.identifying import dropped
from broker.fsla.linkage import History, Joint, assess, linkage_rules
from broker.fsla.models import FSLARecord
from broker.fsla.precision import limits_of, remedy_steps
from broker.fsla.results import Decision, TransferContext
from broker.fsla.rules import closeness, diversity, identifiers, k_anonymity, mmaq, risk, suda
from broker.fsla.rules.base import Aim
from broker.fsla.stored import RemedyAfter, StoredRemedy
from broker.metrics.report import AnalysisReport, ReportOptions, analyze, report_of
from broker.wire.statuses import TransferStatus


@dataclass(frozen=True, eq=False)
class VerifiedRemedy:
    verified: bool
    reason: str | None
    remedy: Remedy | None = None
    report: AnalysisReport | None = None
    decision: Decision | None = None

    @property
    def anonymized(self) -> Engine | None:
        """The anonymized table, which leaves instead of the one sent."""
        if not self.verified:
            return None
        if self.remedy.engine is not None:  # recoded by an out-of-core engine
            return self.remedy.engine
        return PandasEngine(self.remedy.frame)

    def document(self) -> StoredRemedy:
        """The answer's ``remedy`` field: steps, checks, information loss, figures after."""
        if not self.verified:
            return StoredRemedy(verified=False, steps=[], note=self.reason)
        assert self.remedy is not None and self.report is not None
        after = self.report.quasi_identifiers
        loss = self.remedy.information_loss
        return StoredRemedy(
            verified=True,
            steps=[_with_reason(step.as_dict()) for step in self.remedy.steps],
            note="; ".join(self.remedy.notes) or None,
            information_loss=loss.as_dict() if loss else None,
            suppressed_rows=self.remedy.suppressed_rows,
            after=RemedyAfter(
                rows=self.report.rows,
                k=after.anonymity.k if after else None,
                equivalence_classes=after.anonymity.equivalence_classes if after else None,
            ),
        )


def _with_reason(step: dict[str, Any]) -> dict[str, Any]:
    """Every step offered says why (a step the planner left unexplained says what it does)."""
    if not step.get("reason"):
        column = f" {step['column']}" if step["column"] else ""
        step["reason"] = f"{step['method']}{column} with {step['parameters'] or 'defaults'}"
    return step


# The families whose rules a k-anonymizing step serves, in the order the answer names them.
K_FAMILIES = (k_anonymity, risk, suda, identifiers, diversity, closeness)


def target_for(
    values: Callable[[str], pd.Series],
    decision: Decision,
    report: AnalysisReport,
    context: TransferContext,
    max_suppression: float,
    people_labellings: tuple[np.ndarray, ...] = (),
    hierarchies: dict[str, dict[str, list[str]]] | None = None,
) -> Target:
    """What the data must meet, as the anonymizer understands it; ``values(name)`` gives a
    column's values (all of them, or its distinct ones: only their kind matters);
    ``hierarchies``, the level tables to follow (:mod:`broker.fsla.hierarchies`)."""
    req = decision.requirements
    sensitive = set(context.sensitive)
    drop = [a.name for a in report.attributes if req.forbids(a.name)]
    if not req.identifiers_allowed:
        # An identifier leaves only as ranges of ordered values (a quasi-identifier Mondrian can
        # generalize on a grid); the others are dropped (broker.fsla.identifying).
        identifiers = dropped(
            report, context.quasi_identifiers, context.sensitive, req.min_k, values
        )
        drop += [name for name in identifiers if name not in drop]
    quasi = tuple(q for q in context.quasi_identifiers if q not in drop)
    kept_sensitive = tuple(s for s in context.sensitive if s not in drop)
    bound = mmaq.index_bound(req, report.rows)
    limits = {
        a.name: bound
        for a in report.attributes
        if bound is not None and a.name not in sensitive and a.name not in drop
    }
    # Each family's sources of k, as (k, why); the largest wins and the answer says which and
    # why. The anonymizer targets distinct l, k and t; the other models ask for the l they imply
    # and for k, which the caller's verification raises until they pass.
    diverse = bool(quasi and kept_sensitive)
    failing = frozenset(rule.rule for rule in decision.failed)
    aim = Aim(req, report, failing, quasi, diverse)
    sources = [source for family in K_FAMILIES for source in family.k_sources(aim)]
    needed_l = diversity.l_needed(req)
    needed_k = max([1, *(k for k, _ in sources)])
    reasons = {name: _drop_reason(name, decision, report) for name in drop}
    if quasi:
        reasons["k"] = _k_reason(needed_k, sources)
    return Target(
        quasi_identifiers=quasi,
        sensitive=kept_sensitive if quasi else (),
        drop=tuple(drop),
        precision=remedy_steps(report, limits_of(req), drop),
        k=needed_k if quasi and sources else None,  # no rule asks k: no k-anonymizing step
        l=needed_l if diverse else None,
        t=req.max_t if diverse else None,
        max_mmaq_index=limits,
        max_suppression=max_suppression,
        people=people_labellings,
        reasons=reasons,
        hierarchies={c: t for c, t in (hierarchies or {}).items() if c not in drop},
    )


def _k_reason(k: int, sources: list[tuple[int, str]]) -> str:
    """``k = 40 because the rule sets bound journalist risk at 0.025 <= 1/40 (min_k = 5)``."""
    if not sources:
        return f"k = {k}"
    ranked = sorted(sources, key=lambda source: -source[0])
    main = [why for value, why in ranked if value == k]
    lower = [why for value, why in ranked if value < k]
    text = f"k = {k} because {' and '.join(main)}"
    return text + (f" (also: {'; '.join(lower)})" if lower else "")


def _drop_reason(name: str, decision: Decision, report: AnalysisReport) -> str:
    """Why the remedy drops ``name``: who forbids it, or what makes it identify people."""
    rules = [r for r in decision.failed if r.attribute == name]
    forbidding = sorted(
        {f"{r.jurisdiction} ({r.scope})" for r in rules if r.rule == "forbidden_attribute"}
    )
    attribute = report.attribute(name)
    kind = (attribute.content.direct_identifier or "").replace("_", " ")
    if forbidding:
        also = f" (and it holds {kind} values: direct identifiers)" if kind else ""
        verb = "forbids" if len(forbidding) == 1 else "forbid"
        return f"{' and '.join(forbidding)} {verb} the attribute {name}{also}"
    if kind:
        return f"{name} holds {kind} values: it identifies people, and cannot be generalized"
    forbidding = sorted(
        {f"{r.jurisdiction} ({r.scope})" for r in rules if r.rule == "no_identifiers"}
    )
    where = " and ".join(forbidding) or "the rule sets"
    verb = "forbids" if len(forbidding) == 1 else "forbid"
    return (
        f"{name} identifies people ({attribute.measure.categories:,} distinct values in "
        f"{attribute.measure.rows:,} rows) and {where} {verb} identifiers; as text or a "
        "sensitive attribute it is dropped, not generalized into a list of its values"
    )


@dataclass(frozen=True)
class Effort:
    """How far the broker goes for a remedy: the share of rows it may suppress, and the seconds
    it may spend (None: no limit)."""

    max_suppression: float = 0.05
    budget_seconds: float | None = None


def find_remedy(
    engine: Engine,
    report: AnalysisReport,
    decision: Decision,
    context: TransferContext,
    source: FSLARecord,
    destination: FSLARecord,
    effort: Effort = Effort(),
    history: History | None = None,
    hierarchies: dict[str, dict[str, list[str]]] | None = None,
) -> VerifiedRemedy:
    """Plan, apply, re-measure and re-evaluate; k rises until every rule passes or none can.

    With a ``history``, each anonymized result is also joined with the earlier releases to the
    same destination (:mod:`broker.fsla.linkage`): a remedy that passes alone but not joined
    with them is refused like any other, and in memory k rises until the joint classes hold.

    A table in memory (:class:`PandasEngine`) is anonymized row by row (:func:`plan_remedy`);
    any other engine holds data too large to load, and gets a generalization planned on its
    count tables (:func:`plan_on_engine`). Either way the F-SLA evaluation of the anonymized
    result decides whether the remedy is offered.

    ``hierarchies`` (column -> level table) are followed for their columns instead of the
    broker's own ladder; in memory a quasi-identifier given one makes the remedy the global
    generalization of least information loss (Mondrian cannot follow a hierarchy).
    """
    search = _Search(
        report,
        decision,
        context,
        source,
        destination,
        effort.max_suppression,
        history,
        hierarchies or {},
    )
    if isinstance(engine, PandasEngine):
        return _in_memory(engine, search, effort.budget_seconds)
    return _on_counts(engine, search, effort.budget_seconds)


@dataclass(frozen=True, eq=False)
class _Search:
    """What a remedy is sought for: the measured data's report and decision, and the rules."""

    report: AnalysisReport
    decision: Decision
    context: TransferContext
    source: FSLARecord
    destination: FSLARecord
    max_suppression: float
    history: History | None = None
    hierarchies: dict[str, dict[str, list[str]]] = dataclasses.field(default_factory=dict)

    def target(self, values: Callable[[str], pd.Series], people=()) -> Target:
        return target_for(
            values,
            self.decision,
            self.report,
            self.context,
            self.max_suppression,
            people,
            self.hierarchies,
        )

    def judge(
        self, after: AnalysisReport, kept, accepted: list, joints: tuple[Joint, ...] = ()
    ) -> str | None:
        """Evaluate an anonymized result as the original was (``joints``: joined with the
        earlier releases); None (and kept) when it passes."""
        after_decision = self.evaluated(after, kept, joints)
        if after_decision.status != TransferStatus.APPROVED:
            failing = "; ".join(rule.detail for rule in after_decision.failed)
            return f"anonymization could not reach compliance: {failing}"
        accepted.append((after, after_decision))
        return None

    def evaluated(self, after: AnalysisReport, kept, joints: tuple[Joint, ...] = ()) -> Decision:
        after_context = dataclasses.replace(
            self.context, quasi_identifiers=tuple(kept[0]), sensitive=tuple(kept[1])
        )
        return evaluate(after, after_context, self.source, self.destination, joints)

    def linkage(self, engine: Engine, kept, released=None, relabel=None) -> tuple[Joint, ...]:
        """The anonymized result joined with the earlier releases (none without a history)."""
        if self.history is None or not self.history.releases:
            return ()
        quasi, sensitive = kept
        return assess(
            engine, quasi, sensitive, self.history.releases, self.history.now, released, relabel
        )

    def with_suda(self, engine: Engine, after: AnalysisReport) -> AnalysisReport:
        """``after`` with the SUDA figures a rule set needs (unchanged when none bounds it)."""
        rule_sets = applicable_rule_sets(self.context, self.source, self.destination)
        fraction = suda.strictest_fraction(rules for _, _, rules in rule_sets)
        return after if fraction is None else suda.with_suda(engine, after, fraction)

    def kept(self, columns) -> tuple[list[str], list[str]]:
        """The declared quasi-identifiers and sensitive attributes an anonymized table keeps."""
        return (
            [q for q in self.context.quasi_identifiers if q in columns],
            [s for s in self.context.sensitive if s in columns],
        )


def _in_memory(
    engine: PandasEngine, search: _Search, budget_seconds: float | None
) -> VerifiedRemedy:
    """The F-SLA evaluation of each anonymized result is the planner's acceptance check, so the
    one k-raising loop of :func:`broker.anonymize.plan_remedy` serves the rules the anonymizer
    does not know (the QI combination's Mmaq, rules counted in people). The anonymized data's
    k is counted in the people of the data as sent."""
    frame, people = engine.frame, engine.people
    accepted: list[tuple[AnalysisReport, Decision]] = []

    def accept(anonymized: pd.DataFrame) -> str | None:
        kept = search.kept(anonymized.columns)
        after = analyze(anonymized, *kept, ReportOptions(max_combination_size=0), people=people)
        after = search.with_suda(PandasEngine(anonymized, people=people), after)
        joints = search.linkage(*_released_beside(frame, anonymized, people, kept))
        return search.judge(after, kept, accepted, joints)

    target = search.target(frame.__getitem__, people.labellings())
    deadline = _deadline(budget_seconds)
    # A hierarchy is followed by the global generalization of least information loss (ARX's
    # optimal search, bounded in measurements and time); Mondrian cuts ranges of its own.
    following = bool(set(target.hierarchies) & set(target.quasi_identifiers))
    refused_before = None
    while True:
        try:
            remedy = plan_remedy(
                frame, target, OPTIMAL if following else MONDRIAN, accept, deadline
            )
        except ValueError as error:
            return VerifiedRemedy(False, f"the broker cannot anonymize this data: {error}")
        # The generalization plans on rows and raises no k; while the rules refuse what it
        # found (its own checks all passed: k counted in people, a joint release), k doubles,
        # as on counts. Once a larger k cannot be met at all, the rules' refusal is the answer.
        checks = remedy.checks
        refused = not remedy.satisfied and bool(checks) and all(c.passed for c in checks)
        if not remedy.satisfied and not refused and refused_before is not None:
            return _verified(refused_before, accepted, budget_seconds)
        out_of_time = deadline is not None and time.monotonic() > deadline
        if not following or not refused or out_of_time or not target.k:
            return _verified(remedy, accepted, budget_seconds)
        if target.k >= len(frame):
            return _verified(remedy, accepted, budget_seconds)
        refused_before = remedy
        target = dataclasses.replace(target, k=min(2 * target.k, len(frame)))


def _on_counts(engine: Engine, search: _Search, budget_seconds: float | None) -> VerifiedRemedy:
    """A generalization chosen on the engine's count tables and applied by the engine; the
    recoded table is measured and evaluated again before it is offered. (Only generalization
    works on counts: Mondrian and the partition need the rows, which do not fit in memory.)
    While only the join with an earlier release fails, or k or l counted in people (which the
    plan, on counts, sees in rows: one person's rows may fill a class), k doubles and the plan
    is made again: coarser classes merge joint classes and people, as in memory."""
    target = search.target(engine.dictionary)
    deadline = _deadline(budget_seconds)
    while True:
        try:
            remedy = plan_on_engine(engine, target, GENERALIZATION, deadline=deadline)
        except ValueError as error:
            return VerifiedRemedy(False, f"the broker cannot anonymize this data: {error}")
        accepted: list[tuple[AnalysisReport, Decision]] = []
        if not remedy.satisfied:
            return _verified(remedy, accepted, budget_seconds)
        kept = search.kept(remedy.engine.columns)
        after = report_of(remedy.engine, *kept, ReportOptions(max_combination_size=0))
        after = search.with_suda(remedy.engine, after)
        joints = search.linkage(engine, kept, relabel=remedy.recode)
        failing = search.judge(after, kept, accepted, joints)
        if failing is None:
            return _verified(remedy, accepted, budget_seconds)
        out_of_time = deadline is not None and time.monotonic() > deadline
        coarser_helps = _apart(search, joints) or _few_people(search.evaluated(after, kept))
        if out_of_time or not target.k or target.k >= engine.rows or not coarser_helps:
            return VerifiedRemedy(False, failing)
        target = dataclasses.replace(target, k=min(2 * target.k, engine.rows))


def _apart(search: _Search, joints: tuple[Joint, ...]) -> bool:
    """Whether the join with an earlier release fails (and only a coarser release mends it)."""
    rule_sets = applicable_rule_sets(search.context, search.source, search.destination)
    return any(
        not result.passed and result.fixable
        for scope, jurisdiction, rule_set in rule_sets
        for result in linkage_rules(joints, scope, jurisdiction, rule_set)
    )


def _few_people(decision: Decision) -> bool:
    """Whether only k and l fail, which larger classes mend once they hold more people."""
    failed = {rule.rule for rule in decision.failed}
    return bool(failed) and failed <= {"min_k", "min_l"}


def _released_beside(original: pd.DataFrame, anonymized: pd.DataFrame, people, kept):
    """An engine over the anonymized rows holding each kept quasi-identifier as released beside
    every original column (rows matched by label), and which column holds which release."""
    released = {q: f"{q}\x00released" for q in kept[0]}
    beside = anonymized[list(released)].rename(columns=released)
    joined = pd.concat([beside, original.loc[anonymized.index]], axis=1)
    return PandasEngine(joined, people=people), kept, released


def _deadline(budget_seconds: float | None) -> float | None:
    return None if budget_seconds is None else time.monotonic() + budget_seconds


def _verified(
    remedy: Remedy,
    accepted: list[tuple[AnalysisReport, Decision]],
    budget_seconds: float | None,
) -> VerifiedRemedy:
    if remedy.out_of_time:
        budget = (
            "search budget (the generalizations it measures at most)"
            if budget_seconds is None
            else f"{budget_seconds:g} s budget (BROKER_REMEDY_SECONDS)"
        )
        return VerifiedRemedy(
            False,
            f"no verified remedy within the broker's {budget} after {remedy.attempts} "
            "attempt(s); the last one failed "
            f"because {remedy.reason}: anonymize the data yourself, or send less of it",
        )
    if not remedy.satisfied:
        return VerifiedRemedy(False, remedy.reason)
    after, after_decision = accepted[-1]
    return VerifiedRemedy(True, None, remedy, after, after_decision)

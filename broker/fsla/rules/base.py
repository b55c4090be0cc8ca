"""What every rule family's check reads: one rule set judged on one report (:class:`Judged`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.fsla.models import RuleSet
from broker.fsla.results import Requirements, RuleResult, TransferContext
from broker.metrics.report import AnalysisReport, AttributeReport


@dataclass(frozen=True, eq=False)
class Judged:
    """One rule set (of ``scope``, set by ``jurisdiction``) judged on a transfer's report."""

    report: AnalysisReport
    context: TransferContext
    scope: str
    jurisdiction: str
    rules: RuleSet

    @property
    def where(self) -> str:
        return f"{self.jurisdiction} ({self.scope})"

    @property
    def qi_names(self) -> str:
        return ", ".join(self.context.quasi_identifiers) or "(none)"

    def result(self, rule: str, passed: bool, detail: str, *args: Any, **kwargs: Any):
        """A :class:`RuleResult` of this rule set (``args``: attribute, measured, threshold)."""
        return RuleResult(rule, self.scope, self.jurisdiction, passed, detail, *args, **kwargs)

    def per_attribute(
        self,
        rule: str,
        failing: Sequence[tuple[AttributeReport, Any]],
        describe: Callable[[AttributeReport], str],
        threshold: Any,
        summary: str,
    ) -> list[RuleResult]:
        """One failed result per ``(attribute, measured)`` of ``failing``, or one passed result
        saying ``summary``."""
        if not failing:
            return [self.result(rule, True, summary, threshold=threshold)]
        return [
            self.result(rule, False, describe(a), a.name, measured, threshold)
            for a, measured in failing
        ]


@dataclass(frozen=True, eq=False)
class Aim:
    """What a remedy is planned for, as a family's contribution reads it: the combined
    requirements, the report, the rules the decision failed, the quasi-identifiers the remedy
    keeps, and whether it keeps sensitive attributes beside them (``diverse``)."""

    requirements: Requirements
    report: AnalysisReport
    failing: frozenset[str]
    quasi_identifiers: tuple[str, ...]
    diverse: bool

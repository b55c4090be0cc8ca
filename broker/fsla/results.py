"""What a decision is made of: the transfer's context, each rule's result, the decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict

from broker.fsla.models import RuleSet
from broker.fsla.stored import StoredRule
from broker.wire.statuses import TransferStatus

EXPORT = "export"
IMPORT = "import"
AGREEMENT = "agreement"


@dataclass(frozen=True)
class TransferContext:
    source_jurisdiction: str
    destination_jurisdiction: str
    purpose: str
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    person_key: str | None = None
    # The agreement the transfer is made under: its id and its terms as one more rule set,
    # which applies beside the F-SLA records' (stricter wins, as between them).
    agreement: tuple[str, RuleSet] | None = None

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

    def stored(self) -> dict[str, Any]:
        """What a transfer stores of it (``Transfer.rules``): :class:`StoredRule`'s JSON."""
        return StoredRule.model_validate(self.as_dict()).stored()


@dataclass(frozen=True)
class BudgetRule:
    """One rule set's privacy budget: ``limit`` epsilon over ``days`` (None: for ever), per
    dataset and destination (``per = "dataset"``) or per source and destination (``"source"``)."""

    scope: str
    jurisdiction: str
    per: str
    limit: float
    days: int | None


class Requirements(RuleSet):
    """The strictest combination of every rule set that applies: what the data must meet.

    Each rule is the strictest of the rule sets' as the rule declares
    (:mod:`broker.fsla.stricter`); besides them, what stays per rule set: the expected
    re-identification bounds, each with its own sampling fraction, and the privacy budgets,
    each counted in its own window.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    expected_reidentification_bounds: tuple[tuple[float, float], ...] = ()  # (fraction, bound)
    budgets: tuple[BudgetRule, ...] = ()


@dataclass(frozen=True)
class Decision:
    status: TransferStatus
    rules: tuple[RuleResult, ...]
    requirements: Requirements

    @property
    def failed(self) -> tuple[RuleResult, ...]:
        return tuple(rule for rule in self.rules if not rule.passed)

"""What a decision is made of: the transfer's context, each rule's result, the decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.fsla.models import RuleSet
from broker.precision import Limits
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


@dataclass(frozen=True)
class BudgetRule:
    """One rule set's privacy budget: ``limit`` epsilon over ``days`` (None: for ever), per
    dataset and destination (``per = "dataset"``) or per source and destination (``"source"``)."""

    scope: str
    jurisdiction: str
    per: str
    limit: float
    days: int | None


@dataclass(frozen=True)
class Requirements:
    """The strictest combination of every rule set that applies: what the data must meet."""

    identifiers_allowed: bool = True
    min_log10_mmaq: float | None = None
    max_mmaq_index: float | None = None
    qi_max_mmaq_index: float | None = None
    min_k: int | None = None
    max_journalist_risk: float | None = None
    max_marketer_risk: float | None = None
    # Population rules: each rule set states its own sampling fraction, so the uniqueness bound
    # is the lowest (k >= 2 meets any) and the expected re-identifications stay per rule set.
    max_population_uniqueness: float | None = None
    expected_reidentification_bounds: tuple[tuple[float, float], ...] = ()  # (fraction, bound)
    min_l: int | None = None
    max_alpha: float | None = None
    # Recursive (c, l)-diversity: the smallest c with the largest l, which implies every pair.
    recursive_c: float | None = None
    recursive_l: int | None = None
    max_beta: float | None = None
    max_enhanced_beta: float | None = None
    max_delta: float | None = None
    max_t: float | None = None
    linkage_lookback_days: int | None = None
    # Identifying precision (broker.fsla.precision): the coarsest date, shortest postcode
    # prefix and lowest top age of the rule sets.
    precision: Limits = field(default_factory=Limits)
    forbidden_attributes: frozenset[str] = field(default_factory=frozenset)
    require_person_key: bool = False
    min_utility_percent: float | None = None
    max_retention_days: int | None = None
    auto_anonymize: bool = True
    # Aggregate releases: allowed only when every rule set allows them; the smallest caps win
    # (an empty delta cap is 0); each rule set's budgets count in its own window.
    aggregate_releases_allowed: bool = False
    max_epsilon_per_release: float | None = None
    max_delta_per_release: float = 0.0
    budgets: tuple[BudgetRule, ...] = ()


@dataclass(frozen=True)
class Decision:
    status: TransferStatus
    rules: tuple[RuleResult, ...]
    requirements: Requirements

    @property
    def failed(self) -> tuple[RuleResult, ...]:
        return tuple(rule for rule in self.rules if not rule.passed)

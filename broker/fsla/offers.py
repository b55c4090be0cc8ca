"""What a member could receive of a catalogued dataset, from the F-SLA records alone: offers.

A dataset in the catalog is described by its provider (columns and their roles, the purposes it
may serve) and, when the provider let the broker measure it, by the broker's summary (k on the
declared quasi-identifiers, l and t of the sensitive attributes, the columns that identify). For a
consumer member and a purpose, the rule sets a transfer from the provider to the consumer would
have to meet are known before any data moves (:func:`broker.fsla.evaluate.applicable_rule_sets`,
stricter wins), so the broker can say in advance what the consumer could receive:

- ``as_is``: the data as measured already meets every rule the offer states;
- ``anonymized``: it must first meet the offer's k, l and t (the broker's remedy, or the
  provider's own anonymization, brings it there), and the columns the rules forbid stay home;
- ``refused``: the records do not allow it at all (purpose, destination, a suspended member),
  and why.

The :class:`Terms` of an offer are what a transfer made under an agreement must meet: as a
:class:`~broker.fsla.models.RuleSet` they apply beside the records' own rule sets
(:meth:`Terms.rule_set`), so a provider's stricter counter-offer (fewer columns, a higher k)
binds every transfer under the agreement. The records' other rules (Mmaq bounds, risks,
beta-likeness, ...) still apply to each transfer as usual: an offer states the rules a consumer
negotiates about, not every rule a transfer meets.

Pure: no web or database code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from broker.columns.names import attribute_key
from broker.fsla import stricter
from broker.fsla.evaluate import applicable_rule_sets, combine
from broker.fsla.models import FSLARecord, RuleSet
from broker.fsla.results import TransferContext
from broker.fsla.rules import gate_rules
from broker.wire.statuses import ColumnRole, MemberStatus, OfferKind


@dataclass(frozen=True)
class Summary:
    """The broker's summary of a catalogued dataset it measured (see the catalog)."""

    rows: int
    k: int | None  # on the declared quasi-identifiers, in people; None without any
    l: int | None  # the fewest distinct sensitive values in a class, over the sensitive columns
    t: float | None  # the largest t-closeness over the sensitive columns
    identifiers: tuple[str, ...] = ()  # the columns that identify (broker.fsla.identifying)
    # Share of information a generalization to k kept on the measured data (k -> percent).
    utility_at_k: dict[int, float] = field(default_factory=dict)
    # The columns a remedy asking k drops as identifiers (k -> names): what cannot leave.
    dropped_at_k: dict[int, tuple[str, ...]] | None = None

    def dropped(self, k: int | None) -> tuple[str, ...] | None:
        """The columns a remedy asking ``k`` drops as identifiers, read at the next k measured
        up (a larger k drops as many or more); None when the summary did not record them."""
        if not self.dropped_at_k:
            return None
        asked = max(k or 2, 2)
        found = sorted(at for at in self.dropped_at_k if at >= asked)
        return self.dropped_at_k[found[0] if found else max(self.dropped_at_k)]

    def expected_utility(self, k: int | None) -> float | None:
        """The utility measured at the smallest k at least ``k`` (None when none was)."""
        if k is None:
            return 100.0
        found = sorted(at for at in self.utility_at_k if at >= k)
        return self.utility_at_k[found[0]] if found else None


@dataclass(frozen=True)
class Listing:
    """A catalogued dataset as the offers see it."""

    provider_id: str
    provider_jurisdiction: str
    columns: tuple[tuple[str, str], ...]  # (name, role)
    purposes: tuple[str, ...] = ()  # the purposes the provider lists; empty: any the records allow
    summary: Summary | None = None

    def names(self, role: str | None = None) -> list[str]:
        return [name for name, r in self.columns if role is None or r == role]


@dataclass(frozen=True)
class Terms:
    """What a transfer under an agreement must meet, and what the consumer may do with it."""

    purpose: str
    columns: tuple[str, ...]  # the columns that may leave (a transfer drops any other)
    min_k: int | None = None
    min_l: int | None = None
    max_t: float | None = None
    identifiers_allowed: bool = False
    retention_days: int | None = None  # the consumer deletes the data after this many days
    onward_transfer: bool = False  # may the consumer send the data on? (no, unless stated)

    def rule_set(self, uploaded: Sequence[str] = ()) -> RuleSet:
        """The terms as one more rule set of a transfer; ``uploaded``: the columns sent, those
        outside the agreed ones forbidden (a remedy drops them)."""
        agreed = {attribute_key(c) for c in self.columns}
        return RuleSet(
            identifiers_allowed=self.identifiers_allowed,
            min_k=self.min_k,
            min_l=self.min_l,
            max_t=self.max_t,
            forbidden_attributes=[c for c in uploaded if attribute_key(c) not in agreed],
            max_retention_days=self.retention_days,
            auto_anonymize=True,
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"columns": list(self.columns)}

    @classmethod
    def of(cls, data: dict[str, Any]) -> Terms:
        return cls(**{**data, "columns": tuple(data["columns"])})

    def weaker_than(self, other: Terms) -> list[str]:
        """How these terms ask less than ``other`` (empty: they ask as much or more): what a
        counter-offer may not do, and what an F-SLA change that requires more breaks. The
        purpose must be the same and the columns among ``other``'s; every rule is compared as
        a rule set's, in the direction it declares (:mod:`broker.fsla.stricter`). Onward
        transfer is the provider's to allow (the records govern each transfer anyway)."""
        found = []
        if self.purpose.casefold() != other.purpose.casefold():
            found.append(f"purpose {self.purpose!r} instead of {other.purpose!r}")
        allowed = {attribute_key(c) for c in other.columns}
        extra = [c for c in self.columns if attribute_key(c) not in allowed]
        if extra:
            found.append(f"columns {', '.join(extra)} beyond those allowed")
        found += stricter.weaker(RuleSet, self.rule_set(), other.rule_set())
        return found


@dataclass(frozen=True)
class Offer:
    """What ``consumer`` could receive for ``purpose``: terms, or a refusal and its reasons."""

    purpose: str
    kind: str
    terms: Terms | None
    reasons: tuple[str, ...] = ()  # why refused, or what the offer leaves out and why
    expected_utility_percent: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "kind": self.kind,
            "terms": None if self.terms is None else self.terms.as_dict(),
            "reasons": list(self.reasons),
            "expected_utility_percent": self.expected_utility_percent,
        }


@dataclass(frozen=True)
class Party:
    """A member on one side of an offer: its jurisdiction's record and its status."""

    member_id: str
    jurisdiction: str
    record: FSLARecord | None  # None: the jurisdiction has no record (nothing may go there)
    status: str = MemberStatus.ACTIVE
    record_version: int | None = None


def offer(
    listing: Listing,
    provider: Party,
    consumer: Party,
    purpose: str,
    columns: Sequence[str] | None = None,
    retention_days: int | None = None,
) -> Offer:
    """The broker's offer of ``listing`` to ``consumer`` for ``purpose``: the ``columns`` asked
    (default: every column but the person key) and at most ``retention_days`` of retention
    (default: as long as the records allow)."""
    refused = _refusal(listing, provider, consumer, purpose, columns)
    if refused:
        return Offer(purpose, OfferKind.REFUSED, None, tuple(refused))
    context = TransferContext(provider.jurisdiction, consumer.jurisdiction, purpose)
    rule_sets = applicable_rule_sets(context, provider.record, consumer.record)
    requirements = combine([rule_set for _scope, _whose, rule_set in rule_sets])
    asked = list(columns) if columns is not None else listing.names()
    stays_home = _dropped(listing, requirements.min_k)
    reasons = []
    kept = []
    for name in asked:
        role = dict(listing.columns)[name]
        if role == ColumnRole.PERSON_KEY:
            reasons.append(f"{name!r} is the person key: measured, never delivered")
        elif requirements.forbids(name):
            reasons.append(f"{name!r} may not leave: the records forbid it")
        elif not requirements.identifiers_allowed and name in stays_home:
            reasons.append(f"{name!r} identifies the rows (measured): it stays home")
        else:
            kept.append(name)
    if not kept:
        return Offer(
            purpose, OfferKind.REFUSED, None, (*reasons, "no column the records let leave")
        )
    retention_limits = [requirements.max_retention_days, retention_days]
    retention = stricter.strictest(RuleSet, "max_retention_days", retention_limits)
    terms = Terms(
        purpose,
        tuple(kept),
        requirements.min_k,
        requirements.min_l,
        requirements.max_t,
        requirements.identifiers_allowed,
        retention,
    )
    kind = OfferKind.ANONYMIZED
    if listing.summary is not None and _meets(listing.summary, terms, kept):
        kind = OfferKind.AS_IS
    utility = None if listing.summary is None else listing.summary.expected_utility(terms.min_k)
    if kind == OfferKind.AS_IS:
        utility = 100.0
    return Offer(purpose, kind, terms, tuple(reasons), utility)


def offers(listing: Listing, provider: Party, consumer: Party) -> list[Offer]:
    """One offer per purpose the dataset lists (or, listing none, the provider's record allows),
    in that order: what the catalog shows ``consumer``."""
    purposes = listing.purposes or (
        tuple(provider.record.allowed_purposes) if provider.record is not None else ()
    )
    return [offer(listing, provider, consumer, purpose) for purpose in purposes]


def _refusal(listing, provider: Party, consumer: Party, purpose: str, columns) -> list[str]:
    reasons = []
    if provider.status != MemberStatus.ACTIVE:
        reasons.append(f"the provider {provider.member_id!r} is {provider.status}")
    if consumer.status != MemberStatus.ACTIVE:
        reasons.append(f"the consumer {consumer.member_id!r} is {consumer.status}")
    if consumer.member_id == provider.member_id:
        reasons.append("a member cannot ask for its own dataset")
    if listing.purposes and purpose.casefold() not in {p.casefold() for p in listing.purposes}:
        reasons.append(
            f"the provider lists this dataset for {', '.join(listing.purposes)}, not {purpose!r}"
        )
    unknown = sorted(set(columns or ()) - set(listing.names()))
    if unknown:
        reasons.append(f"no column {', '.join(map(repr, unknown))} in this dataset")
    if provider.record is None or consumer.record is None:
        missing = provider.jurisdiction if provider.record is None else consumer.jurisdiction
        reasons.append(f"the jurisdiction {missing} has no F-SLA record")
        return reasons
    context = TransferContext(provider.jurisdiction, consumer.jurisdiction, purpose)
    for rule in gate_rules(context, provider.record, consumer.record):
        if not rule.passed:
            reasons.append(rule.detail)
    return reasons


def _dropped(listing: Listing, k: int | None) -> set[str]:
    """The columns the remedy of a transfer would drop as identifiers
    (:func:`broker.fsla.identifying.dropped`, recorded in the summary per k). A summary stored
    before they were recorded: the identifying columns that are neither quasi-identifiers
    (generalized) nor sensitive."""
    summary = listing.summary
    if summary is None:
        return set()
    recorded = summary.dropped(k)
    if recorded is not None:
        return set(recorded)
    other = set(listing.names(ColumnRole.OTHER))
    return {name for name in summary.identifiers if name in other}


def _meets(summary: Summary, terms: Terms, kept: Sequence[str]) -> bool:
    """Whether the data as measured meets ``terms`` (identifiers among the kept columns
    included), so that it could leave as it is."""
    if not terms.identifiers_allowed and set(summary.identifiers) & set(kept):
        return False
    if terms.min_k is not None and (summary.k is None or summary.k < terms.min_k):
        return False
    if terms.min_l is not None and (summary.l is None or summary.l < terms.min_l):
        return False
    return terms.max_t is None or (summary.t is not None and summary.t <= terms.max_t)

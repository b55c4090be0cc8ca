"""The federation overview from plain rows: pure (no database, no web framework).

The repository aggregates in SQL and hands over small rows (one per member, per jurisdiction
pair and status, per day and status, per delivery state); :func:`overview` turns them into the
answer. It never sees a transfer: the rows' number follows the members, pairs and days, not the
transfers, so the overview costs the same in Python for a thousand transfers as for a million.

Adding a section (the data market's is the last added) is adding fields: its rows as
a field of :class:`OverviewRows`, filled by a repository query; its answer as a field of
:class:`~broker.federation.schemas.FederationOverview`; and a function from the one to the other,
called in :func:`overview`. The sections do not depend on each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from broker.federation.schemas import (
    DayOverview,
    DecisionsOverTime,
    DeliveryCounts,
    FederationOverview,
    HealthCounts,
    MarketCounts,
    MemberOverview,
    PairOverview,
    StatusCounts,
)
from broker.members.health import health_read
from broker.negotiations.states import FINAL
from broker.wire.statuses import (
    AgreementState,
    HealthState,
    MemberStatus,
    NegotiationState,
    TransferStatus,
)

DEFAULT_DAYS = 30
MAX_DAYS = 366


@dataclass(frozen=True)
class MemberRow:
    """A member with its health (state None: no health row, shown as unknown)."""

    id: str
    name: str
    jurisdiction: str
    status: str
    state: str | None = None
    since: datetime | None = None
    checked_at: datetime | None = None
    reason: str | None = None


@dataclass(frozen=True)
class PairRow:
    """Decisions of one status between two jurisdictions (destination None: not a member)."""

    source_jurisdiction: str
    destination_jurisdiction: str | None
    status: str
    count: int


@dataclass(frozen=True)
class DayRow:
    """Decisions of one status on one UTC day."""

    day: date
    status: str
    count: int


@dataclass(frozen=True)
class DeliveryRow:
    """Deliveries in one outbox status; ``held``: pending ones whose destination is down."""

    status: str
    held: bool
    count: int


@dataclass(frozen=True)
class MarketRow:
    """One count of the data market: ``what`` (``dataset``, ``negotiation``, ``agreement``)
    in one ``state`` (a dataset: ``listed``, ``measured`` or ``withdrawn``)."""

    what: str
    state: str
    count: int


@dataclass(frozen=True)
class OverviewRows:
    """Everything the overview is made of, as the repository reads it."""

    members: Sequence[MemberRow] = ()
    pairs: Sequence[PairRow] = ()
    days: Sequence[DayRow] = ()
    deliveries: Sequence[DeliveryRow] = ()
    market: Sequence[MarketRow] = ()


def window(today: date, days: int) -> tuple[date, date]:
    """The first and last UTC day of a window of ``days`` days ending ``today``.

    Examples
    --------
    >>> window(date(2026, 11, 27), 7)
    (datetime.date(2026, 11, 21), datetime.date(2026, 11, 27))
    """
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be between 1 and {MAX_DAYS}, not {days}")
    return today - timedelta(days=days - 1), today


def overview(rows: OverviewRows, *, now: datetime, days: int = DEFAULT_DAYS) -> FederationOverview:
    """The federation overview at ``now`` (UTC), decisions over the last ``days`` days."""
    return FederationOverview(
        generated_at=now,
        members=members(rows.members),
        member_health=member_health(rows.members),
        transfers_by_jurisdiction_pair=pairs(rows.pairs),
        decisions_over_time=decisions_over_time(rows.days, now.date(), days),
        deliveries=deliveries(rows.deliveries),
        market=market(rows.market),
    )


def members(rows: Iterable[MemberRow]) -> list[MemberOverview]:
    return [
        MemberOverview(
            id=row.id,
            name=row.name,
            jurisdiction=row.jurisdiction,
            status=MemberStatus(row.status),
            health=health_read(row if row.state is not None else None, admin=True),
        )
        for row in sorted(rows, key=lambda r: r.id)
    ]


def member_health(rows: Iterable[MemberRow]) -> HealthCounts:
    counts = {state: 0 for state in HealthState}
    for row in rows:
        if row.status == MemberStatus.ACTIVE:
            counts[HealthState(row.state or HealthState.UNKNOWN)] += 1
    return HealthCounts(**counts)


def status_counts(pairs: Iterable[tuple[str, int]]) -> StatusCounts:
    """(status, count) pairs added up per status; a status not known here counts in the
    total only.

    Examples
    --------
    >>> status_counts([("approved", 2), ("rejected", 1), ("approved", 3)])
    StatusCounts(approved=5, anonymization_required=0, rejected=1, total=6)
    """
    counts = {status.value: 0 for status in TransferStatus}
    total = 0
    for status, count in pairs:
        total += count
        if status in counts:
            counts[status] += count
    return StatusCounts(**counts, total=total)


def pairs(rows: Iterable[PairRow]) -> list[PairOverview]:
    grouped: dict[tuple[str, str | None], list[tuple[str, int]]] = {}
    for row in rows:
        key = (row.source_jurisdiction, row.destination_jurisdiction)
        grouped.setdefault(key, []).append((row.status, row.count))
    found = [
        PairOverview(source_jurisdiction=s, destination_jurisdiction=d, decisions=status_counts(c))
        for (s, d), c in grouped.items()
    ]
    return sorted(
        found,
        key=lambda p: (-p.decisions.total, p.source_jurisdiction, p.destination_jurisdiction or ""),
    )


def decisions_over_time(rows: Iterable[DayRow], today: date, days: int) -> DecisionsOverTime:
    """Every day of the window, days without a decision included; rows outside it are left
    out."""
    first, last = window(today, days)
    per_day: dict[date, list[tuple[str, int]]] = {
        first + timedelta(days=n): [] for n in range(days)
    }
    for row in rows:
        if row.day in per_day:
            per_day[row.day].append((row.status, row.count))
    return DecisionsOverTime(
        days=days,
        first_day=first,
        last_day=last,
        per_day=[DayOverview(day=d, decisions=status_counts(c)) for d, c in per_day.items()],
        decisions=status_counts(pair for counts in per_day.values() for pair in counts),
    )


def deliveries(rows: Iterable[DeliveryRow]) -> DeliveryCounts:
    counts = {"pending": 0, "held": 0, "delivered": 0, "failed": 0}
    total = 0
    for row in rows:
        total += row.count
        state = "held" if row.held and row.status == "pending" else row.status
        if state in counts:
            counts[state] += row.count
    return DeliveryCounts(**counts, total=total)


def market(rows: Iterable[MarketRow]) -> MarketCounts:
    """The catalog's datasets, the negotiations per state and the agreements per state.

    >>> market([MarketRow("negotiation", "OFFERED", 2), MarketRow("negotiation", "FINALIZED", 1),
    ...         MarketRow("agreement", "active", 1)]).negotiations_open
    2
    """
    found = {(row.what, row.state): row.count for row in rows}
    negotiations = {state: n for (what, state), n in found.items() if what == "negotiation"}
    return MarketCounts(
        datasets_listed=found.get(("dataset", "listed"), 0),
        datasets_measured=found.get(("dataset", "measured"), 0),
        datasets_withdrawn=found.get(("dataset", "withdrawn"), 0),
        negotiations_open=sum(n for state, n in negotiations.items() if state not in FINAL),
        negotiations={state: negotiations.get(state, 0) for state in NegotiationState},
        agreements_active=found.get(("agreement", AgreementState.ACTIVE), 0),
        agreements_suspended=found.get(("agreement", AgreementState.SUSPENDED), 0),
    )

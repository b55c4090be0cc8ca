"""The overview's queries: each aggregates in the database and returns a few rows (per member,
per jurisdiction pair and status, per day and status, per delivery state, per market state),
never a transfer."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from broker.catalog.models import CatalogDataset, CatalogVersion
from broker.delivery.models import Delivery
from broker.delivery.repository import destination_down
from broker.federation.overview import DayRow, DeliveryRow, MarketRow, MemberRow, PairRow
from broker.members.models import Member, MemberHealth
from broker.negotiations.models import Agreement, Negotiation
from broker.transfers.models import Transfer
from broker.wire.statuses import DeliveryStatus, HealthState


def member_rows(session: Session) -> list[MemberRow]:
    query = select(
        Member.id,
        Member.name,
        Member.jurisdiction,
        Member.status,
        MemberHealth.state,
        MemberHealth.since,
        MemberHealth.checked_at,
        MemberHealth.reason,
    ).outerjoin(MemberHealth, MemberHealth.member_id == Member.id)
    return [MemberRow(*row) for row in session.execute(query)]


def pair_rows(session: Session) -> list[PairRow]:
    """Decisions per (source jurisdiction, destination jurisdiction, status): counted per
    (source, destination, status) first, which the ``ix_transfers_pair_status`` index answers
    alone, then joined with the members (a few rows, not every transfer)."""
    per_members = (
        select(
            Transfer.source_id,
            Transfer.destination_id,
            Transfer.status,
            func.count().label("n"),
        )
        .group_by(Transfer.source_id, Transfer.destination_id, Transfer.status)
        .subquery()
    )
    source, destination = aliased(Member), aliased(Member)
    query = (
        select(
            source.jurisdiction,
            destination.jurisdiction,
            per_members.c.status,
            func.sum(per_members.c.n),
        )
        .join(source, source.id == per_members.c.source_id)
        .outerjoin(destination, destination.id == per_members.c.destination_id)
        .group_by(source.jurisdiction, destination.jurisdiction, per_members.c.status)
    )
    return [PairRow(s, d, status, int(n)) for s, d, status, n in session.execute(query)]


def day_rows(session: Session, since: datetime) -> list[DayRow]:
    """Decisions per UTC day and status from ``since`` on."""
    day = _utc_day(session, Transfer.created_at)
    query = (
        select(day, Transfer.status, func.count())
        .where(Transfer.created_at >= since)
        .group_by(day, Transfer.status)
    )
    return [DayRow(_as_date(d), status, n) for d, status, n in session.execute(query)]


def delivery_rows(session: Session) -> list[DeliveryRow]:
    """Deliveries per status, and how many of the pending ones are held (their destination is
    down): only pending rows are joined with their destination's health, and only when a member
    is down (the cost of that count follows the pending deliveries, usually few)."""
    by_status = select(Delivery.status, func.count()).group_by(Delivery.status)
    counts = dict(session.execute(by_status).all())
    held = 0
    if counts.get(DeliveryStatus.PENDING) and session.scalar(_any_member_down()):
        held = session.scalar(
            select(func.count()).where(
                Delivery.status == DeliveryStatus.PENDING, destination_down()
            )
        )
    rows = [DeliveryRow(status, False, n) for status, n in counts.items()]
    if held:
        rows = [
            DeliveryRow(r.status, False, r.count - held) if r.status == "pending" else r
            for r in rows
        ]
        rows.append(DeliveryRow(DeliveryStatus.PENDING, True, held))
    return rows


def market_rows(session: Session) -> list[MarketRow]:
    """The catalog's datasets (listed, of them measured; withdrawn), the negotiations per state
    and the agreements per state: three GROUP BYs."""
    current = and_(
        CatalogVersion.dataset_id == CatalogDataset.id,
        CatalogVersion.version == CatalogDataset.version,
    )
    listed = CatalogDataset.withdrawn_at.is_(None)
    measured = CatalogVersion.measured_at.is_not(None)
    datasets = (
        select(listed, measured, func.count())
        .join(CatalogVersion, current)
        .group_by(listed, measured)
    )
    rows: list[MarketRow] = []
    for listed, measured, n in session.execute(datasets):
        if not listed:
            rows.append(MarketRow("dataset", "withdrawn", n))
            continue
        rows.append(MarketRow("dataset", "listed", n))
        if measured:
            rows.append(MarketRow("dataset", "measured", n))
    for model, what in ((Negotiation, "negotiation"), (Agreement, "agreement")):
        query = select(model.state, func.count()).group_by(model.state)
        rows += [MarketRow(what, state, n) for state, n in session.execute(query)]
    return rows


def _any_member_down():
    return select(MemberHealth.member_id).where(MemberHealth.state == HealthState.DOWN).limit(1)


def _utc_day(session: Session, column):
    """The UTC day of a timestamp column, as the database computes it (SQLite stores UTC
    text; PostgreSQL's timestamptz is read in UTC whatever the session's time zone)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.date(func.timezone("UTC", column))
    return func.date(column)


def _as_date(value: date | str) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value

"""The federation overview: read the aggregated rows, build the answer (read only)."""

from __future__ import annotations

from datetime import UTC, datetime, time

from sqlalchemy.orm import Session

from broker.federation import repository
from broker.federation.overview import DEFAULT_DAYS, OverviewRows, overview, window
from broker.federation.schemas import FederationOverview


def federation_overview(
    session: Session, days: int = DEFAULT_DAYS, now: datetime | None = None
) -> FederationOverview:
    now = now or datetime.now(UTC)
    first, _ = window(now.date(), days)
    rows = OverviewRows(
        members=repository.member_rows(session),
        pairs=repository.pair_rows(session),
        days=repository.day_rows(session, datetime.combine(first, time(), tzinfo=UTC)),
        deliveries=repository.delivery_rows(session),
        market=repository.market_rows(session),
    )
    session.rollback()  # read only: end the transaction (and SQLite's read snapshot)
    return overview(rows, now=now, days=days)

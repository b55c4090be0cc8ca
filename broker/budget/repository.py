"""Ledger queries: the spends of a (source, destination) pair, a new spend, and the lock that
makes reading the standing and writing a spend one step."""

import hashlib
from datetime import datetime

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from broker.budget.models import PrivacySpend
from broker.privacy.budget import Spend, parse_amount


def lock_pair(session: Session, source_id: str, destination_id: str) -> None:
    """Hold the (source, destination) pair's ledger until the transaction ends.

    PostgreSQL: a transaction-level advisory lock on a 64-bit key of the pair, so that two
    releases between the same members take turns between reading what was spent and writing
    their own spend (a row lock would need a row to exist first). SQLite: every transaction
    already begins with ``BEGIN IMMEDIATE`` (``broker.db``), which serializes writers.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    digest = hashlib.sha256(f"privacy-budget\0{source_id}\0{destination_id}".encode()).digest()
    key = int.from_bytes(digest[:8], "big", signed=True)
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def spends(
    session: Session, source_id: str, destination_id: str, since: datetime | None
) -> list[Spend]:
    """What releases from ``source_id`` to ``destination_id`` spent at or after ``since``
    (None: ever), oldest first."""
    query = select(PrivacySpend).where(
        PrivacySpend.source_id == source_id, PrivacySpend.destination_id == destination_id
    )
    if since is not None:
        query = query.where(PrivacySpend.spent_at >= since)
    query = query.order_by(PrivacySpend.spent_at, PrivacySpend.transfer_id)
    return [
        Spend(row.dataset_key, row.spent_at, parse_amount(row.epsilon), parse_amount(row.delta))
        for row in session.scalars(query)
    ]


def add(session: Session, spend: PrivacySpend) -> None:
    """A spend (after its transfer row, which it refers to)."""
    session.add(spend)
    session.flush()

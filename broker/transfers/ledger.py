"""The privacy budget ledger of aggregate releases: what a (source, destination) pair spent, the
lock that makes reading that standing and writing a spend one step, and the sketches that
identify datasets. The spends and sketches are written with their decision
(:mod:`broker.transfers.recording`)."""

import hashlib
from datetime import datetime

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from broker.privacy.budget import Spend, parse_amount
from broker.privacy.identity import CONTAINED_SIZE, Sketch
from broker.transfers.models import DatasetSketch, PrivacySpend


def lock_pair(session: Session, source_id: str, destination_id: str) -> None:
    """Hold the (source, destination) pair's ledger until the transaction ends.

    PostgreSQL: a transaction-level advisory lock on a 64-bit key of the pair, so that two
    releases between the same members take turns between reading what was spent and writing
    their own spend (a row lock would need a row to exist first). SQLite: every transaction
    already begins with ``BEGIN IMMEDIATE`` (``broker.storage.db``), which serializes writers.
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


# The most sketches one release is compared with (a source's most recent of a matching size).
MAX_SKETCHES_COMPARED = 2_000


def sketches_near(session: Session, source_id: str, distinct_rows: int) -> list[tuple[str, Sketch]]:
    """The stored sketches of ``source_id`` whose sizes allow a match with a table of
    ``distinct_rows`` distinct rows (:func:`broker.privacy.identity.sizes_compatible`, in
    integers), newest first, with their dataset keys."""
    tenths = round(CONTAINED_SIZE * 10)
    query = (
        select(DatasetSketch)
        .where(
            DatasetSketch.source_id == source_id,
            DatasetSketch.distinct_rows * 10 >= tenths * distinct_rows,
            DatasetSketch.distinct_rows * tenths <= 10 * distinct_rows,
        )
        .order_by(DatasetSketch.created_at.desc(), DatasetSketch.transfer_id)
        .limit(MAX_SKETCHES_COMPARED)
    )
    return [
        (row.dataset_key, Sketch.from_bytes(row.sketch, row.distinct_rows))
        for row in session.scalars(query)
    ]

"""Rows inserted by ``INSERT`` statements built once (broker/storage/rows.py) are the rows a flush
of the same objects writes, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from broker.audit.models import AuditEntry
from broker.delivery.models import Delivery
from broker.storage.rows import column_values, insert_objects


def _entry(entry_id: int, hash_rule: str | None) -> AuditEntry:
    return AuditEntry(
        id=entry_id,
        created_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
        actor="broker",
        action="test.row",
        subject="s",
        details={"n": [1, 2], "text": "é"},
        previous_hash="0" * 64,
        hash=f"{entry_id:064x}",
        hash_rule=hash_rule,
    )


def _read(session: Session, entry_id: int) -> tuple:
    row = session.execute(select(AuditEntry.__table__).where(AuditEntry.id == entry_id)).one()
    return tuple(row)


def test_an_inserted_row_is_the_row_a_flush_writes(connection):
    session = Session(bind=connection)
    session.add(_entry(1_000_001, "rfc8785"))
    session.flush()
    insert_objects(session, _entry(1_000_002, "rfc8785"))
    flushed, inserted = _read(session, 1_000_001), _read(session, 1_000_002)
    assert flushed[1:7] == inserted[1:7]  # all but the id and the hash
    assert inserted[-1] == "rfc8785"


def test_a_column_the_object_leaves_empty_gets_the_databases_default(connection):
    session = Session(bind=connection)
    insert_objects(session, _entry(1_000_003, None))
    assert _read(session, 1_000_003)[-1] == "sorted-json"  # the column's server default


def test_a_python_default_is_written_and_set_on_the_object():
    delivery = Delivery(transfer_id="t", source_id="a", destination_id="b", headers={})
    values = column_values(delivery)
    assert values["attempts"] == 0 and delivery.attempts == 0


def test_an_object_without_its_key_is_refused_not_written_with_none():
    with pytest.raises(ValueError, match="transfer_id is not set"):
        column_values(Delivery(source_id="a", destination_id="b", headers={}))

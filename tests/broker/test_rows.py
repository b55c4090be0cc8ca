"""Rows inserted by ``INSERT`` statements built once (broker/storage/rows.py) are the rows a flush
of the same objects writes, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from broker.audit.models import AuditEntry
from broker.delivery.models import Delivery
from broker.members.models import Member
from broker.storage.rows import column_values, insert_objects
from broker.transfers.models import Transfer


def _entry(entry_id: int, hash_rule: str | None) -> AuditEntry:
    rule = {} if hash_rule is None else {"hash_rule": hash_rule}
    return AuditEntry(
        id=entry_id,
        created_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
        actor="broker",
        action="test.row",
        subject="s",
        details={"n": [1, 2], "text": "é"},
        previous_hash="0" * 64,
        hash=f"{entry_id:064x}",
        **rule,
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


def _transfer(transfer_id: str) -> Transfer:
    return Transfer(
        id=transfer_id,
        source_id="rows-member",
        destination_id="elsewhere",
        purpose="research",
        status="rejected",
        anonymize="no",
        quasi_identifiers=[],
        sensitive=[],
        report=None,  # given None: JSON null
        rules=[],
        remedy=None,
        policy_versions={},
        dataset={},
        request_fingerprint="f" * 64,
        created_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    )  # not given: aggregate (SQL NULL), kind (its Python default)


def test_json_columns_given_none_or_never_given_are_stored_as_a_flush_stores_them(connection):
    session = Session(bind=connection)
    session.add(
        Member(
            id="rows-member",
            name="m",
            jurisdiction="SN",
            inbox_url="http://x/",
            api_key_hash="k" * 64,
        )
    )
    session.add(_transfer("rows-flushed"))
    session.flush()
    insert_objects(session, _transfer("rows-inserted"))
    table = Transfer.__table__
    seen = {
        row.id: tuple(row[1:])
        for row in session.execute(
            select(
                table.c.id,
                table.c.aggregate.is_(None),
                table.c.report.is_(None),
                table.c.kind,
                table.c.quasi_identifiers_inferred,
            ).where(table.c.id.in_(["rows-flushed", "rows-inserted"]))
        )
    }
    assert seen["rows-flushed"] == seen["rows-inserted"] == (True, False, "microdata", False)


def test_a_python_default_is_written_and_set_on_the_object():
    delivery = Delivery(transfer_id="t", source_id="a", destination_id="b", headers={})
    values = column_values(delivery)
    assert values["attempts"] == 0 and delivery.attempts == 0


def test_an_object_without_its_key_is_refused_not_written_with_none():
    with pytest.raises(ValueError, match="transfer_id is not set"):
        column_values(Delivery(source_id="a", destination_id="b", headers={}))

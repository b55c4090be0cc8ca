"""The audit chain's hash rules: a chain written before RFC 8785 still verifies after the
upgrade, new entries are hashed over RFC 8785 JSON, and a chain never goes back to the old rule.

Expected hashes are computed here by hand from the rules' text, not by the broker's code."""

import hashlib
import json
from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.cli import main
from broker.storage.db import alembic_config, make_engine
from tests.conftest import postgres_database

MOMENT = datetime(2026, 11, 20, 9, 30, 0, 123456, tzinfo=UTC)
STAMP = "2026-11-20T09:30:00.123456Z"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def old_database(request, tmp_path):
    """A database at the schema before the hash rule (revision 0011), with a chain of two
    entries written as the broker wrote them then: SHA-256 of the previous hash and Python's
    sorted JSON. Its second entry holds 1.0, which RFC 8785 would write 1."""
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path / 'old.db'}", lambda: None
    else:
        url, drop = postgres_database()
    engine = make_engine(url)
    command.upgrade(alembic_config(engine), "0011")
    previous = "0" * 64
    with engine.begin() as connection:
        for entry_id, details in ((1, {"version": 1}), (2, {"epsilon": 1.0, "note": "é"})):
            body = {
                "id": entry_id,
                "created_at": STAMP,
                "actor": "seed",
                "action": "policy.seeded",
                "subject": "SN",
                "details": details,
            }
            canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest = hashlib.sha256((previous + canonical).encode()).hexdigest()
            connection.execute(
                text(
                    "INSERT INTO audit_log (id, created_at, actor, action, subject, details, "
                    "previous_hash, hash) VALUES (:id, :at, 'seed', 'policy.seeded', 'SN', "
                    ":details, :previous, :hash)"
                ),
                {
                    "id": entry_id,
                    "at": MOMENT.replace(tzinfo=None),
                    "details": json.dumps(details),
                    "previous": previous,
                    "hash": digest,
                },
            )
            previous = digest
    yield engine, url, previous
    engine.dispose()
    drop()


def test_an_old_chain_verifies_after_the_upgrade_and_grows_under_rfc8785(old_database):
    engine, _, old_head = old_database
    command.upgrade(alembic_config(engine), "head")
    with Session(engine) as session:
        before = audit.verify(session)
        assert (before.valid, before.entries_checked, before.head_hash) == (True, 2, old_head)
        entry = audit.record(session, "broker", "transfer.delivered", "t-1", {"attempts": 1.0})
        session.commit()
        assert entry.hash_rule == "rfc8785"
        after = audit.check_anchor(session, 2, old_head)  # a head exported before the upgrade
        assert (after.valid, after.entries_checked, after.head_id) == (True, 3, 3)
        rules = session.execute(text("SELECT id, hash_rule FROM audit_log ORDER BY id")).all()
    assert rules == [(1, "sorted-json"), (2, "sorted-json"), (3, "rfc8785")]
    # RFC 8785 by hand: members sorted, no blanks, 1.0 written 1, the rule among the members.
    stamp = entry.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    jcs = (
        '{"action":"transfer.delivered","actor":"broker","created_at":"' + stamp + '",'
        '"details":{"attempts":1},"hash_rule":"rfc8785","id":3,"subject":"t-1"}'
    )
    assert entry.hash == hashlib.sha256((old_head + jcs).encode()).hexdigest()


def test_fedbroker_audit_head_and_check_read_both_rules(old_database, tmp_path, monkeypatch):
    engine, url, old_head = old_database
    monkeypatch.setenv("BROKER_DATABASE_URL", url)
    monkeypatch.setenv("BROKER_ADMIN_TOKEN", "x" * 20)
    anchor = tmp_path / "head.json"
    command.upgrade(alembic_config(engine), "head")
    assert main(["audit", "head", "-o", str(anchor)]) == 0
    assert json.loads(anchor.read_text())["head_hash"] == old_head
    with Session(engine) as session:
        audit.record(session, "broker", "transfer.delivered", "t-1", {"attempts": 1})
        session.commit()
    assert main(["audit", "check", str(anchor)]) == 0


def _disable_append_only(connection) -> None:
    if connection.dialect.name == "sqlite":
        connection.execute(text("DROP TRIGGER IF EXISTS audit_log_no_update"))
    else:
        connection.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"))


def test_a_rule_changed_in_a_row_or_an_old_rule_after_a_new_one_is_a_break(old_database):
    engine, _, _ = old_database
    command.upgrade(alembic_config(engine), "head")
    with Session(engine) as session:
        audit.record(session, "broker", "a", "s", {})
        audit.record(session, "broker", "b", "s", {})
        session.commit()
    with engine.begin() as connection:
        _disable_append_only(connection)
        # An entry passed off as the older rule: its hash no longer fits, and it is a downgrade.
        connection.execute(text("UPDATE audit_log SET hash_rule = 'sorted-json' WHERE id = 4"))
    with Session(engine) as session:
        result = audit.verify(session)
    assert (result.valid, result.first_invalid_id) == (False, 4)
    assert "never goes back to an older rule" in result.reason
    with engine.begin() as connection:
        _disable_append_only(connection)
        connection.execute(text("UPDATE audit_log SET hash_rule = 'rfc8785' WHERE id = 4"))
        # An old entry relabelled with the new rule: recomputed under it, it does not fit.
        connection.execute(text("UPDATE audit_log SET hash_rule = 'rfc8785' WHERE id = 2"))
    with Session(engine) as session:
        result = audit.verify(session)
    assert (result.valid, result.first_invalid_id) == (False, 2)
    assert "altered" in result.reason

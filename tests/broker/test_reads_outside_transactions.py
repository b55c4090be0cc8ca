"""A request's short reads run outside any transaction; its writes inside one.

The caller's key and a decision's parties are read on every request. Inside a transaction each
read costs two more round trips (BEGIN, COMMIT) and, on SQLite, the write lock. These tests run
the broker on a database of its own (not bound to a test's connection, which would keep every
statement in that connection's transaction) and look, after each statement, at whether the
driver's connection was inside a transaction.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from broker.main import create_app
from broker.storage.db import make_engine
from tests.broker.conftest import ADMIN, Federation

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


def _in_transaction(dbapi_connection) -> bool:
    if hasattr(dbapi_connection, "info"):  # psycopg: IDLE is 0
        return dbapi_connection.info.transaction_status != 0
    return dbapi_connection.in_transaction  # sqlite3


@pytest.fixture
def broker(own_database, settings):
    """The broker of these tests' settings on a database of its own (its sessions commit)."""
    own = settings.model_copy(update={"database_url": own_database, "apply_migrations": False})
    with TestClient(create_app(own)) as client:
        yield client


def _watched(client: TestClient) -> tuple[list[tuple[str, bool]], callable]:
    """(statement, ran inside a transaction) of every statement from now on, and the stop."""
    engine = client.app.state.sessionmaker.kw["bind"]
    seen: list[tuple[str, bool]] = []

    def after(connection, cursor, statement, *_args):
        dbapi = connection.connection.dbapi_connection
        seen.append((" ".join(statement.split()).lower(), _in_transaction(dbapi)))

    event.listen(engine, "after_cursor_execute", after)
    return seen, lambda: event.remove(engine, "after_cursor_execute", after)


def test_a_decision_reads_outside_transactions_and_writes_in_one(broker):
    federation = Federation(broker)
    seen, stop = _watched(broker)
    try:
        answer = federation.send(
            "sn-hospital", "patients_published.csv", destination="fr-research", **QI
        )
    finally:
        stop()
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "approved"
    assert answer.json()["delivery"]["status"] == "pending"  # its health read before
    reads = [(s, inside) for s, inside in seen if s.startswith("select") and "lock" not in s]
    caller, parties = reads[0], reads[1]
    assert "api_key_hash" in caller[0] and not caller[1]
    assert "policy_versions" in parties[0] and not parties[1]
    assert "member_health" in parties[0]  # the destination's health, in the same statement
    assert not any(s.startswith("select member_health") for s, _ in reads)
    writes = [(s, inside) for s, inside in seen if s.startswith("insert")]
    assert [s.split()[2] for s, _ in writes] == ["transfers", "deliveries", "releases", "audit_log"]
    assert all(inside for _, inside in writes)


def test_an_admin_request_reads_its_token_outside_a_transaction_and_still_writes(broker):
    seen, stop = _watched(broker)
    try:
        listed = broker.get("/v1/members", headers=ADMIN)
        created = broker.post(
            "/v1/members",
            headers=ADMIN,
            json={
                "id": "sn-lab",
                "name": "SN lab",
                "jurisdiction": "SN",
                "inbox_url": "http://127.0.0.1:9/inbox",
            },
        )
    finally:
        stop()
    assert listed.status_code == 200 and created.status_code == 201, created.text
    assert any("from administrators" in s and not inside for s, inside in seen)
    assert all(inside for s, inside in seen if s.startswith(("insert", "update")))
    # What was written is there, read by a later request.
    assert [m["id"] for m in broker.get("/v1/members", headers=ADMIN).json()] == ["sn-lab"]


def test_a_sqlite_connection_read_outside_a_transaction_goes_back_to_the_pool_as_it_was(
    tmp_path,
):
    """Reads in autocommit reset the connection on its way back, which would turn the
    driver's own implicit BEGIN back on: the broker opens its transactions itself
    (BEGIN IMMEDIATE), so the driver must not."""
    from sqlalchemy import text

    from broker.storage.db import each_statement_on_its_own, make_sessionmaker

    engine = make_engine(f"sqlite:///{tmp_path / 'pool.db'}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (x INTEGER)"))
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        each_statement_on_its_own(session)
        assert session.execute(text("SELECT count(*) FROM t")).scalar() == 0
        dbapi = session.connection().connection.dbapi_connection
        assert not dbapi.in_transaction
        session.commit()
    assert dbapi.isolation_level is None
    with sessions() as session:
        session.execute(text("INSERT INTO t VALUES (1)"))
        assert session.connection().connection.dbapi_connection.in_transaction
        session.commit()
    engine.dispose()


def test_a_key_read_outside_a_transaction_is_refused_the_moment_it_is_revoked(broker):
    """Each read sees what was committed before it: a revoked key, a suspended member, are
    refused at their very next call (no snapshot or cache holds the old state)."""
    federation = Federation(broker)
    member = {"Authorization": f"Bearer {federation.keys['sn-hospital']}"}
    assert broker.get("/v1/transfers", headers=member).status_code == 200
    suspended = broker.post("/v1/members/sn-hospital/suspend", headers=ADMIN)
    assert suspended.status_code == 200, suspended.text
    assert broker.get("/v1/transfers", headers=member).status_code == 403
    assert broker.post("/v1/members/sn-hospital/reactivate", headers=ADMIN).status_code == 200
    assert broker.get("/v1/transfers", headers=member).status_code == 200
    revoked = broker.post("/v1/members/sn-hospital/api-key/revoke", headers=ADMIN)
    assert revoked.status_code == 200, revoked.text
    assert broker.get("/v1/transfers", headers=member).status_code == 401


def test_the_outbox_lease_stands_alone_and_still_holds_its_rows(broker):
    """The lease is one conditional UPDATE, committed on its own: another owner claiming at
    once gets nothing, and the lease was taken outside any transaction."""
    from broker.delivery.service import claim

    federation = Federation(broker)
    answer = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", **QI
    )
    assert answer.json()["delivery"]["status"] == "pending", answer.text
    state = broker.app.state
    seen, stop = _watched(broker)
    try:
        first = claim(state.sessionmaker, "worker-a", state.settings)
        second = claim(state.sessionmaker, "worker-b", state.settings)
    finally:
        stop()
    assert [leased.transfer_id for leased in first] == [answer.json()["id"]]
    assert second == []
    leases = [(s, inside) for s, inside in seen if s.startswith("update deliveries")]
    assert len(leases) == 2 and not any(inside for _, inside in leases)

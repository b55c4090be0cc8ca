"""The audit log: every decision and policy change is chained; tampering is found."""

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.broker.conftest import ADMIN

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


def entries(client):
    return client.get("/v1/audit?limit=500", headers=ADMIN).json()["items"]


def test_decisions_and_policy_changes_are_recorded(federation):
    client = federation.client
    federation.send("sn-hospital", "patients_original.csv", destination="fr-research", **QI)
    record = client.get("/v1/policies/SN", headers=ADMIN).json()["record"]
    record["allowed_purposes"].append("statistics")
    client.put("/v1/policies/SN", headers={**ADMIN, "If-Match": '"1"'}, json=record)
    actions = [e["action"] for e in entries(client)]
    assert actions.count("policy.seeded") == 4
    assert actions[-2:] == ["transfer.decided", "policy.updated"]
    updated = entries(client)[-1]["details"]
    assert updated["changed_fields"] == ["allowed_purposes"]
    assert updated["changes"] == [
        'allowed_purposes: ["research", "public_health", "treatment"] -> '
        '["research", "public_health", "treatment", "statistics"]'
    ]
    decided = next(e for e in entries(client) if e["action"] == "transfer.decided")
    assert decided["details"]["status"] == "anonymization_required"
    assert decided["details"]["policy_versions"] == {"SN": 1, "FR": 1}
    listed = entries(client)
    assert client.get("/v1/audit/verify", headers=ADMIN).json() == {
        "valid": True,
        "entries_checked": len(actions),
        "first_invalid_id": None,
        "reason": None,
        "head_id": listed[-1]["id"],
        "head_hash": listed[-1]["hash"],
    }


def test_paging_with_after(federation):
    first = federation.client.get("/v1/audit?limit=3", headers=ADMIN).json()
    assert len(first["items"]) == 3 and first["next_after"] == first["items"][-1]["id"]
    rest = federation.client.get(f"/v1/audit?after={first['next_after']}", headers=ADMIN).json()
    assert rest["items"][0]["id"] == first["next_after"] + 1


def test_database_refuses_to_update_or_delete_audit_rows(federation, connection):
    with pytest.raises(DBAPIError, match="append-only"), connection.begin_nested():
        connection.execute(text("UPDATE audit_log SET actor = 'mallory' WHERE id = 1"))
    with pytest.raises(DBAPIError, match="append-only"), connection.begin_nested():
        connection.execute(text("DELETE FROM audit_log WHERE id = 1"))


def disable_append_only(connection):
    """What an attacker with database access would do first."""
    if connection.dialect.name == "sqlite":
        connection.execute(text("DROP TRIGGER audit_log_no_update"))
        connection.execute(text("DROP TRIGGER audit_log_no_delete"))
    else:
        connection.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"))


def test_verification_finds_an_altered_row(federation, connection):
    federation.send("sn-hospital", "patients_original.csv", destination="fr-research", **QI)
    decided = next(e for e in entries(federation.client) if e["action"] == "transfer.decided")
    disable_append_only(connection)
    connection.execute(
        text("UPDATE audit_log SET details = :d WHERE id = :id"),
        {"d": '{"status": "approved"}', "id": decided["id"]},
    )
    result = federation.client.get("/v1/audit/verify", headers=ADMIN).json()
    assert result["valid"] is False
    assert result["first_invalid_id"] == decided["id"]
    assert "altered" in result["reason"]


def test_verification_finds_a_deleted_row(federation, connection):
    disable_append_only(connection)
    connection.execute(text("DELETE FROM audit_log WHERE id = 2"))
    result = federation.client.get("/v1/audit/verify", headers=ADMIN).json()
    assert result["valid"] is False and result["first_invalid_id"] == 3
    assert "missing" in result["reason"]


def test_postgresql_refuses_to_truncate_the_audit_log(federation, connection):
    if connection.dialect.name != "postgresql":
        pytest.skip("SQLite has no TRUNCATE (its DELETE trigger is tested above)")
    with pytest.raises(DBAPIError, match="append-only"), connection.begin_nested():
        connection.execute(text("TRUNCATE audit_log"))

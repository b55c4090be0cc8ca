"""Named administrators: created, listed and revoked by an administrator; each token
authenticates as its own name, which the audit log and policy versions record."""

import pytest

from tests.broker.conftest import ADMIN, bearer


def create(client, name: str, headers=ADMIN) -> str:
    answer = client.post("/v1/admins", headers=headers, json={"name": name})
    assert answer.status_code == 201, answer.text
    assert answer.json()["active"] is True
    return answer.json()["token"]


def names(client, headers=ADMIN) -> dict[str, bool]:
    answer = client.get("/v1/admins", headers=headers)
    assert answer.status_code == 200, answer.text
    return {row["name"]: row["active"] for row in answer.json()}


def problem(answer, status: int) -> dict:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    return answer.json()


def save_policy(client, headers) -> dict:
    current = client.get("/v1/policies/SN", headers=headers)
    record = current.json()["record"] | {"name": "Senegal, version " + current.headers["ETag"]}
    answer = client.put(
        "/v1/policies/SN",
        headers={**headers, "If-Match": current.headers["ETag"]},
        json=record,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_bootstrap_token_is_an_administrator_named_bootstrap(client):
    assert names(client) == {"bootstrap": True}
    assert save_policy(client, ADMIN)["created_by"] == "admin:bootstrap"


def test_each_administrator_acts_under_its_own_name(client):
    awa = create(client, "awa.diop")
    assert awa.startswith("fba_") and len(awa) > 40
    jean = create(client, "jean-dupont", headers=bearer(awa))
    assert names(client, bearer(jean)) == {"bootstrap": True, "awa.diop": True, "jean-dupont": True}
    assert save_policy(client, bearer(awa))["created_by"] == "admin:awa.diop"
    assert save_policy(client, bearer(jean))["created_by"] == "admin:jean-dupont"
    entries = client.get("/v1/audit", headers=bearer(jean)).json()["items"]
    by_action = [(e["actor"], e["action"], e["subject"]) for e in entries if "admin" in e["actor"]]
    assert by_action == [
        ("admin:bootstrap", "admin.created", "awa.diop"),
        ("admin:awa.diop", "admin.created", "jean-dupont"),
        ("admin:awa.diop", "policy.updated", "SN"),
        ("admin:jean-dupont", "policy.updated", "SN"),
    ]
    listed = client.get("/v1/admins", headers=ADMIN).json()
    assert all("token" not in row for row in listed)
    assert {row["name"]: row["created_by"] for row in listed}["jean-dupont"] == "admin:awa.diop"


def test_a_revoked_token_answers_401(client):
    awa = create(client, "awa.diop")
    answer = client.post("/v1/admins/awa.diop/revoke", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    assert answer.json()["active"] is False
    assert answer.json()["revoked_by"] == "admin:bootstrap"
    detail = problem(client.get("/v1/admins", headers=bearer(awa)), 401)["detail"]
    assert "not an active administrator" in detail
    assert problem(client.get("/v1/policies", headers=bearer(awa)), 401)["type"].endswith(
        "not-authenticated"
    )
    assert names(client) == {"bootstrap": True, "awa.diop": False}
    again = client.post("/v1/admins/awa.diop/revoke", headers=ADMIN)  # changes nothing
    assert again.status_code == 200 and again.json()["revoked_by"] == "admin:bootstrap"
    actions = [e["action"] for e in client.get("/v1/audit", headers=ADMIN).json()["items"]]
    assert actions.count("admin.revoked") == 1


def test_the_bootstrap_token_can_be_retired_by_a_named_administrator(client):
    awa = create(client, "awa.diop")
    answer = client.post("/v1/admins/bootstrap/revoke", headers=bearer(awa))
    assert answer.status_code == 200, answer.text
    detail = problem(client.get("/v1/policies", headers=ADMIN), 401)["detail"]
    assert "revoked" in detail
    assert names(client, bearer(awa)) == {"bootstrap": False, "awa.diop": True}


def test_the_last_active_administrator_cannot_be_revoked(client):
    detail = problem(client.post("/v1/admins/bootstrap/revoke", headers=ADMIN), 409)["detail"]
    assert "last active administrator" in detail
    awa = create(client, "awa.diop")
    assert client.post("/v1/admins/awa.diop/revoke", headers=bearer(awa)).status_code == 200
    problem(client.post("/v1/admins/bootstrap/revoke", headers=ADMIN), 409)
    assert names(client) == {"bootstrap": True, "awa.diop": False}


def test_names_are_never_reused(client):
    create(client, "awa.diop")
    client.post("/v1/admins/awa.diop/revoke", headers=ADMIN)
    problem(client.post("/v1/admins", headers=ADMIN, json={"name": "awa.diop"}), 409)
    problem(client.post("/v1/admins", headers=ADMIN, json={"name": "bootstrap"}), 409)


@pytest.mark.parametrize("name", ["Awa", "a", "admin:x", "-x", "a" * 59, "awa diop"])
def test_a_bad_name_is_a_422(client, name):
    problem(client.post("/v1/admins", headers=ADMIN, json={"name": name}), 422)


def test_members_and_strangers_cannot_manage_administrators(client, federation):
    member = bearer(federation.keys["sn-hospital"])
    problem(client.post("/v1/admins", headers=member, json={"name": "awa.diop"}), 403)
    problem(client.get("/v1/admins", headers=member), 403)
    problem(client.post("/v1/admins/bootstrap/revoke", headers=member), 403)
    problem(client.get("/v1/admins"), 401)
    problem(client.get("/v1/admins", headers=bearer("fba_" + "x" * 43)), 401)
    problem(client.post("/v1/admins/nobody/revoke", headers=ADMIN), 404)


def test_an_administrator_token_is_not_a_member_key(client, federation):
    """Administrators do not send transfers, whatever token they hold."""
    awa = create(client, "awa.diop")
    answer = federation.client.post(
        "/v1/transfers",
        headers=bearer(awa),
        files={"file": ("d.csv", b"a\n1\n", "text/csv")},
        data={"destination": "fr-research", "purpose": "research"},
    )
    problem(answer, 403)

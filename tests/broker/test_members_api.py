"""Member registration, service discovery, suspension."""

from tests.broker.conftest import ADMIN, bearer

NEW = {
    "id": "ke-lab",
    "name": "Nairobi Lab",
    "jurisdiction": "KE",
    "inbox_url": "http://127.0.0.1:8200/inbox",
}


def test_register_shows_the_key_once(client):
    created = client.post("/v1/members", headers=ADMIN, json=NEW)
    assert created.status_code == 201
    key = created.json()["api_key"]
    assert key.startswith("fbk_") and len(key) > 40
    listed = client.get("/v1/members", headers=bearer(key)).json()
    assert [m["id"] for m in listed] == ["ke-lab"]
    assert "api_key" not in listed[0]
    assert client.get("/v1/members/ke-lab", headers=ADMIN).json()["jurisdiction"] == "KE"


def test_duplicate_member_is_409(client):
    client.post("/v1/members", headers=ADMIN, json=NEW)
    answer = client.post("/v1/members", headers=ADMIN, json=NEW)
    assert answer.status_code == 409 and "ke-lab" in answer.json()["detail"]


def test_member_needs_a_policy_for_its_jurisdiction(client):
    answer = client.post("/v1/members", headers=ADMIN, json={**NEW, "jurisdiction": "BR"})
    assert answer.status_code == 422 and "BR" in answer.json()["detail"]


def test_bad_member_fields_are_422(client):
    for change in ({"id": "Bad Id"}, {"inbox_url": "not a url"}, {"status": "active"}):
        answer = client.post("/v1/members", headers=ADMIN, json={**NEW, **change})
        assert answer.status_code == 422, change
        assert answer.headers["content-type"] == "application/problem+json"


def test_only_admins_register_or_suspend(federation):
    member = bearer(federation.keys["sn-hospital"])
    assert federation.client.post("/v1/members", headers=member, json=NEW).status_code == 403
    assert (
        federation.client.post("/v1/members/fr-research/suspend", headers=member).status_code == 403
    )
    assert federation.client.post("/v1/members/nobody/suspend", headers=ADMIN).status_code == 404


def test_members_see_each_other_without_inbox_urls(federation, client):
    """Service discovery is ids, names, jurisdictions, status and health; inbox URLs are the
    broker's, shown to a member for itself only (a member cloud checks it at start)."""
    as_member = client.get("/v1/members", headers=bearer(federation.keys["sn-hospital"])).json()
    others = [m for m in as_member if m["id"] != "sn-hospital"]
    assert others and all(m["inbox_url"] is None and m["health_url"] is None for m in others)
    [itself] = [m for m in as_member if m["id"] == "sn-hospital"]
    assert itself["inbox_url"] == "http://127.0.0.1:9/sn-hospital/inbox"
    assert itself["health_url"] == "http://127.0.0.1:9/sn-hospital/readyz"
    as_admin = client.get("/v1/members", headers=ADMIN).json()
    assert all(m["inbox_url"] for m in as_admin)

"""A member rotates its API key (the old one works for a grace period); an admin revokes all."""

import pytest

from tests.broker.conftest import ADMIN, bearer


def whoami(client, key) -> int:
    return client.get("/v1/members", headers=bearer(key)).status_code


@pytest.fixture
def keys(federation):
    return federation.keys


def test_a_member_rotates_its_key_and_the_old_one_works_until_the_grace_ends(client, keys):
    old = keys["sn-hospital"]
    answer = client.post("/v1/members/sn-hospital/api-key", headers=bearer(old))
    assert answer.status_code == 201, answer.text
    new = answer.json()["api_key"]
    assert new != old and answer.json()["previous_key_valid_until"] is not None
    assert whoami(client, new) == 200
    assert whoami(client, old) == 200  # in its grace period
    # A second rotation ends the first key's grace at once: only the latest previous key lives.
    newest = client.post("/v1/members/sn-hospital/api-key", headers=bearer(new)).json()["api_key"]
    assert (whoami(client, old), whoami(client, new), whoami(client, newest)) == (401, 200, 200)


def test_without_a_grace_period_the_old_key_stops_at_once(client, keys, settings):
    settings.key_grace_seconds = 0
    old = keys["sn-hospital"]
    answer = client.post("/v1/members/sn-hospital/api-key", headers=bearer(old)).json()
    assert answer["previous_key_valid_until"] is None
    assert (whoami(client, old), whoami(client, answer["api_key"])) == (401, 200)


def test_a_member_cannot_rotate_another_members_key(client, keys):
    answer = client.post("/v1/members/fr-research/api-key", headers=bearer(keys["sn-hospital"]))
    assert answer.status_code == 403
    assert answer.headers["content-type"] == "application/problem+json"


def test_an_admin_revokes_every_key_then_issues_a_new_one(client, keys):
    old = keys["sn-hospital"]
    rotated = client.post("/v1/members/sn-hospital/api-key", headers=bearer(old)).json()["api_key"]
    answer = client.post("/v1/members/sn-hospital/api-key/revoke", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    assert (whoami(client, old), whoami(client, rotated)) == (401, 401)
    issued = client.post("/v1/members/sn-hospital/api-key", headers=ADMIN).json()["api_key"]
    assert whoami(client, issued) == 200
    actions = [e["action"] for e in client.get("/v1/audit", headers=ADMIN).json()["items"]]
    assert {"member.key_rotated", "member.keys_revoked"} <= set(actions)


def test_only_admins_revoke(client, keys):
    answer = client.post(
        "/v1/members/sn-hospital/api-key/revoke", headers=bearer(keys["sn-hospital"])
    )
    assert answer.status_code == 403


def test_a_rotated_out_key_makes_ordinary_calls_but_never_rotates_again(client, keys):
    """A thief holding only the old key must not outlive the rotation: in its grace period the
    old key may not mint a key of its own (which would come with no expiry)."""
    old = keys["sn-hospital"]
    current = client.post("/v1/members/sn-hospital/api-key", headers=bearer(old)).json()["api_key"]
    answer = client.post("/v1/members/sn-hospital/api-key", headers=bearer(old))
    assert answer.status_code == 403
    assert answer.headers["content-type"] == "application/problem+json"
    assert "rotated out" in answer.json()["detail"]
    # Nothing changed: the current key is still current, the old one still in its grace period.
    assert (whoami(client, current), whoami(client, old)) == (200, 200)
    # The current key rotates; then the first key is over at once (only one previous key lives).
    newest = client.post("/v1/members/sn-hospital/api-key", headers=bearer(current))
    assert newest.status_code == 201
    assert whoami(client, old) == 401


def test_an_admin_revocation_ends_the_current_and_the_rotated_out_key_at_once(client, keys):
    old = keys["sn-hospital"]
    current = client.post("/v1/members/sn-hospital/api-key", headers=bearer(old)).json()["api_key"]
    assert client.post("/v1/members/sn-hospital/api-key/revoke", headers=ADMIN).status_code == 200
    assert (whoami(client, old), whoami(client, current)) == (401, 401)
    assert client.post("/v1/members/sn-hospital/api-key", headers=bearer(old)).status_code == 401

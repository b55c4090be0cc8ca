"""A thief with a member's rotated-out API key, against a real broker (threat: credentials
that outlive their revocation).

The member rotates its key because it fears the old one leaked. For the grace period the old key
still makes ordinary calls (the member's own services are switching over), but it must never
manage keys: a rotation made with it would mint a key with no expiry, and the thief would
outlive the rotation. An administrator's revocation ends both keys at once.
"""

from __future__ import annotations

import uuid

import pytest

from tests.adversarial.conftest import ADMIN, _running_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker of this module's own: its keys are rotated and revoked here."""
    with _running_broker(tmp_path_factory.mktemp("keys"), key_grace_seconds=3600) as running:
        yield running


def _as(broker, key: str, method: str, path: str):
    return broker.client.request(
        method, f"{broker.url}{path}", headers={"Authorization": f"Bearer {key}"}
    )


def test_a_thief_with_the_rotated_out_key_cannot_mint_a_key_of_its_own(broker):
    member = f"thief-target-{uuid.uuid4().hex[:6]}"
    broker.register(member, "SN", "http://127.0.0.1:9/inbox")
    stolen = broker.keys[member]
    rotated = _as(broker, stolen, "POST", f"/v1/members/{member}/api-key")
    assert rotated.status_code == 201, rotated.text
    current = rotated.json()["api_key"]

    # The thief tries every way a key is managed with the stolen key.
    for method, path in [
        ("POST", f"/v1/members/{member}/api-key"),
        ("POST", f"/v1/members/{member}/api-key/revoke"),
    ]:
        answer = _as(broker, stolen, method, path)
        assert answer.status_code == 403, (path, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert current not in answer.text and stolen not in answer.text

    # What the thief can still do is what the member's own services can: ordinary calls.
    assert _as(broker, stolen, "GET", "/v1/members").status_code == 200
    # The member's current key is untouched, and it alone rotates.
    assert _as(broker, current, "GET", "/v1/members").status_code == 200
    newest = _as(broker, current, "POST", f"/v1/members/{member}/api-key")
    assert newest.status_code == 201
    assert _as(broker, stolen, "GET", "/v1/members").status_code == 401


def test_an_admin_revocation_ends_the_stolen_key_in_its_grace_period(broker):
    member = f"revoked-{uuid.uuid4().hex[:6]}"
    broker.register(member, "SN", "http://127.0.0.1:9/inbox")
    stolen = broker.keys[member]
    current = _as(broker, stolen, "POST", f"/v1/members/{member}/api-key").json()["api_key"]
    answer = broker.client.post(f"{broker.url}/v1/members/{member}/api-key/revoke", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    for key in (stolen, current):
        assert _as(broker, key, "GET", "/v1/members").status_code == 401
        assert _as(broker, key, "POST", f"/v1/members/{member}/api-key").status_code == 401

"""F-SLA records: seeded, versioned on every change, drafts checked without saving; If-Match,
merge patches, diffs and paging."""

import pytest

from broker.policies.schemas import EXAMPLE_RECORD
from tests.broker.conftest import ADMIN, bearer

PROBLEM = "urn:fedbroker:problem:"
MERGE_PATCH = "application/merge-patch+json"


def at(version: int) -> dict[str, str]:
    return {**ADMIN, "If-Match": f'"{version}"'}


def patch(client, jurisdiction, body, version=1, **headers):
    return client.patch(
        f"/v1/policies/{jurisdiction}",
        headers={**at(version), "Content-Type": MERGE_PATCH, **headers},
        json=body,
    )


def current(client, jurisdiction):
    answer = client.get(f"/v1/policies/{jurisdiction}", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_seed_records_are_loaded(client):
    answer = client.get("/v1/policies", headers=ADMIN).json()
    assert {p["jurisdiction"] for p in answer} >= {"SN", "NG", "FR", "KE"}
    sn = current(client, "sn")
    assert sn["version"] == 1 and sn["created_by"] == "seed"
    assert sn["record"]["authority"].startswith("Commission de Protection")


def test_unknown_jurisdiction_is_404(client):
    assert client.get("/v1/policies/ZZ", headers=ADMIN).status_code == 404
    assert client.get("/v1/policies/SN/versions/7", headers=ADMIN).status_code == 404
    assert client.get("/v1/policies/ZZ/versions", headers=ADMIN).status_code == 404


def test_edit_makes_a_new_version_and_keeps_the_old(client):
    record = current(client, "SN")["record"]
    record["cross_border_export"]["min_k"] = 7
    saved = client.put("/v1/policies/SN", headers=at(1), json=record)
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == 2 and saved.headers["etag"] == '"2"'
    assert current(client, "SN")["record"]["cross_border_export"]["min_k"] == 7
    old = client.get("/v1/policies/SN/versions/1", headers=ADMIN).json()
    assert old["record"]["cross_border_export"]["min_k"] == 3
    versions = client.get("/v1/policies/SN/versions", headers=ADMIN).json()
    assert [v["version"] for v in versions["items"]] == [1, 2]
    assert versions["next_after"] is None


def test_unchanged_record_makes_no_version(client):
    record = current(client, "FR")["record"]
    answer = client.put("/v1/policies/FR", headers=at(1), json=record)
    assert answer.status_code == 200 and answer.json()["version"] == 1


def test_new_jurisdiction_starts_at_version_1(client):
    record = {
        **current(client, "FR")["record"],
        "jurisdiction": "EU",
        "name": "European Union",
        "allowed_destinations": ["FR"],
    }
    answer = client.put("/v1/policies/EU", headers=ADMIN, json=record)
    assert answer.status_code == 201 and answer.json()["version"] == 1


def test_stale_if_match_is_412(client):
    record = current(client, "NG")["record"]
    record["allowed_purposes"] = ["treatment"]
    answer = client.put("/v1/policies/NG", headers=at(5), json=record)
    assert answer.status_code == 412
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["type"] == PROBLEM + "version-mismatch"
    assert '"1"' in answer.json()["detail"]
    ok = client.put("/v1/policies/NG", headers=at(1), json=record)
    assert ok.json()["version"] == 2 and ok.headers["etag"] == '"2"'
    again = client.put("/v1/policies/NG", headers=at(1), json={**record, "name": "Naija"})
    assert again.status_code == 412  # version 1 is no longer current
    assert current(client, "NG")["version"] == 2


def test_put_without_if_match_is_428_and_saves_nothing(client):
    record = current(client, "SN")["record"]
    record["cross_border_export"]["min_k"] = 9
    answer = client.put("/v1/policies/SN", headers=ADMIN, json=record)
    assert answer.status_code == 428
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert body["type"] == PROBLEM + "precondition-required"
    assert "If-Match" in body["detail"] and "GET /v1/policies/SN" in body["detail"]
    assert current(client, "SN")["version"] == 1


@pytest.mark.parametrize(
    ("if_match", "status"),
    [('"1"', 200), ("*", 200), ('"7", "1"', 200), ('W/"1"', 412), ('"2"', 412), ("1", 200)],
)
def test_if_match_forms(client, if_match, status):
    record = current(client, "SN")["record"]
    record["name"] = "Sénégal"
    answer = client.put("/v1/policies/SN", headers={**ADMIN, "If-Match": if_match}, json=record)
    assert answer.status_code == status, answer.text


def test_new_jurisdiction_with_if_match_is_412(client):
    record = {**EXAMPLE_RECORD, "jurisdiction": "EU", "name": "European Union"}
    answer = client.put("/v1/policies/EU", headers=at(1), json=record)
    assert answer.status_code == 412 and "no F-SLA record yet" in answer.json()["detail"]


def test_reads_send_etag(client):
    assert client.get("/v1/policies/SN", headers=ADMIN).headers["etag"] == '"1"'
    assert client.get("/v1/policies/SN/versions/1", headers=ADMIN).headers["etag"] == '"1"'
    patch(client, "SN", {"name": "Sénégal"})
    assert client.get("/v1/policies/SN", headers=ADMIN).headers["etag"] == '"2"'
    assert client.get("/v1/policies/SN/versions/1", headers=ADMIN).headers["etag"] == '"1"'


INVALID = [
    ({"cross_border_export": {"min_k": 0}}, "cross_border_export.min_k"),
    ({"cross_border_export": {"max_t": 1.5}}, "cross_border_export.max_t"),
    ({"allowed_destinations": ["france"]}, "allowed_destinations"),
    ({"allowed_purposes": []}, "allowed_purposes"),
    ({"unknown_field": 1}, "unknown_field"),
    ({"domestic_export": {"min_kk": 2}}, "domestic_export.min_kk"),
]


@pytest.mark.parametrize(("change", "field"), INVALID)
def test_invalid_record_names_the_field_and_saves_nothing(client, change, field):
    record = {**current(client, "SN")["record"], **change}
    answer = client.put("/v1/policies/SN", headers=at(1), json=record)
    assert answer.status_code == 422
    assert answer.json()["type"] == PROBLEM + "invalid-policy"
    assert any(e["field"] == field for e in answer.json()["errors"]), answer.json()
    assert current(client, "SN")["version"] == 1


def test_url_and_record_must_agree(client):
    record = current(client, "SN")["record"]
    answer = client.put("/v1/policies/FR", headers=ADMIN, json=record)
    assert answer.status_code == 422 and "URL" in answer.json()["detail"]


def test_draft_check_validates_without_saving(client):
    record = current(client, "SN")["record"]
    record["cross_border_export"]["min_k"] = 10
    record["allowed_purposes"] = ["research"]
    answer = client.post("/v1/policies/SN/check", headers=ADMIN, json=record)
    assert answer.status_code == 200
    body = answer.json()
    assert body["changed_fields"] == ["allowed_purposes", "cross_border_export"]
    assert body["current_version"] == 1
    assert [c["text"] for c in body["changes"]] == [
        'allowed_purposes: ["research", "public_health", "treatment"] -> ["research"]',
        "cross_border_export.min_k: 3 -> 10",
    ]
    assert body["changes"][1] | {"text": None} == {
        "path": "cross_border_export.min_k",
        "old": 3,
        "new": 10,
        "text": None,
    }
    record["cross_border_export"]["min_k"] = -1
    bad = client.post("/v1/policies/SN/check", headers=ADMIN, json=record)
    assert (
        bad.status_code == 422 and bad.json()["errors"][0]["field"] == "cross_border_export.min_k"
    )
    assert current(client, "SN")["version"] == 1


def test_only_admins_edit(federation):
    record = current(federation.client, "SN")["record"]
    answer = federation.client.put(
        "/v1/policies/SN", json=record, headers=bearer(federation.keys["sn-hospital"])
    )
    assert answer.status_code == 403
    assert (
        federation.client.get(
            "/v1/policies/SN", headers=bearer(federation.keys["sn-hospital"])
        ).status_code
        == 200
    )

"""F-SLA records: seeded, versioned on every change, drafts checked without saving."""

import pytest

from tests.broker.conftest import ADMIN, bearer


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
    saved = client.put("/v1/policies/SN", headers=ADMIN, json=record)
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == 2 and saved.headers["etag"] == '"2"'
    assert current(client, "SN")["record"]["cross_border_export"]["min_k"] == 7
    old = client.get("/v1/policies/SN/versions/1", headers=ADMIN).json()
    assert old["record"]["cross_border_export"]["min_k"] == 3
    versions = client.get("/v1/policies/SN/versions", headers=ADMIN).json()
    assert [v["version"] for v in versions] == [1, 2]


def test_unchanged_record_makes_no_version(client):
    record = current(client, "FR")["record"]
    assert client.put("/v1/policies/FR", headers=ADMIN, json=record).json()["version"] == 1


def test_new_jurisdiction_starts_at_version_1(client):
    record = {
        **current(client, "FR")["record"],
        "jurisdiction": "EU",
        "name": "European Union",
        "allowed_destinations": ["FR"],
    }
    answer = client.put("/v1/policies/EU", headers=ADMIN, json=record)
    assert answer.status_code == 201 and answer.json()["version"] == 1


def test_stale_if_match_is_409(client):
    record = current(client, "NG")["record"]
    record["allowed_purposes"] = ["treatment"]
    answer = client.put("/v1/policies/NG", headers={**ADMIN, "If-Match": '"5"'}, json=record)
    assert answer.status_code == 409
    assert answer.json()["type"] == "urn:fedbroker:problem:version-mismatch"
    ok = client.put("/v1/policies/NG", headers={**ADMIN, "If-Match": '"1"'}, json=record)
    assert ok.json()["version"] == 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cross_border_export": {"min_k": 0}}, "cross_border_export.min_k"),
        ({"cross_border_export": {"max_t": 1.5}}, "cross_border_export.max_t"),
        ({"allowed_destinations": ["france"]}, "allowed_destinations"),
        ({"allowed_purposes": []}, "allowed_purposes"),
        ({"unknown_field": 1}, "unknown_field"),
        ({"domestic_export": {"min_kk": 2}}, "domestic_export.min_kk"),
    ],
)
def test_invalid_record_names_the_field_and_saves_nothing(client, change, field):
    record = {**current(client, "SN")["record"], **change}
    answer = client.put("/v1/policies/SN", headers=ADMIN, json=record)
    assert answer.status_code == 422
    assert any(e["field"].endswith(field) for e in answer.json()["errors"]), answer.json()
    assert current(client, "SN")["version"] == 1


def test_url_and_record_must_agree(client):
    record = current(client, "SN")["record"]
    answer = client.put("/v1/policies/FR", headers=ADMIN, json=record)
    assert answer.status_code == 422 and "URL" in answer.json()["detail"]


def test_draft_check_validates_without_saving(client):
    record = current(client, "SN")["record"]
    record["cross_border_export"]["min_k"] = 10
    answer = client.post("/v1/policies/SN/check", headers=ADMIN, json=record)
    assert answer.status_code == 200
    assert answer.json()["changed_fields"] == ["cross_border_export"]
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

"""The dataset catalog through the API: descriptions, versions, measurement, search, JSON-LD."""

import pytest
from pyld import jsonld

from tests.broker.conftest import ADMIN, bearer
from tests.conftest import FIXTURES

DESCRIPTION = {
    "title": "Dakar admissions 2025",
    "description": "One row per admission, with the diagnosis",
    "keywords": ["health", "hospital"],
    "columns": [
        {"name": "NIN", "role": "other"},
        {"name": "Name", "role": "other"},
        {"name": "Age", "role": "quasi_identifier"},
        {"name": "Gender", "role": "quasi_identifier"},
        {"name": "Disease", "role": "sensitive", "description": "At discharge"},
    ],
    "rows": 9,
    "purposes": ["research", "marketing"],
}
DCAT = "http://www.w3.org/ns/dcat#"
ODRL = "http://www.w3.org/ns/odrl/2/"


def publish(federation, member="sn-hospital", **changes):
    answer = federation.client.post(
        "/v1/catalog/datasets",
        headers=bearer(federation.keys[member]),
        json={**DESCRIPTION, **changes},
    )
    assert answer.status_code == 201, answer.text
    return answer


def measure(federation, dataset_id, fixture="patients_original.csv", member="sn-hospital"):
    data = (FIXTURES / fixture).read_bytes() if isinstance(fixture, str) else fixture
    return federation.client.post(
        f"/v1/catalog/datasets/{dataset_id}/measurement",
        headers=bearer(federation.keys[member]),
        files={"file": ("data.csv", data, "text/csv")},
    )


def catalog(federation, member="fr-research", **params):
    answer = federation.client.get(
        "/v1/catalog", headers=bearer(federation.keys[member]), params=params
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/ld+json"
    return answer.json()


def test_publishing_keeps_the_description_and_answers_where_it_is(federation):
    answer = publish(federation)
    entry = answer.json()
    assert answer.headers["location"] == f"/v1/catalog/datasets/{entry['id']}"
    assert answer.headers["etag"] == '"1"'
    assert (entry["provider"], entry["jurisdiction"], entry["version"]) == ("sn-hospital", "SN", 1)
    assert entry["description"]["columns"][4]["description"] == "At discharge"
    assert entry["summary"] is None and not entry["withdrawn"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"columns": []}, "columns"),
        ({"columns": [{"name": "Age"}, {"name": "AGE"}]}, "same name"),
        (
            {"columns": [{"name": "a", "role": "person_key"}, {"name": "b", "role": "person_key"}]},
            "person key",
        ),
        ({"columns": [{"name": "a", "role": "identifier"}]}, "role"),
        ({"keywords": [" "]}, "keywords"),
        ({"title": ""}, "title"),
        ({"format": "xlsx"}, "format"),
        ({"secret": 1}, "secret"),
    ],
)
def test_a_bad_description_is_a_clear_problem_and_stores_nothing(federation, changes, field):
    answer = federation.client.post(
        "/v1/catalog/datasets",
        headers=bearer(federation.keys["sn-hospital"]),
        json={**DESCRIPTION, **changes},
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"
    assert field in answer.text
    assert catalog(federation)["fedbroker:total"] == 0


def test_only_members_publish(federation):
    answer = federation.client.post("/v1/catalog/datasets", headers=ADMIN, json=DESCRIPTION)
    assert answer.status_code == 403


def test_the_broker_measures_the_file_and_keeps_only_figures(federation):
    dataset = publish(federation).json()["id"]
    answer = measure(federation, dataset)
    assert answer.status_code == 200, answer.text
    summary = answer.json()["summary"]
    # patients_original.csv: 9 rows, every NIN, Name, Age and Disease distinct; 5 F and 4 M.
    assert summary["rows"] == 9
    assert (summary["k"], summary["l"], summary["max_prosecutor_risk"]) == (1, 1, 1.0)
    # Disease, declared sensitive, is judged by l (text held by fewer than 20 rows), as a
    # transfer judges it: the identifiers are the ones the decision names.
    assert set(summary["identifiers"]) >= {"NIN", "Name", "Age"}
    assert "Disease" not in summary["identifiers"]
    assert summary["quasi_identifiers"][:2] == ["Age", "Gender"]
    assert set(summary["utility_at_k"]) <= {"2", "3", "5", "10", "20"}
    assert all(0 <= v <= 100 for v in summary["utility_at_k"].values())
    text = answer.text
    for value in ("25580917", "Khady", "Hepatitis"):  # never a value
        assert value not in text


def test_a_file_that_is_not_the_described_one_is_refused(federation):
    dataset = publish(federation, columns=[*DESCRIPTION["columns"], {"name": "zip"}]).json()["id"]
    answer = measure(federation, dataset)
    assert answer.status_code == 422
    assert "missing: zip" in answer.json()["detail"]
    other = measure(federation, dataset, member="fr-research")
    assert other.status_code == 403


def test_revising_makes_a_version_and_if_match_guards_it(federation):
    dataset = publish(federation).json()["id"]
    headers = bearer(federation.keys["sn-hospital"])
    url = f"/v1/catalog/datasets/{dataset}"
    revised = {**DESCRIPTION, "title": "Dakar admissions 2025 (revised)"}
    answer = federation.client.put(url, headers={**headers, "If-Match": '"1"'}, json=revised)
    assert (answer.status_code, answer.json()["version"], answer.headers["etag"]) == (200, 2, '"2"')
    stale = federation.client.put(url, headers={**headers, "If-Match": '"1"'}, json=revised)
    assert stale.status_code == 412
    versions = federation.client.get(f"{url}/versions", headers=headers).json()
    assert [v["description"]["title"] for v in versions] == [
        "Dakar admissions 2025",
        "Dakar admissions 2025 (revised)",
    ]
    first = federation.client.get(url, headers=headers, params={"version": 1}).json()
    assert first["dct:title"] == "Dakar admissions 2025"
    other = federation.client.put(url, headers=bearer(federation.keys["fr-research"]), json=revised)
    assert other.status_code == 403


def test_filters_and_pages(federation):
    first = publish(federation, title="Admissions Dakar", keywords=["hospital"]).json()["id"]
    second = publish(
        federation,
        member="ng-health",
        title="Lagos malaria survey",
        keywords=["malaria"],
        columns=[{"name": "zip", "role": "quasi_identifier"}, {"name": "test"}],
        purposes=["public_health"],
    ).json()["id"]
    ids = lambda document: [d["dct:identifier"] for d in document["dcat:dataset"]]  # noqa: E731
    assert ids(catalog(federation)) == [second, first]  # newest first
    assert ids(catalog(federation, jurisdiction="SN")) == [first]
    assert ids(catalog(federation, purpose="Public_Health")) == [second]
    assert ids(catalog(federation, column="ZIP")) == [second]
    assert ids(catalog(federation, column="zi")) == []  # a whole column name, not a part
    assert ids(catalog(federation, q="malaria LAGOS")) == [second]
    assert ids(catalog(federation, q="100%_")) == []  # taken literally
    assert ids(catalog(federation, provider="sn-hospital")) == [first]
    answer = federation.client.get(
        "/v1/catalog", headers=bearer(federation.keys["fr-research"]), params={"limit": 1}
    )
    page = answer.json()
    assert (ids(page), page["fedbroker:total"]) == ([second], 2)
    assert 'rel="next"' in answer.headers["link"] and "offset=1" in answer.headers["link"]


def test_withdrawn_datasets_and_suspended_providers_leave_the_catalog(federation):
    dataset = publish(federation).json()["id"]
    publish(federation, member="ng-health", title="NG")
    url = f"/v1/catalog/datasets/{dataset}"
    answer = federation.client.delete(url, headers=bearer(federation.keys["sn-hospital"]))
    assert answer.status_code == 204
    again = federation.client.delete(url, headers=bearer(federation.keys["sn-hospital"]))
    assert again.status_code == 204  # withdrawing twice is withdrawing once
    titles = [d["dct:title"] for d in catalog(federation)["dcat:dataset"]]
    assert titles == ["NG"]
    assert (
        federation.client.get(url, headers=bearer(federation.keys["fr-research"])).status_code
        == 404
    )
    kept = federation.client.get(f"{url}/versions", headers=bearer(federation.keys["sn-hospital"]))
    assert kept.status_code == 200 and kept.json()[0]["withdrawn"]
    federation.client.post("/v1/members/ng-health/suspend", headers=ADMIN)
    assert catalog(federation)["dcat:dataset"] == []


def test_each_member_sees_the_offers_its_own_records_allow(federation):
    dataset = publish(federation).json()["id"]
    measure(federation, dataset)
    [fr] = catalog(federation, member="fr-research")["dcat:dataset"]
    [offer] = fr["odrl:hasPolicy"]
    assert offer["fedbroker:offerKind"] == "anonymized"
    duties = offer["odrl:permission"][0]["odrl:duty"][0]["odrl:constraint"]
    # SN exports with k >= 3, l >= 2; FR imports with k >= 3, l >= 2, t <= 0.7 (seed records)
    assert {(c["odrl:leftOperand"]["@id"], c["odrl:rightOperand"]) for c in duties} == {
        ("fedbroker:k", 3),
        ("fedbroker:l", 2),
        ("fedbroker:t", 0.7),
    }
    assert offer["fedbroker:columns"] == ["Age", "Gender", "Disease"]
    assert offer["odrl:prohibition"] == [{"odrl:action": {"@id": "odrl:distribute"}}]
    assert [r["fedbroker:purpose"] for r in fr["fedbroker:refusal"]] == ["marketing"]
    [own] = catalog(federation, member="sn-hospital")["dcat:dataset"]
    assert own["odrl:hasPolicy"] == []  # a provider is offered nothing of its own
    admin = federation.client.get("/v1/catalog", headers=ADMIN).json()["dcat:dataset"][0]
    assert "odrl:hasPolicy" not in admin


def _no_fetching(url, options=None):
    raise AssertionError(f"the catalog made the reader fetch {url}")


def test_the_catalog_expands_as_json_ld_with_dcat_and_odrl_terms_offline(federation):
    dataset = publish(federation).json()["id"]
    measure(federation, dataset)
    document = catalog(federation)
    expanded = jsonld.expand(document, {"documentLoader": _no_fetching})
    flat = jsonld.flatten(document, None, {"documentLoader": _no_fetching})
    types = {t for node in flat for t in node.get("@type", [])}
    assert {f"{DCAT}Catalog", f"{DCAT}Dataset", f"{DCAT}Distribution", f"{ODRL}Offer"} <= types
    [top] = expanded
    [entry] = top[f"{DCAT}dataset"]
    [offer] = entry[f"{ODRL}hasPolicy"]
    [permission] = offer[f"{ODRL}permission"]
    assert permission[f"{ODRL}action"] == [{"@id": f"{ODRL}use"}]
    [purpose] = permission[f"{ODRL}constraint"]
    assert purpose[f"{ODRL}leftOperand"] == [{"@id": f"{ODRL}purpose"}]
    assert purpose[f"{ODRL}rightOperand"] == [{"@value": "research"}]
    duties = {d[f"{ODRL}action"][0]["@id"] for d in permission[f"{ODRL}duty"]}
    assert duties == {f"{ODRL}anonymize"}
    assert offer[f"{ODRL}prohibition"][0][f"{ODRL}action"] == [{"@id": f"{ODRL}distribute"}]
    assert entry["http://purl.org/dc/terms/publisher"] == [
        {"@id": "urn:fedbroker:member:sn-hospital"}
    ]
    # nothing was dropped for want of a term: every key of the document expanded to an IRI
    compact_keys = {k for node in flat for k in node if not k.startswith("@")}
    assert all(k.startswith(("http://", "https://", "urn:")) for k in compact_keys), compact_keys

"""Editing F-SLA records as an admin in /docs does: one problem per mistake from PUT, PATCH and
/check, merge patches (RFC 7396), /check's changes and warnings, diffs and pages of versions."""

import pytest

from broker.policies.schemas import EXAMPLE_RECORD
from tests.broker.conftest import ADMIN
from tests.broker.test_policies_api import INVALID, MERGE_PATCH, PROBLEM, at, current, patch


@pytest.mark.parametrize(("change", "field"), INVALID)
def test_one_mistake_is_one_problem_from_put_patch_and_check(client, change, field):
    """PUT, PATCH and /check answer the same mistake with the same type, field and wording."""
    record = {**current(client, "SN")["record"], **change}
    answers = [
        client.put("/v1/policies/SN", headers=at(1), json=record),
        patch(client, "SN", change),
        client.post("/v1/policies/SN/check", headers=ADMIN, json=record),
    ]
    bodies = [a.json() for a in answers]
    assert [a.status_code for a in answers] == [422, 422, 422]
    assert {b["type"] for b in bodies} == {PROBLEM + "invalid-policy"}
    assert len({b["detail"] for b in bodies}) == 1, bodies
    assert all(b["errors"][0]["field"] == field for b in bodies)
    assert current(client, "SN")["version"] == 1


def test_a_misspelt_field_is_answered_with_the_one_meant(client):
    """From PUT, PATCH and /check alike: the field's place, and the nearest field it has."""
    answer = patch(client, "SN", {"cross_border_export": {"min_kk": 3}})
    assert answer.status_code == 422
    assert answer.json()["errors"][0] == {
        "field": "cross_border_export.min_kk",
        "reason": "not a field here (did you mean 'min_k'?)",
    }
    record = {**current(client, "SN")["record"], "alowed_purposes": ["research"]}
    answer = client.post("/v1/policies/SN/check", headers=ADMIN, json=record)
    assert answer.json()["detail"] == (
        "alowed_purposes: not a field here (did you mean 'allowed_purposes'?)"
    )


def test_pydantic_wording_does_not_leak(client):
    record = {**current(client, "SN")["record"], "allowed_destinations": ["france"]}
    answer = client.post("/v1/policies/SN/check", headers=ADMIN, json=record)
    assert answer.json()["detail"] == (
        "allowed_destinations: 'france' is not a jurisdiction code (e.g. FR, EU) or '*'"
    )
    assert "Value error" not in answer.text


@pytest.mark.parametrize("method", ["PUT", "PATCH", "POST"])
def test_malformed_json_names_line_and_column(client, method):
    url = "/v1/policies/SN/check" if method == "POST" else "/v1/policies/SN"
    media_type = MERGE_PATCH if method == "PATCH" else "application/json"
    body = b'{\n  "name": "Senegal",\n  "allowed_purposes": [research]\n}'
    answer = client.request(
        method, url, headers={**at(1), "Content-Type": media_type}, content=body
    )
    assert answer.status_code == 422
    problem = answer.json()
    assert problem["type"] == PROBLEM + "malformed-json"
    assert problem["detail"] == "The body is not valid JSON: Expecting value at line 3, column 24"


def test_check_of_an_unchanged_record_has_no_changes_and_no_warnings(client):
    record = current(client, "SN")["record"]
    answer = client.post("/v1/policies/SN/check", headers=ADMIN, json=record)
    assert answer.json()["changes"] == [] and answer.json()["warnings"] == []


def warnings_of(client, jurisdiction, **change):
    record = {**current(client, jurisdiction)["record"], **change}
    answer = client.post(f"/v1/policies/{jurisdiction}/check", headers=ADMIN, json=record)
    assert answer.status_code == 200, answer.text
    return [(w["code"], w["path"]) for w in answer.json()["warnings"]], answer.json()


def test_check_warns_of_an_unknown_destination(client):
    found, body = warnings_of(client, "SN", allowed_destinations=["FR", "FRA", "*"])
    assert found == [("unknown-destination", "allowed_destinations[1]")]
    assert "'FRA' has no F-SLA record" in body["warnings"][0]["message"]


def test_check_warns_of_purposes_differing_only_in_case(client):
    found, _ = warnings_of(client, "SN", allowed_purposes=["research", "Research", "treatment"])
    assert found == [("duplicate-purpose", "allowed_purposes[1]")]


def test_check_warns_of_attributes_differing_only_in_case(client):
    record = current(client, "SN")["record"]
    export = {**record["cross_border_export"], "forbidden_attributes": ["NIN", "nin"]}
    imports = {**record["import_rules"], "forbidden_attributes": ["Nin"]}
    found, _ = warnings_of(client, "SN", cross_border_export=export, import_rules=imports)
    assert found == [
        ("duplicate-attribute", "cross_border_export.forbidden_attributes[1]"),
        ("attribute-spelling", "import_rules.forbidden_attributes[0]"),
    ]


def test_check_warns_of_a_destination_with_no_purpose_in_common(client):
    # Neither FR nor NG allows marketing: cross-border, the destination's purposes are checked
    # too, so with marketing alone every transfer SN -> FR or NG would be refused.
    for code in ("FR", "NG"):
        assert "marketing" not in current(client, code)["record"]["allowed_purposes"]
    found, _ = warnings_of(client, "SN", allowed_purposes=["marketing"])
    assert ("no-common-purpose", "allowed_destinations[0]") in found
    assert ("no-common-purpose", "allowed_destinations[1]") in found


def test_check_warns_of_contradicting_rules(client):
    record = current(client, "SN")["record"]
    export = {**record["cross_border_export"], "identifiers_allowed": True, "max_mmaq_index": 0.7}
    domestic = {**record["domestic_export"], "min_k": 5}  # cross-border asks only 3
    found, body = warnings_of(client, "SN", cross_border_export=export, domestic_export=domestic)
    assert found == [
        ("identifiers-never-pass", "cross_border_export.identifiers_allowed"),
        ("domestic-stricter", "domestic_export.min_k"),
    ]
    messages = [w["message"] for w in body["warnings"]]
    assert "max_mmaq_index 0.7 refuses every identifier" in messages[0]
    assert "domestic_export.min_k 5 is stricter than cross_border_export.min_k 3" in messages[1]


def test_check_warns_of_cross_border_rules_that_never_apply(client):
    found, _ = warnings_of(client, "SN", allowed_destinations=[])
    assert found == [("unused-cross-border-rules", "cross_border_export")]


def test_check_of_a_new_jurisdiction_lists_every_field(client):
    record = {**EXAMPLE_RECORD, "jurisdiction": "EU", "name": "European Union"}
    body = client.post("/v1/policies/EU/check", headers=ADMIN, json=record).json()
    assert body["current_version"] is None
    assert body["changes"][0]["text"] == 'jurisdiction: (absent) -> "EU"'
    assert body["changes"][0]["old"] is None


def test_merge_patch_changes_only_what_it_names(client):
    answer = patch(client, "SN", {"cross_border_export": {"min_k": 5}, "name": "Sénégal"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["version"] == 2 and answer.headers["etag"] == '"2"'
    saved = current(client, "SN")
    before = client.get("/v1/policies/SN/versions/1", headers=ADMIN).json()["record"]
    record = saved["record"]
    assert record["cross_border_export"]["min_k"] == 5 and record["name"] == "Sénégal"
    assert record["cross_border_export"]["min_l"] == before["cross_border_export"]["min_l"] == 2
    assert record["import_rules"] == before["import_rules"]
    assert saved["created_by"] == "admin:bootstrap"


def test_merge_patch_null_removes_a_key(client):
    """RFC 7396: null removes the member; the rule goes back to its default (no rule)."""
    answer = patch(client, "SN", {"cross_border_export": {"max_mmaq_index": None, "min_l": None}})
    assert answer.status_code == 200, answer.text
    rules = current(client, "SN")["record"]["cross_border_export"]
    assert rules["max_mmaq_index"] is None and rules["min_l"] is None and rules["min_k"] == 3


def test_merge_patch_null_on_a_required_field_is_an_invalid_record(client):
    answer = patch(client, "SN", {"allowed_purposes": None})
    assert answer.status_code == 422
    assert answer.json()["errors"][0] == {"field": "allowed_purposes", "reason": "Field required"}


def test_merge_patch_replaces_lists_whole(client):
    assert patch(client, "SN", {"allowed_destinations": ["FR"]}).status_code == 200
    assert current(client, "SN")["record"]["allowed_destinations"] == ["FR"]


def test_noop_merge_patch_makes_no_version(client):
    for body in ({}, {"name": "Senegal"}, {"cross_border_export": {"min_k": 3}}):
        answer = patch(client, "SN", body)
        assert answer.status_code == 200 and answer.json()["version"] == 1
        assert answer.headers["etag"] == '"1"'
    assert current(client, "SN")["version"] == 1


def test_merge_patch_needs_if_match_and_refuses_a_stale_one(client):
    no_tag = client.patch(
        "/v1/policies/SN",
        headers={**ADMIN, "Content-Type": MERGE_PATCH},
        json={"name": "Sénégal"},
    )
    assert no_tag.status_code == 428
    assert no_tag.json()["type"] == PROBLEM + "precondition-required"
    stale = patch(client, "SN", {"name": "Sénégal"}, version=3)
    assert stale.status_code == 412 and stale.json()["type"] == PROBLEM + "version-mismatch"
    assert current(client, "SN")["version"] == 1


def test_merge_patch_in_another_media_type_is_415(client):
    answer = client.patch("/v1/policies/SN", headers=at(1), json={"name": "Sénégal"})
    assert answer.status_code == 415
    assert answer.headers["accept-patch"] == MERGE_PATCH
    assert answer.json()["type"] == PROBLEM + "unsupported-media-type"
    assert current(client, "SN")["version"] == 1


def test_merge_patch_that_is_not_an_object_is_an_invalid_record(client):
    answer = patch(client, "SN", ["min_k", 5])
    assert answer.status_code == 422 and answer.json()["type"] == PROBLEM + "invalid-policy"


def test_merge_patch_is_authenticated_before_its_media_type_is_judged(client):
    answer = client.patch("/v1/policies/SN", headers={"If-Match": '"1"'}, json={"name": "X"})
    assert answer.status_code == 401


def test_merge_patch_of_an_unknown_jurisdiction_is_404(client):
    assert patch(client, "ZZ", {"name": "Nowhere"}).status_code == 404


def test_merge_patch_cannot_move_the_record(client):
    answer = patch(client, "SN", {"jurisdiction": "FR"})
    assert answer.status_code == 422 and answer.json()["type"] == PROBLEM + "invalid-policy"


def test_diff_between_versions(client):
    assert patch(client, "SN", {"cross_border_export": {"min_k": 5}}).status_code == 200
    change = {"cross_border_export": {"min_k": 10}, "allowed_purposes": ["research"]}
    assert patch(client, "SN", change, version=2).status_code == 200
    answer = client.get("/v1/policies/SN/versions/1/diff/3", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["jurisdiction"], body["old_version"], body["new_version"]) == ("SN", 1, 3)
    assert [c["text"] for c in body["changes"]] == [
        'allowed_purposes: ["research", "public_health", "treatment"] -> ["research"]',
        "cross_border_export.min_k: 3 -> 10",
    ]
    back = client.get("/v1/policies/sn/versions/3/diff/2", headers=ADMIN).json()
    assert [c["text"] for c in back["changes"]] == [
        'allowed_purposes: ["research"] -> ["research", "public_health", "treatment"]',
        "cross_border_export.min_k: 10 -> 5",
    ]
    same = client.get("/v1/policies/SN/versions/2/diff/2", headers=ADMIN).json()
    assert same["changes"] == []
    assert client.get("/v1/policies/SN/versions/1/diff/9", headers=ADMIN).status_code == 404
    assert client.get("/v1/policies/ZZ/versions/1/diff/2", headers=ADMIN).status_code == 404


def test_versions_are_paged(client):
    for version, k in enumerate((4, 5, 6, 7), start=1):
        answer = patch(client, "SN", {"cross_border_export": {"min_k": k}}, version)
        assert answer.status_code == 200, answer.text
    first = client.get("/v1/policies/SN/versions?limit=2", headers=ADMIN)
    assert [v["version"] for v in first.json()["items"]] == [1, 2]
    assert first.json()["next_after"] == 2
    assert first.headers["link"] == ('</v1/policies/SN/versions?after=2&limit=2>; rel="next"')
    second = client.get("/v1/policies/SN/versions?limit=2&after=2", headers=ADMIN)
    assert [v["version"] for v in second.json()["items"]] == [3, 4]
    last = client.get("/v1/policies/SN/versions?limit=2&after=4", headers=ADMIN)
    assert [v["version"] for v in last.json()["items"]] == [5]
    assert last.json()["next_after"] is None and "link" not in last.headers
    beyond = client.get("/v1/policies/SN/versions?after=5", headers=ADMIN)
    assert beyond.status_code == 200 and beyond.json()["items"] == []


def test_the_example_record_is_the_senegal_seed(client):
    assert current(client, "SN")["record"] == EXAMPLE_RECORD


def without_nulls(value):
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


def problem_examples(operation):
    return {
        status: answer["content"]["application/problem+json"]["example"]
        for status, answer in operation["responses"].items()
        if "application/problem+json" in answer.get("content", {})
    }


def test_openapi_documents_the_editing_operations(client):
    spec = client.get("/openapi.json").json()
    ops = spec["paths"]["/v1/policies/{jurisdiction}"]
    put, patch_op = ops["put"], ops["patch"]
    assert {"412", "422", "428"} <= put["responses"].keys()
    assert {"412", "415", "422", "428"} <= patch_op["responses"].keys()
    assert MERGE_PATCH in patch_op["requestBody"]["content"]
    check = spec["paths"]["/v1/policies/{jurisdiction}/check"]["post"]
    schema = check["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/FSLARecord"}
    example = put["requestBody"]["content"]["application/json"]["examples"]["senegal"]["value"]
    # FastAPI leaves the null members out of examples: a rule not set is absent instead
    assert example == without_nulls(EXAMPLE_RECORD)
    assert "ETag" in ops["get"]["responses"]["200"]["headers"]
    versions = spec["paths"]["/v1/policies/{jurisdiction}/versions"]["get"]
    assert "Link" in versions["responses"]["200"]["headers"]
    shown = problem_examples(put)
    assert shown["422"]["type"] == PROBLEM + "invalid-policy"
    assert shown["428"]["type"] == PROBLEM + "precondition-required"


def test_every_error_status_has_its_own_example(client):
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            shown = problem_examples(operation)
            for status, body in shown.items():
                assert body["status"] == int(status), (method, path, status)
            details = [body["detail"] for body in shown.values()]
            assert len(set(details)) == len(details), (method, path, details)
            assert not any("'zip'" in d for d in details if not path.startswith("/v1/transfers"))


def test_check_warns_of_dis_suda_judged_at_the_default_fraction(client):
    record = client.get("/v1/policies/SN", headers=ADMIN).json()["record"]
    domestic = {**record["domestic_export"], "max_dis_suda": 0.05}
    found, body = warnings_of(client, "SN", domestic_export=domestic)
    assert ("suda-default-fraction", "domestic_export.max_dis_suda") in found
    assert any("as if the data were a 1 % sample" in w["message"] for w in body["warnings"])
    stated = {**domestic, "sampling_fraction": 0.2}
    found, _ = warnings_of(client, "SN", domestic_export=stated)
    assert all(code != "suda-default-fraction" for code, _ in found)

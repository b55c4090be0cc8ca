"""Transfer decisions through the API: the three outcomes, their evidence, and every error."""

import hashlib
import io

import pandas as pd
import pytest
from sqlalchemy import event

from tests.broker.conftest import ADMIN, UPLOAD_LIMIT, bearer
from tests.conftest import FIXTURES

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


def failed(answer) -> set[tuple[str, str, str | None]]:
    return {(r["rule"], r["scope"], r["attribute"]) for r in answer["rules"] if not r["passed"]}


def test_published_table_is_approved_and_queued_for_delivery(federation):
    answer = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", **QI
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "approved" and failed(body) == set()
    assert body["policy_versions"] == {"SN": 1, "FR": 1}
    assert body["delivery"]["status"] == "pending"
    assert body["report"]["quasi_identifiers"]["k"] == 3
    assert body["dataset"]["rows"] == 9 and len(body["dataset"]["sha256"]) == 64
    assert body["remedy"] is None


def test_original_table_requires_anonymization_with_evidence(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert body["status"] == "anonymization_required"
    failures = failed(body)
    assert ("forbidden_attribute", "export", "NIN") in failures
    assert ("no_identifiers", "export", "Name") in failures
    assert ("min_k", "export", "Age, Gender") in failures
    assert ("min_k", "import", "Age, Gender") in failures  # FR's import rules count too
    assert ("max_t", "import", "Disease") in failures
    # Disease is declared sensitive: judged by l and t, never by Mmaq.
    assert not any(
        r["attribute"] == "Disease" and r["rule"] in ("no_identifiers", "max_mmaq_index")
        for r in body["rules"]
    )
    k_rule = next(r for r in body["rules"] if r["rule"] == "min_k" and r["scope"] == "export")
    assert (k_rule["measured"], k_rule["threshold"]) == (1, 3)
    steps = body["remedy"]["steps"]
    assert {"column": "NIN", "method": "drop"}.items() <= steps[0].items()
    assert any(s["method"] == "mondrian" and s["parameters"]["k"] == 3 for s in steps)
    assert body["delivery"]["status"] == "not_applicable"


@pytest.mark.parametrize(
    ("source", "destination", "purpose", "rule"),
    [
        ("sn-hospital", "ng-health", "marketing", "purpose_allowed"),
        ("fr-research", "sn-hospital", "treatment", "purpose_allowed"),  # FR exports no treatment
        ("sn-hospital", "nobody", "research", "destination_known"),
        ("sn-hospital", "sn-hospital", "research", "destination_not_source"),
    ],
)
def test_rules_anonymization_cannot_fix_reject(federation, source, destination, purpose, rule):
    body = federation.send(
        source, "patients_published.csv", destination=destination, purpose=purpose, **QI
    ).json()
    assert body["status"] == "rejected", body
    assert rule in {r[0] for r in failed(body)}


def test_destination_not_allowed_by_source_is_rejected(federation):
    federation.client.post(
        "/v1/members",
        headers=ADMIN,
        json={
            "id": "ke-lab",
            "name": "KE",
            "jurisdiction": "KE",
            "inbox_url": "http://127.0.0.1:9/ke",
        },
    )
    body = federation.send(
        "sn-hospital", "patients_published.csv", destination="ke-lab", **QI
    ).json()
    assert body["status"] == "rejected"
    assert ("destination_allowed", "export", None) in failed(body)


def test_suspended_destination_is_rejected(federation):
    federation.client.post("/v1/members/fr-research/suspend", headers=ADMIN)
    body = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", **QI
    ).json()
    assert body["status"] == "rejected"
    assert ("destination_active", "federation", None) in failed(body)


def test_domestic_transfer_follows_domestic_rules(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="sn-lab", **QI
    ).json()
    assert body["status"] == "approved"  # SN allows identifiers at home
    assert body["policy_versions"] == {"SN": 1}


def test_decision_names_the_policy_version_it_used(federation):
    client = federation.client
    record = client.get("/v1/policies/FR", headers=ADMIN).json()["record"]
    record["import_rules"]["min_k"] = 4
    client.put("/v1/policies/FR", headers={**ADMIN, "If-Match": '"1"'}, json=record)
    body = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", **QI
    ).json()
    assert body["policy_versions"] == {"SN": 1, "FR": 2}
    assert body["status"] == "anonymization_required"
    assert ("min_k", "import", "Age, Gender") in failed(body)  # the stricter rule wins


def test_quasi_identifiers_are_inferred_when_not_declared(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", sensitive="Disease"
    ).json()
    assert body["quasi_identifiers_inferred"] is True
    assert body["quasi_identifiers"] == ["Gender"]  # the only quasi_identifier-class attribute


def test_dry_run_stores_nothing(federation):
    body = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", dry_run="true", **QI
    ).json()
    assert body["id"] is not None and body["dry_run"] is True and body["status"] == "approved"
    listed = federation.client.get("/v1/transfers", headers=ADMIN).json()
    assert listed["total"] == 0


def test_idempotency_key_replays_and_refuses_reuse(federation):
    key = {"Idempotency-Key": "order-42"}
    first = federation.send(
        "sn-hospital", "patients_published.csv", headers=key, destination="fr-research", **QI
    )
    again = federation.send(
        "sn-hospital", "patients_published.csv", headers=key, destination="fr-research", **QI
    )
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"
    other = federation.send(
        "sn-hospital", "patients_original.csv", headers=key, destination="fr-research", **QI
    )
    assert other.status_code == 409
    assert other.json()["type"] == "urn:fedbroker:problem:idempotency-key-reused"
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 1


@pytest.mark.parametrize(
    ("data", "filename", "form", "message"),
    [
        (b"a,b\n1,2\n3\n", "x.csv", {}, "ragged rows"),
        (b"", "x.csv", {}, "empty"),
        (b"Age,Gender\n", "x.csv", {}, "no data rows"),
        (b"\x00garbage", "x.parquet", {}, "not a Parquet file"),
        (b"Age,Gender\n30,F\n", "x.csv", {"quasi_identifiers": "Age,Zip"}, "'Zip'"),
        (
            b"Age,Gender\n30,F\n",
            "x.csv",
            {"quasi_identifiers": "Age", "sensitive": "Age"},
            "both quasi-identifier and sensitive",
        ),
    ],
)
def test_malformed_upload_is_422_and_stores_nothing(
    federation, settings, data, filename, form, message
):
    answer = federation.send(
        "sn-hospital", data, filename=filename, destination="fr-research", **form
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"
    assert message in answer.json()["detail"]
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0
    assert federation.client.get("/v1/audit/verify", headers=ADMIN).json()["valid"]
    assert not list(settings.spool_dir.iterdir())  # the upload's copy went with the request


def test_an_upload_is_copied_to_the_spool_and_removed_after_the_decision(federation, settings):
    data = (FIXTURES / "patients_published.csv").read_bytes()
    answer = federation.send("sn-hospital", data, destination="fr-research")
    assert answer.status_code == 200, answer.text
    assert answer.json()["dataset"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert answer.json()["dataset"]["size_bytes"] == len(data)
    assert not list(settings.spool_dir.iterdir())


def test_missing_form_fields_and_bad_anonymize_are_422(federation):
    answer = federation.send(
        "sn-hospital", "patients_published.csv", anonymize="maybe", destination="fr-research"
    )
    assert answer.status_code == 422 and answer.json()["errors"][0]["field"].endswith("anonymize")
    answer = federation.client.post(
        "/v1/transfers",
        data={"destination": "fr-research"},
        headers=bearer(federation.keys["sn-hospital"]),
    )
    assert answer.status_code == 422


def test_parquet_and_json_uploads(federation):
    frame = pd.read_csv(io.StringIO((FIXTURES / "patients_published.csv").read_text()), dtype=str)
    parquet = io.BytesIO()
    frame.to_parquet(parquet)
    for data, name in (
        (parquet.getvalue(), "t.parquet"),
        (frame.to_json(orient="records").encode(), "t.json"),
    ):
        body = federation.send(
            "sn-hospital", data, filename=name, destination="fr-research", **QI
        ).json()
        assert body["status"] == "approved", body
        assert body["dataset"]["format"] == name.split(".")[1]


def test_admin_cannot_send_and_members_see_only_their_transfers(federation):
    client = federation.client
    assert (
        federation.send(
            "sn-hospital", "patients_published.csv", destination="fr-research", **QI
        ).status_code
        == 200
    )
    admin_send = client.post(
        "/v1/transfers",
        headers=ADMIN,
        data={"destination": "x", "purpose": "research"},
        files={"file": ("a.csv", b"a\n1\n")},
    )
    assert admin_send.status_code == 403
    transfer_id = client.get("/v1/transfers", headers=ADMIN).json()["items"][0]["id"]
    for owner in ("sn-hospital", "fr-research"):
        assert (
            client.get(
                f"/v1/transfers/{transfer_id}", headers=bearer(federation.keys[owner])
            ).status_code
            == 200
        )
    outsider = client.get(
        f"/v1/transfers/{transfer_id}", headers=bearer(federation.keys["ng-health"])
    )
    assert outsider.status_code == 404
    assert (
        client.get("/v1/transfers", headers=bearer(federation.keys["ng-health"])).json()["total"]
        == 0
    )
    assert client.get("/v1/transfers/nope", headers=ADMIN).status_code == 404


def test_paging_and_status_filter(federation):
    for fixture in ("patients_published.csv", "patients_original.csv", "patients_published.csv"):
        federation.send("sn-hospital", fixture, destination="fr-research", **QI)
    client = federation.client
    page = client.get("/v1/transfers?limit=2", headers=ADMIN).json()
    assert page["total"] == 3 and len(page["items"]) == 2
    rest = client.get("/v1/transfers?limit=2&offset=2", headers=ADMIN).json()
    assert len(rest["items"]) == 1
    ids = {t["id"] for t in page["items"]} | {t["id"] for t in rest["items"]}
    assert len(ids) == 3
    approved = client.get("/v1/transfers?status=approved", headers=ADMIN).json()
    assert approved["total"] == 2
    assert client.get("/v1/transfers?limit=0", headers=ADMIN).status_code == 422


def test_upload_over_the_limit_is_413_with_or_without_content_length(federation):
    big = b"a,b\n" + b"1,2\n" * (UPLOAD_LIMIT // 4 + 10)
    answer = federation.send("sn-hospital", big, destination="fr-research")
    assert answer.status_code == 413
    assert answer.headers["content-type"] == "application/problem+json"

    def chunks():
        yield b"x" * (UPLOAD_LIMIT // 2)
        yield b"x" * (UPLOAD_LIMIT // 2 + 100)

    streamed = federation.client.post(
        "/v1/transfers",
        content=chunks(),
        headers={
            **bearer(federation.keys["sn-hospital"]),
            "Content-Type": "multipart/form-data; boundary=zzz",
        },
    )
    assert streamed.status_code == 413
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0


def test_analyze_endpoint_gives_the_report_alone(federation):
    answer = federation.client.post(
        "/v1/analyze",
        headers=bearer(federation.keys["ng-health"]),
        files={"file": ("t.csv", (FIXTURES / "patients_original.csv").read_bytes())},
        data={"quasi_identifiers": "Age,Gender", "sensitive": "Disease"},
    )
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["quasi_identifiers"]["k"] == 1
    assert {a["name"]: a["class"] for a in report["attributes"]}["NIN"] == "identifier"
    bad = federation.client.post(
        "/v1/analyze",
        headers=ADMIN,
        files={"file": ("t.csv", b"a\n1\n")},
        data={"quasi_identifiers": "zip"},
    )
    assert bad.status_code == 422 and "'zip'" in bad.json()["detail"]
    assert "population" not in report
    sampled = federation.client.post(
        "/v1/analyze",
        headers=ADMIN,
        files={"file": ("t.csv", (FIXTURES / "patients_original.csv").read_bytes())},
        data={"quasi_identifiers": "Age,Gender", "sampling_fraction": "0.1"},
    )
    assert sampled.status_code == 200, sampled.text
    population = sampled.json()["population"]
    assert population["sampling_fraction"] == 0.1
    assert population["uniqueness"]["dankar_model"] in ("pitman", "zayatz", "dankar")
    outside = federation.client.post(
        "/v1/analyze",
        headers=ADMIN,
        files={"file": ("t.csv", b"a\n1\n")},
        data={"quasi_identifiers": "a", "sampling_fraction": "1.5"},
    )
    assert outside.status_code == 422


def test_remedy_is_verified_on_the_data(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    remedy = body["remedy"]
    assert body["status"] == "anonymization_required"
    assert remedy["verified"] is True and remedy.get("applied") is not True
    assert [(s["column"], s["method"]) for s in remedy["steps"]] == [
        ("NIN", "drop"),
        ("Name", "drop"),
        (None, "mondrian"),
    ]
    assert remedy["after"]["k"] >= 3
    assert 0 < remedy["information_loss"]["utility_percent"] < 100
    assert "anonymize=auto" in remedy["note"]


def test_auto_anonymization_approves_the_anonymized_data(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", anonymize="auto", **QI
    ).json()
    assert body["status"] == "approved", body
    assert body["remedy"]["applied"] is True
    assert body["dataset"]["anonymized"] is True
    assert body["dataset"]["delivered_columns"] == 3  # NIN and Name dropped
    # The report is that of the data that leaves; the one of the upload is kept as "before".
    assert body["report"]["quasi_identifiers"]["k"] >= 3
    assert body["remedy"]["before"]["report"]["quasi_identifiers"]["k"] == 1
    assert all(rule["passed"] for rule in body["rules"])
    assert body["delivery"]["status"] == "pending"


def test_auto_anonymization_needs_every_policy_to_allow_it(federation):
    # NG's import rules do not let the broker anonymize.
    body = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="ng-health",
        purpose="treatment",
        anonymize="auto",
        **QI,
    ).json()
    assert body["status"] == "anonymization_required"
    assert body["remedy"]["verified"] is True
    assert "do not all allow" in body["remedy"]["note"]
    assert body["delivery"]["status"] == "not_applicable"


def test_no_verified_remedy_means_rejected(federation):
    tiny = b"Age,Gender,Disease\n30,F,flu\n40,M,hiv\n"  # k = 3 is impossible on 2 rows
    body = federation.send("sn-hospital", tiny, destination="fr-research", **QI).json()
    assert body["status"] == "rejected"
    rule = next(r for r in body["rules"] if r["rule"] == "remedy_found")
    assert not rule["passed"] and "rows" in rule["detail"]
    assert body["remedy"]["verified"] is False


def test_declaring_a_harmless_quasi_identifier_cannot_narrow_the_check(federation):
    # Age + Zip single out every row; the sender declares only Gender.
    rows = ["Age,Zip,Gender,Disease"] + [
        f"{20 + i % 20},{57000 + i // 20},{'FM'[i % 2]},{['flu', 'hiv', 'cold'][i % 3]}"
        for i in range(40)
    ]
    body = federation.send(
        "sn-hospital",
        "\n".join(rows).encode(),
        destination="fr-research",
        quasi_identifiers="Gender",
        sensitive="Disease",
    ).json()
    assert body["status"] != "approved"
    assert body["quasi_identifiers"][0] == "Gender"
    assert {"Age", "Zip"} <= set(body["quasi_identifiers"])
    assert body["quasi_identifiers_inferred"] is True


@pytest.mark.parametrize("header", ["NIN ", " nin", "ＮＩＮ"])
def test_forbidden_attribute_is_found_whatever_its_spacing_case_or_width(federation, header):
    data = (FIXTURES / "patients_published.csv").read_text().splitlines()
    data[0] = f"{header},{data[0]}"
    data[1:] = [f"{i}*,{line}" for i, line in enumerate(data[1:])]
    body = federation.send(
        "sn-hospital", "\n".join(data).encode(), destination="fr-research", **QI
    ).json()
    assert ("forbidden_attribute", "export", header) in failed(body)


def test_a_member_registered_later_does_not_see_transfers_to_its_id(federation):
    body = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-later", **QI
    ).json()
    assert body["status"] == "rejected"
    created = federation.client.post(
        "/v1/members",
        headers=ADMIN,
        json={
            "id": "fr-later",
            "name": "late",
            "jurisdiction": "FR",
            "inbox_url": "http://127.0.0.1:9/late",
        },
    )
    late = bearer(created.json()["api_key"])
    assert federation.client.get(f"/v1/transfers/{body['id']}", headers=late).status_code == 404
    assert federation.client.get("/v1/transfers", headers=late).json()["total"] == 0
    after = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-later", **QI
    ).json()
    assert federation.client.get(f"/v1/transfers/{after['id']}", headers=late).status_code == 200


def test_a_decision_reads_its_parties_once_and_reads_nothing_back(federation, connection):
    """One statement reads both members with their current policies; once recorded, the
    answer is the transfer as written, not read back."""
    statements = []

    def seen(_connection, _cursor, statement, *_args):
        statements.append(" ".join(statement.split()).lower())

    event.listen(connection, "before_cursor_execute", seen)
    try:
        answer = federation.send(
            "sn-hospital", "patients_published.csv", destination="fr-research", **QI
        )
    finally:
        event.remove(connection, "before_cursor_execute", seen)
    assert answer.status_code == 200 and answer.json()["delivery"]["status"] == "pending"
    reads = [s for s in statements if s.startswith("select") and "from members" in s]
    assert len(reads) == 2  # the caller's key, then both parties with their policies
    assert "policy_versions" in reads[1]
    assert not any(s.startswith("select policy_versions.") for s in statements)
    inserted = next(i for i, s in enumerate(statements) if s.startswith("insert into transfers"))
    assert not any("from transfers" in s for s in statements[inserted:])


def test_empty_optional_form_fields_are_as_if_not_sent(federation):
    """What a form sends when a field is left empty: no quasi-identifiers, sensitive
    attributes, person key or location named, the same decision as without them."""
    empty = {"quasi_identifiers": "", "sensitive": " ", "person_key": "", "location": ""}
    with_empty = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", dry_run="true", **empty
    )
    without = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", dry_run="true"
    )
    assert with_empty.status_code == without.status_code == 200, with_empty.text
    keep = ("status", "quasi_identifiers", "sensitive", "rules")
    assert {k: with_empty.json()[k] for k in keep} == {k: without.json()[k] for k in keep}

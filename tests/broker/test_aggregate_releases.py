"""Aggregate releases through the API (SQLite and PostgreSQL): a transfer of kind aggregate,
its budget, its refusals, its mistakes (which spend nothing) and its delivery."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from tests.broker.conftest import ADMIN, bearer, drain

COUNTS = [
    {"type": "count"},
    {"type": "count_by", "columns": ["sex"], "keys": {"sex": ["F", "M"]}},
    {"type": "mean", "column": "age", "bounds": [0, 100]},
]


def people(rows: int = 300, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], rows),
            "region": rng.choice(["Dakar", "Thies", "Kaolack"], rows),
            "age": rng.integers(18, 90, rows),
        }
    )


def csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def release(federation, data=None, queries=COUNTS, epsilon="0.5", to="fr-research", **form):
    data = csv(people()) if data is None else data
    form.setdefault("kind", "aggregate")
    return federation.send(
        "sn-hospital",
        data,
        destination=to,
        queries=json.dumps(queries) if not isinstance(queries, str) else queries,
        epsilon=epsilon,
        **form,
    )


def failed(body):
    return [(r["rule"], r["jurisdiction"]) for r in body["rules"] if not r["passed"]]


def test_an_approved_release_answers_every_query_with_its_accuracy(federation):
    answer = release(federation)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["status"], body["kind"]) == ("approved", "aggregate")
    aggregate = body["aggregate"]
    assert (aggregate["epsilon"], aggregate["spent"], aggregate["released"]) == ("0.5", True, True)
    count = aggregate["queries"][0]
    assert count["mechanism"].startswith("Laplace") and count["epsilon"] == "1/6 (about 0.1667)"
    assert [q["query"]["type"] for q in aggregate["queries"]] == ["count", "count_by", "mean"]
    counted, by_sex, averaged = aggregate["answers"]
    assert abs(counted["count"] - 300) <= 3 * count["accuracy"]["half_width"]
    assert [cell["key"] for cell in by_sex["cells"]] == [["F"], ["M"]]
    assert averaged["interval"] is not None and 18 <= averaged["mean"] <= 90
    assert body["delivery"]["status"] == "pending"
    assert body["summary"][0]["do"].startswith("nothing: every rule passes")
    assert body["report"] is None and body["dataset"]["rows"] == 300


def test_the_budget_is_spent_release_by_release_then_refused_with_what_remains(federation):
    data = csv(people())
    # FR (import) allows epsilon 2 per dataset and destination a year; SN (export) 3
    assert release(federation, data, epsilon="1").json()["status"] == "approved"
    assert release(federation, data, epsilon="0.6").json()["status"] == "approved"
    refused = release(federation, data, epsilon="0.5").json()
    assert refused["status"] == "rejected"
    assert failed(refused) == [("epsilon_budget", "FR")]
    [rule] = [r for r in refused["rules"] if r["rule"] == "epsilon_budget" and not r["passed"]]
    assert "0.4 remains" in rule["detail"] and "nothing spent" in rule["detail"]
    assert refused["aggregate"]["spent"] is False and refused["aggregate"]["released"] is False
    assert refused["aggregate"]["answers"] is None and refused["aggregate"]["queries"]
    assert refused["delivery"]["status"] == "not_applicable"
    assert refused["summary"][0]["rules"] == ["epsilon_budget"]
    # exactly what remains is allowed (0.4 in exact arithmetic: 1 + 0.6 + 0.4 = 2)
    assert release(federation, data, epsilon="0.4").json()["status"] == "approved"


def test_the_same_table_reordered_or_as_json_meets_the_budget_it_spent(federation):
    frame = people()
    first = release(federation, csv(frame), epsilon="1").json()
    shuffled = frame.sample(frac=1, random_state=3)[["age", "region", "sex"]]
    second = release(federation, csv(shuffled), epsilon="1").json()
    assert (first["status"], second["status"]) == ("approved", "approved")
    assert first["aggregate"]["dataset_key"] == second["aggregate"]["dataset_key"]
    as_json = frame.astype(str).to_json(orient="records").encode()
    third = release(federation, as_json, epsilon="0.5", filename="data.json").json()
    assert failed(third) == [("epsilon_budget", "FR")]


def test_another_dataset_has_its_own_budget_and_the_source_one_bounds_them_all(federation):
    for seed in range(1, 6):  # five datasets of 2 each: SN's 10 per source and destination
        data = csv(people(seed=seed))
        assert release(federation, data, epsilon="1").json()["status"] == "approved"
        assert release(federation, data, epsilon="1").json()["status"] == "approved"
    refused = release(federation, csv(people(seed=9)), epsilon="0.1").json()
    assert failed(refused) == [("source_epsilon_budget", "SN")]


def test_epsilon_above_the_release_cap_is_refused_and_spends_nothing(federation):
    body = release(federation, epsilon="1.5").json()
    assert body["status"] == "rejected"
    assert failed(body) == [("max_epsilon_per_release", "SN"), ("max_epsilon_per_release", "FR")]
    assert release(federation, epsilon="1").json()["status"] == "approved"
    assert release(federation, epsilon="1").json()["status"] == "approved"  # 2: nothing was spent


def test_a_destination_whose_rules_do_not_allow_aggregates_is_refused(federation):
    body = release(federation, to="ng-health").json()
    assert body["status"] == "rejected"
    assert failed(body) == [("aggregate_allowed", "NG")]


@pytest.mark.parametrize(
    ("form", "status", "problem", "message"),
    [
        ({"epsilon": ""}, 422, "invalid-query", "needs `epsilon`"),
        ({"epsilon": "0"}, 422, "invalid-query", "epsilon must be above 0"),
        ({"epsilon": "-1"}, 422, "invalid-query", "epsilon must be above 0"),
        ({"epsilon": "lots"}, 422, "invalid-query", "is not a number"),
        ({"delta": "1"}, 422, "invalid-query", "delta must be"),
        ({"queries": "[]"}, 422, "invalid-query", "no query"),
        ({"queries": "{"}, 422, "invalid-query", "not JSON"),
        (
            {"queries": [{"type": "sum", "column": "age"}]},
            422,
            "invalid-query",
            "bounds are required for a sum",
        ),
        (
            {"queries": [{"type": "mean", "column": "agee", "bounds": [0, 1]}]},
            422,
            "unknown-column",
            "'agee', which is not a column",
        ),
        (
            {"queries": [{"type": "sum", "column": "region", "bounds": [0, 1]}]},
            422,
            "invalid-query",
            "needs numbers",
        ),
        (
            {"queries": [{"type": "count_by", "columns": ["region"]}]},
            422,
            "invalid-query",
            "needs a delta above 0",
        ),
        ({"data": b"sex,region,age\n"}, 422, "invalid-dataset", "no data rows"),
        ({"person_key": "patient"}, 422, "unknown-column", "Person key 'patient'"),
        ({"person_key": "sex"}, 422, "invalid-query", "reads the person key 'sex'"),
        (
            {"queries": json.dumps([{"type": "count", "contributions": 101}])},
            422,
            "invalid-query",
            "'contributions'",
        ),
    ],
)
def test_mistakes_are_clear_problems_and_spend_nothing(federation, form, status, problem, message):
    answer = release(federation, **form)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert body["type"] == f"urn:fedbroker:problem:{problem}"
    assert message in body["detail"]
    # nothing was spent: the whole budget of 2 is still there
    assert release(federation, epsilon="1").json()["status"] == "approved"
    assert release(federation, epsilon="1").json()["status"] == "approved"


def test_a_dry_run_shows_cost_and_accuracy_and_never_an_answer(federation):
    body = release(federation, epsilon="1", dry_run="true").json()
    assert body["status"] == "approved" and body["dry_run"] is True
    aggregate = body["aggregate"]
    assert aggregate["spent"] is False and aggregate["released"] is False
    assert aggregate["answers"] is None
    assert all(q["accuracy"]["meaning"] for q in aggregate["queries"])
    assert federation.client.get(f"/v1/transfers/{body['id']}", headers=ADMIN).status_code == 404
    assert release(federation, epsilon="1").json()["status"] == "approved"
    assert release(federation, epsilon="1").json()["status"] == "approved"


def test_an_idempotency_key_replays_the_release_without_spending_again(federation):
    key = {"Idempotency-Key": "release-1"}
    first = release(federation, epsilon="1", headers=key)
    again = release(federation, epsilon="1", headers=key)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["aggregate"] == first.json()["aggregate"]
    other = release(federation, epsilon="0.5", headers=key)
    assert other.status_code == 409
    assert release(federation, epsilon="1").json()["status"] == "approved"


def test_the_destination_receives_the_answers_signed_in_its_inbox(federation, inbox):
    federation.add_lab(inbox.url)
    body = release(federation, to="fr-lab").json()
    assert body["status"] == "approved"
    drain(federation)
    [(headers, payload)] = inbox.received
    assert headers["content-type"] == "application/json"
    assert headers["x-fedbroker-filename"] == f"transfer-{body['id']}.aggregate.json"
    assert "signature" in headers and "signature-input" in headers
    document = json.loads(payload)
    assert document["kind"] == "aggregate" and document["epsilon"] == "0.5"
    assert [a["result"] for a in document["answers"]] == body["aggregate"]["answers"]
    assert [{k: v for k, v in a.items() if k != "result"} for a in document["answers"]] == body[
        "aggregate"
    ]["queries"]
    assert "dataset_key" not in json.dumps(document) and "300" not in headers.values()
    seen = federation.client.get(
        f"/v1/transfers/{body['id']}", headers=bearer(federation.keys["fr-lab"])
    ).json()
    assert seen["aggregate"]["answers"] == body["aggregate"]["answers"]
    assert seen["aggregate"]["dataset_key"] is None and seen["dataset"]["rows"] == 0


def test_the_decision_and_its_spend_are_audited(federation):
    body = release(federation, epsilon="0.25").json()
    entries = federation.client.get("/v1/audit", headers=ADMIN, params={"limit": 100}).json()
    [entry] = [e for e in entries["items"] if e["subject"] == body["id"]]
    details = entry["details"]
    assert (details["kind"], details["epsilon_spent"], details["status"]) == (
        "aggregate",
        "1/4",
        "approved",
    )
    assert details["dataset_key"] == body["aggregate"]["dataset_key"]


def test_a_microdata_transfer_is_unchanged_by_the_new_fields(federation):
    frame = pd.read_csv(io.StringIO(csv(people()).decode()))
    body = federation.send("sn-hospital", csv(frame), destination="fr-research").json()
    assert body["kind"] == "microdata" and body["aggregate"] is None


def test_a_policy_replay_names_aggregate_releases_as_not_replayed(federation):
    release(federation, epsilon="0.5")
    seed = federation.client.get("/v1/policies/SN", headers=ADMIN).json()["record"]
    replayed = federation.client.post("/v1/policies/SN/replay", headers=ADMIN, json=seed).json()
    assert replayed["not_replayable"] == 1
    [item] = replayed["items"]
    assert "aggregate release" in item["note"]


def test_an_aggregate_release_names_no_agreement(federation):
    answer = release(federation, agreement_id="3f2b9c1e-8a4d-4f6b-9e1a-2c7d5b8e9f10")
    assert answer.status_code == 422
    assert "send it without agreement_id" in answer.json()["detail"]

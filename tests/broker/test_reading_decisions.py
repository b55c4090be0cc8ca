"""A decision as the member cloud reads it, through the real app: the summary, each remedy
step's reason, the utility floor, the hint on `sensitive`, a fetchable dry run, the format that
came in, and the unknown-column error."""

from __future__ import annotations

import hashlib
import io
import json
import time

import pandas as pd
import pytest
from sqlalchemy.orm import Session

from broker.config import Settings
from broker.datasets import MEDIA_TYPES
from broker.delivery.models import Delivery
from broker.transfers import dry_runs
from tests.broker.conftest import ADMIN, bearer
from tests.conftest import FIXTURES

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}
PROBLEM = "application/problem+json"


def edit_policy(client, jurisdiction: str, change) -> None:
    answer = client.get(f"/v1/policies/{jurisdiction}", headers=ADMIN).json()
    record = answer["record"]
    change(record)
    saved = client.put(
        f"/v1/policies/{jurisdiction}",
        headers={**ADMIN, "If-Match": f'"{answer["version"]}"'},
        json=record,
    )
    assert saved.status_code == 200, saved.text


def raise_min_k_to_5(client) -> None:
    def change(record):
        record["cross_border_export"]["min_k"] = 5

    edit_policy(client, "SN", change)


# --- the summary and the reasons ------------------------------------------------------------


def test_the_paper_table_answer_leads_with_three_problems(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert list(body)[:3] == ["id", "status", "summary"]
    assert sum(not r["passed"] for r in body["rules"]) == 15
    summary = body["summary"]
    assert [entry["attributes"] for entry in summary if entry["kind"] == "problem"] == [
        ["NIN"],
        ["Name"],
        ["Age", "Gender", "Disease"],
    ]
    # SN and FR both allow statistics of the data to leave instead (kind=aggregate)
    [note] = [entry for entry in summary if entry["kind"] == "note"]
    assert note["rules"] == ["aggregate_release_possible"]
    assert "at most epsilon 1 and delta 1e-06" in note["problem"] and "kind=aggregate" in note["do"]
    assert summary[0]["do"].startswith("drop column NIN: it identifies people")
    assert summary[2]["jurisdictions"] == ["SN (export)", "FR (import)"]
    assert summary[2]["do"].startswith("generalize Age and Gender (k-anonymize them with k = ")
    assert summary[2]["do"].endswith("or send anonymize=auto")


def test_every_remedy_step_says_why(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    steps = {(s["column"], s["method"]): s["reason"] for s in body["remedy"]["steps"]}
    assert "SN (export) forbids the attribute NIN" in steps[("NIN", "drop")]
    assert "Name identifies people (9 distinct values in 9 rows)" in steps[("Name", "drop")]
    mondrian = steps[(None, "mondrian")]
    assert mondrian.startswith("k = 3 because the rule sets ask min_k = 3")
    assert "Age has 9 values" in mondrian


def test_a_k_raised_above_the_rules_says_which_rule_asked_for_it(federation):
    def change(record):
        record["cross_border_export"]["max_journalist_risk"] = 0.2  # k >= 5

    edit_policy(federation.client, "SN", change)
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    mondrian = body["remedy"]["steps"][-1]
    assert mondrian["parameters"]["k"] == 5
    assert mondrian["reason"].startswith(
        "k = 5 because the rule sets bound journalist risk at 0.2 <= 1/5 (also: the rule sets "
        "ask min_k = 3"
    )


def test_an_auto_anonymized_answer_says_what_the_broker_did(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", anonymize="auto", **QI
    ).json()
    assert body["status"] == "approved"
    [entry] = body["summary"]
    assert entry["kind"] == "note" and "% of the information is kept" in entry["do"]
    assert all(step["reason"] for step in body["remedy"]["steps"])


# --- the utility floor ----------------------------------------------------------------------


def test_with_min_k_5_the_remedy_keeps_nothing(federation):
    raise_min_k_to_5(federation.client)
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert body["remedy"]["verified"] is True
    assert body["remedy"]["after"]["equivalence_classes"] == 1
    assert body["remedy"]["information_loss"]["utility_percent"] == 0.0


@pytest.mark.parametrize("where", ["request", "rule set"])
def test_a_remedy_below_the_floor_is_neither_offered_nor_applied(federation, where):
    raise_min_k_to_5(federation.client)
    form = {"anonymize": "auto", **QI}
    if where == "request":
        form["min_utility_percent"] = "20"
    else:

        def change(record):
            record["import_rules"]["min_utility_percent"] = 20

        edit_policy(federation.client, "FR", change)
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **form
    ).json()
    assert body["status"] == "rejected"
    assert body["remedy"]["verified"] is False and body["remedy"]["steps"] == []
    assert body["remedy"]["applied"] is False
    assert "keeps 0.0 % of the information" in body["remedy"]["note"]
    assert body["dataset"]["anonymized"] is False
    assert body["delivery"]["status"] == "not_applicable"
    floor = next(r for r in body["rules"] if r["rule"] == "min_utility_percent")
    assert not floor["passed"] and floor["measured"] == 0.0 and floor["threshold"] == 20
    assert floor["scope"] == ("request" if where == "request" else "import")
    first = body["summary"][0]
    assert first["rules"] == ["min_utility_percent"] and "min_utility_percent" in first["do"]
    assert "anonymize=auto" not in body["summary"][-1]["do"]


def test_a_remedy_above_the_floor_is_applied(federation):
    body = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        anonymize="auto",
        min_utility_percent="5",
        **QI,
    ).json()
    assert body["status"] == "approved" and body["remedy"]["applied"] is True
    assert body["remedy"]["information_loss"]["utility_percent"] >= 5


def test_a_floor_outside_0_100_is_a_problem(federation):
    answer = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        min_utility_percent="120",
        **QI,
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith(PROBLEM)


# --- forgetting `sensitive` -----------------------------------------------------------------


def test_forgetting_sensitive_is_said_with_the_columns_that_look_sensitive(federation):
    body = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        quasi_identifiers="Age,Gender",
    ).json()
    notes = [r for r in body["rules"] if r["rule"] == "sensitive_declared"]
    assert {(r["jurisdiction"], r["passed"]) for r in notes} == {("SN", True), ("FR", True)}
    assert all(r["attribute"] == "Disease" for r in notes)
    [note] = [e for e in body["summary"] if e["rules"] == ["sensitive_declared"]]
    assert "`sensitive` form field" in note["problem"]
    assert note["problem"].endswith("(a guess from their names): Disease")
    assert note["jurisdictions"] == ["SN (export)", "FR (import)"]
    declared = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert not any(r["rule"] == "sensitive_declared" for r in declared["rules"])


# --- a dry run that can be looked at ----------------------------------------------------------


def dry_run(federation, fixture="patients_original.csv", filename="data.csv", **form):
    form = {**QI, **form}
    return federation.send(
        "sn-hospital", fixture, filename=filename, destination="fr-research", dry_run="true", **form
    ).json()


def test_a_dry_run_has_an_id_and_its_data_can_be_fetched_by_its_source(federation):
    body = dry_run(federation)
    assert body["dry_run"] is True and body["id"] is not None
    preview = body["dataset"]["preview"]
    assert preview["url"] == f"/v1/transfers/dry-runs/{body['id']}/data"
    assert "shuffled on purpose" in preview["note"]
    assert preview["what"].startswith("the verified remedy's result")
    client = federation.client
    fetched = client.get(preview["url"], headers=bearer(federation.keys["sn-hospital"]))
    assert fetched.status_code == 200
    assert fetched.headers["content-type"].startswith("text/csv")
    assert fetched.headers["x-content-type-options"] == "nosniff"
    assert "attachment" in fetched.headers["content-disposition"]
    assert hashlib.sha256(fetched.content).hexdigest() == preview["sha256"]
    frame = pd.read_csv(io.BytesIO(fetched.content), dtype=str)
    assert list(frame.columns) == ["Age", "Gender", "Disease"] and len(frame) == 9
    # Nothing was stored as a transfer.
    assert client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0
    assert client.get(f"/v1/transfers/{body['id']}", headers=ADMIN).status_code == 404
    # Another member cannot fetch it; an admin can.
    other = client.get(preview["url"], headers=bearer(federation.keys["fr-research"]))
    assert other.status_code == 404 and other.headers["content-type"].startswith(PROBLEM)
    assert client.get(preview["url"], headers=ADMIN).status_code == 200


def test_a_dry_run_that_nothing_would_leave_has_no_preview(federation):
    body = dry_run(federation, purpose="marketing")
    assert body["status"] == "rejected" and body["dataset"]["preview"] is None


def test_a_dry_run_expires_and_the_spool_sweep_removes_it(federation, settings):
    body = dry_run(federation, anonymize="auto")
    assert body["dataset"]["preview"]["what"].startswith("the anonymized data")
    url = body["dataset"]["preview"]["url"]
    key = bearer(federation.keys["sn-hospital"])
    folder = dry_runs.folder(settings)
    assert {p.name for p in folder.iterdir()} == {f"{body['id']}.data", f"{body['id']}.json"}
    # Not yet due: the sweep keeps it.
    assert dry_runs.sweep(settings, time.time()) == []
    # Past its time: a fetch answers 404 even before the sweep, and the sweep removes it.
    later = time.time() + settings.dry_run_retention_seconds + 1
    meta = folder / f"{body['id']}.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "expires_at": time.time() - 1}))
    gone = federation.client.get(url, headers=key)
    assert gone.status_code == 404 and "BROKER_DRY_RUN_RETENTION_SECONDS" in gone.json()["detail"]
    assert list(folder.iterdir()) == []
    again = dry_run(federation, anonymize="auto")
    removed = dry_runs.sweep(settings, later)
    assert {p.name for p in removed} == {f"{again['id']}.data", f"{again['id']}.json"}


def test_the_retention_setting_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("BROKER_DRY_RUN_RETENTION_SECONDS", "120")
    assert Settings(admin_token="x" * 20).dry_run_retention_seconds == 120


# --- the format that came in goes out -----------------------------------------------------------


def formats():
    frame = pd.read_csv(FIXTURES / "patients_original.csv", dtype=str)
    parquet = io.BytesIO()
    frame.to_parquet(parquet)
    return {
        "csv": (frame.to_csv(index=False).encode(), pd.read_csv),
        "json": (frame.to_json(orient="records").encode(), pd.read_json),
        "parquet": (parquet.getvalue(), lambda data, dtype: pd.read_parquet(data)),
    }


@pytest.mark.parametrize("data_format", ["csv", "json", "parquet"])
def test_anonymized_data_leaves_in_the_format_that_came_in(federation, connection, data_format):
    data, read = formats()[data_format]
    name = f"patients.{data_format}"
    for anonymize in ("none", "auto"):  # the remedy's result; the anonymized data
        body = dry_run(federation, data, filename=name, anonymize=anonymize)
        preview = body["dataset"]["preview"]
        assert preview["filename"].endswith(f".anonymized.{data_format}")
        fetched = federation.client.get(
            preview["url"], headers=bearer(federation.keys["sn-hospital"])
        )
        assert fetched.headers["content-type"].split(";")[0] == preview["media_type"]
        frame = read(io.BytesIO(fetched.content), dtype=str)
        assert sorted(frame.columns) == ["Age", "Disease", "Gender"] and len(frame) == 9
    sent = federation.send(
        "sn-hospital", data, filename=name, destination="fr-research", anonymize="auto", **QI
    ).json()
    assert sent["status"] == "approved" and sent["dataset"]["format"] == data_format
    assert sent["dataset"]["delivered_filename"].endswith(f".anonymized.{data_format}")
    with Session(bind=connection) as session:
        delivery = session.get(Delivery, sent["id"])
        assert delivery.payload_type.split(";")[0] == formats_media[data_format]
        frame = read(io.BytesIO(delivery.payload), dtype=str)
    assert sorted(frame.columns) == ["Age", "Disease", "Gender"] and len(frame) == 9


formats_media = MEDIA_TYPES


# --- the unknown-column error ---------------------------------------------------------------


def test_an_unknown_column_lists_the_file_columns(federation):
    answer = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        quasi_identifiers="Ag,Gender",
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith(PROBLEM)
    problem = answer.json()
    assert problem["type"].endswith("unknown-column")
    assert problem["detail"] == (
        "Quasi-identifier 'Ag' is not a column of the dataset (did you mean 'Age'?); its 5 "
        "columns: 'NIN', 'Name', 'Age', 'Gender', 'Disease'"
    )


def test_a_long_list_of_columns_stays_one_readable_line(federation):
    names = [f"measurement_{'x' * 60}_{i}" for i in range(300)]
    data = ",".join(["Sensitive line\\nbreak", *names]) + "\n" + ",".join(["1"] * 301) + "\n"
    answer = federation.send(
        "sn-hospital", data.encode(), destination="fr-research", sensitive="disease"
    )
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith(
        "Sensitive attribute 'disease' is not a column of the dataset; its 301 columns: "
    )
    assert "\n" not in detail and len(detail) < 600
    assert detail.endswith(" and 292 more") and "...xxxxxxxxxxx_0', " in detail

"""Uploads above the in-memory bound are counted out of core (DuckDB): the same decision, the
same report, the same refusals as in memory; JSON and Parquet that large are refused."""

import hashlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from broker.main import create_app
from broker.wire.signing import content_digest
from tests.broker.conftest import ADMIN, Federation, drain
from tests.conftest import FIXTURES

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


@pytest.fixture
def both(connection, settings):
    """Two brokers on one database: one reads every upload in memory, one counts every upload
    out of core."""
    in_memory = settings.model_copy(update={"in_memory_max_bytes": 10**9})
    out_of_core = settings.model_copy(update={"in_memory_max_bytes": 0})
    with (
        TestClient(create_app(in_memory, bind=connection)) as memory_client,
        TestClient(create_app(out_of_core, bind=connection)) as core_client,
    ):
        federation = Federation(memory_client)
        core = Federation.__new__(Federation)
        core.client, core.keys = core_client, federation.keys
        yield federation, core


def without_ids(answer: dict) -> dict:
    """The answer without what differs by path: ids, the remedy (Mondrian in memory, a
    generalization out of core) and what the summary says to do about it."""
    kept = {k: v for k, v in answer.items() if k not in ("id", "created_at", "remedy", "dataset")}
    kept["summary"] = [{k: v for k, v in e.items() if k != "do"} for e in answer["summary"]]
    return kept


@pytest.mark.parametrize(
    ("fixture", "form"),
    [
        ("patients_published.csv", QI),
        ("patients_original.csv", QI),
        ("patients_original.csv", {}),  # quasi-identifiers inferred
        ("census_sample.csv", {"quasi_identifiers": "Age,Gender", "sensitive": "Salary"}),
    ],
)
def test_the_decision_and_report_are_those_of_the_in_memory_path(both, fixture, form):
    memory, core = both
    answers = [
        side.send("sn-hospital", fixture, destination="fr-research", dry_run="true", **form)
        for side in (memory, core)
    ]
    assert [a.status_code for a in answers] == [200, 200], answers[1].text
    first, second = (a.json() for a in answers)
    assert without_ids(second) == without_ids(first)
    assert second["dataset"]["rows"] == first["dataset"]["rows"]
    assert second["dataset"]["columns"] == first["dataset"]["columns"]


def test_a_remedy_out_of_core_is_a_generalization_verified_on_the_counts(both):
    _, core = both
    answer = core.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert answer["status"] == "anonymization_required"
    remedy = answer["remedy"]
    assert remedy["verified"], remedy
    assert {s["method"] for s in remedy["steps"]} <= {"drop", "generalize", "mask"}
    assert remedy["after"]["k"] >= 2
    auto = core.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        anonymize="auto",
        dry_run="true",
        **QI,
    ).json()
    assert auto["status"] == "approved" and auto["remedy"]["applied"]
    assert auto["dataset"]["anonymized"]


def test_errors_are_those_of_the_in_memory_path(both):
    memory, core = both
    cases = [
        (b"Age,Gender\n30,F\n", {"quasi_identifiers": "Age,Zip"}),
        (b"Age,Gender\n30\n", {}),
        (b"Age,Age\n30,31\n", {}),
        (b"Age,Gender\n30,\xff\xfe\n", {}),
    ]
    for data, form in cases:
        expected = memory.send("sn-hospital", data, destination="fr-research", **form)
        got = core.send("sn-hospital", data, destination="fr-research", **form)
        assert (got.status_code, expected.status_code) == (422, 422), (data, got.text)
        assert got.json()["type"] == expected.json()["type"], (data, got.text)
    assert core.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0


def test_a_value_longer_than_the_bound_is_refused_out_of_core_too(connection, settings):
    settings = settings.model_copy(update={"in_memory_max_bytes": 0, "max_cell_chars": 20})
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        answer = federation.send(
            "sn-hospital", b"Age,Note\n30," + b"x" * 21 + b"\n", destination="fr-research"
        )
    assert answer.status_code == 413
    assert "'Note'" in answer.json()["detail"] and "at most 20" in answer.json()["detail"]


@pytest.mark.parametrize("data_format", ["json", "parquet"])
def test_json_and_parquet_above_the_bound_are_refused_with_what_to_do(
    connection, settings, data_format
):
    frame = pd.read_csv(FIXTURES / "patients_published.csv", dtype=str)
    if data_format == "json":
        data = json.dumps(frame.to_dict(orient="records")).encode()
    else:
        buffer = io.BytesIO()
        frame.to_parquet(buffer)
        data = buffer.getvalue()
    settings = settings.model_copy(update={"in_memory_max_bytes": 100})
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        answer = federation.send(
            "sn-hospital", data, filename=f"data.{data_format}", destination="fr-research"
        )
    assert answer.status_code == 413, answer.text
    assert "send a dataset this large as CSV" in answer.json()["detail"]


def test_analyze_counts_large_uploads_out_of_core_too(both):
    memory, core = both
    reports = [
        side.client.post(
            "/v1/analyze",
            headers=ADMIN,
            files={"file": ("d.csv", (FIXTURES / "census_sample.csv").read_bytes(), "text/csv")},
            data={"quasi_identifiers": "Age,Gender", "sensitive": "Salary"},
        )
        for side in (memory, core)
    ]
    assert reports[0].status_code == reports[1].status_code == 200
    assert reports[0].json() == reports[1].json()


@pytest.fixture
def out_of_core(connection, settings, inbox):
    """A broker that counts every upload out of core, with a destination on a real inbox."""
    settings = settings.model_copy(
        update={
            "in_memory_max_bytes": 0,
            "delivery_backoff_seconds": 0.01,
            "delivery_max_attempts": 2,
        }
    )
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        federation.add_lab(inbox.url)
        federation.settings = settings
        yield federation


def payload_columns(connection, transfer_id):
    return connection.execute(
        text("SELECT payload, payload_file FROM deliveries WHERE transfer_id = :t"),
        {"t": transfer_id},
    ).one()


def test_an_approved_transfer_counted_out_of_core_leaves_from_its_file(
    out_of_core, inbox, connection
):
    answer = out_of_core.send(
        "sn-hospital", "patients_published.csv", destination="fr-lab", **QI
    ).json()
    assert answer["status"] == "approved"
    data, name = payload_columns(connection, answer["id"])
    assert data is None and Path(name).parent == out_of_core.settings.spool_dir / "deliveries"
    assert Path(name).name == answer["dataset"]["delivered_filename"]
    drain(out_of_core)
    [(headers, body)] = inbox.received
    sent = pd.read_csv(FIXTURES / "patients_published.csv", dtype=str, keep_default_na=False)
    arrived = pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False)
    assert list(arrived.columns) == list(sent.columns)
    assert sorted(arrived.itertuples(index=False)) == sorted(sent.itertuples(index=False))
    assert headers["content-digest"] == content_digest(hashlib.sha256(body).hexdigest())
    assert headers["content-digest"] == content_digest(answer["dataset"]["delivered_sha256"])
    assert headers["content-length"] == str(len(body))
    assert payload_columns(connection, answer["id"]) == (None, None)
    assert not Path(name).exists()  # delivered: the file went, the decision keeps its hash


def test_auto_anonymization_out_of_core_delivers_the_generalized_table(out_of_core, inbox):
    answer = out_of_core.send(
        "sn-hospital", "patients_original.csv", destination="fr-lab", anonymize="auto", **QI
    ).json()
    assert answer["status"] == "approved" and answer["dataset"]["anonymized"], answer
    drain(out_of_core)
    [(headers, body)] = inbox.received
    assert b"Khady" not in body and b"25580917" not in body
    assert headers["x-fedbroker-anonymized"] == "true"
    arrived = pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False)
    assert len(arrived) == answer["dataset"]["delivered_rows"] == 9
    assert arrived.groupby(["Age", "Gender"]).size().min() >= answer["remedy"]["after"]["k"]


def test_a_failed_delivery_file_is_removed_when_its_retention_ends(out_of_core, inbox, connection):
    inbox.answers = [400]
    answer = out_of_core.send(
        "sn-hospital", "patients_published.csv", destination="fr-lab", **QI
    ).json()
    drain(out_of_core)
    _, name = payload_columns(connection, answer["id"])
    assert Path(name).exists()  # failed: kept for a redelivery
    out_of_core.worker.settings = out_of_core.worker.settings.model_copy(
        update={"delivery_failed_retention_seconds": 0}
    )
    drain(out_of_core, rounds=1)
    assert payload_columns(connection, answer["id"]) == (None, None)
    assert not Path(name).exists()


def test_a_column_of_too_many_distinct_values_is_refused_before_it_reaches_memory(
    connection, settings
):
    """Out of core, memory follows distinct values: a near-unique column over the bound is an
    identifier, refused (413) from the first look's exact counts, before any value reaches
    Python; so are too many distinct tuples of the measured attributes, once counted."""
    rows = "".join(f"{i},{i % 7},{i % 2}\n" for i in range(2_000))
    data = ("Id,Age,Gender\n" + rows).encode()
    settings = settings.model_copy(
        update={"in_memory_max_bytes": 0, "out_of_core_max_distinct": 1_000}
    )
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        answer = federation.send("sn-hospital", data, destination="fr-research")
        assert answer.status_code == 413, answer.text
        assert "Column 'Id'" in answer.json()["detail"]
        assert "identifier" in answer.json()["detail"]
        small = ("Age,Gender\n" + "".join(f"{i % 7},{i % 2}\n" for i in range(2_000))).encode()
        fine = federation.send("sn-hospital", small, destination="fr-research", dry_run="true")
        assert fine.status_code == 200, fine.text
        wide = ("Age,Gender\n" + "".join(f"{i % 50},{i % 41}\n" for i in range(4_000))).encode()
        tuples = federation.send(
            "sn-hospital", wide, destination="fr-research", quasi_identifiers="Age,Gender"
        )
        assert tuples.status_code == 413 and "combinations" in tuples.json()["detail"]


def test_hostile_spellings_out_of_core_arrive_as_measured(out_of_core, inbox):
    """A member writes sensitive values the way that breaks a CSV writer or a grouping by
    category (quotes, delimiters, line breaks, look-alike blanks, empty cells): counted out of
    core, grouped and shuffled as categories, the recipient gets exactly the measured values,
    no two spellings merged and none split."""
    sent = pd.read_csv(FIXTURES / "patients_published.csv", dtype=str, keep_default_na=False)
    spellings = ['flu, "A"', "flu\n2", "flu\u00a0", "flu", "", "'flu'", "flu;x", "FLU", "flu "]
    sent["Disease"] = [spellings[i % len(spellings)] for i in range(len(sent))]
    answer = out_of_core.send(
        "sn-hospital", sent.to_csv(index=False).encode(), destination="fr-lab", **QI
    ).json()
    assert answer["status"] == "approved", answer
    drain(out_of_core)
    [(_, body)] = inbox.received
    arrived = pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False)
    assert sorted(arrived.itertuples(index=False)) == sorted(sent.itertuples(index=False))

"""Transfers decided in the background: 202 Accepted, a Location to poll, and a job that is
decided once, survives a restart, and keeps the idempotency rules."""

import os
import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from broker.main import create_app
from broker.transfers import job_queue
from broker.transfers.models import TransferJob
from tests.broker.conftest import ADMIN, Federation, bearer

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}
ASYNC = {"Prefer": "respond-async"}


def accepted(federation, fixture="patients_published.csv", headers=None, **form):
    answer = federation.send(
        "sn-hospital",
        fixture,
        destination="fr-research",
        headers=ASYNC if headers is None else headers,
        **QI | form,
    )
    assert answer.status_code == 202, answer.text
    return answer


def poll(federation, answer, source="sn-hospital"):
    return federation.client.get(
        answer.headers["Location"], headers=bearer(federation.keys[source])
    )


def run_jobs(client: TestClient) -> int:
    runner = client.app.state.job_runner
    done = 0
    while runner.run_once():
        done += 1
    return done


def test_respond_async_answers_202_then_the_same_decision_as_at_once(federation, settings):
    answer = accepted(federation)
    job = answer.json()
    assert answer.headers["Preference-Applied"] == "respond-async"
    assert answer.headers["Retry-After"] == "1"
    assert answer.headers["Location"] == f"/v1/transfers/jobs/{job['id']}"
    assert (job["state"], job["stage"], job["progress"], job["transfer"]) == (
        "queued",
        "queued",
        0.0,
        None,
    )
    assert poll(federation, answer).json()["state"] == "queued"
    # Not decided yet: no transfer, nothing in the outbox.
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0

    assert run_jobs(federation.client) == 1
    polled = poll(federation, answer)
    assert "Retry-After" not in polled.headers
    body = polled.json()
    assert (body["state"], body["progress"], body["attempts"]) == ("done", 1.0, 1)
    decided = body["transfer"]
    assert decided["id"] == job["id"] and decided["status"] == "approved"
    assert decided["delivery"]["status"] == "pending"  # in the outbox, written with the decision
    at_once = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", dry_run="true", **QI
    ).json()
    assert decided["report"] == at_once["report"] and decided["rules"] == at_once["rules"]
    same = federation.client.get(f"/v1/transfers/{job['id']}", headers=ADMIN).json()
    assert same["report"] == decided["report"]
    assert not list((settings.spool_dir / "jobs").iterdir())  # the upload went with the job
    actions = [
        e["action"] for e in federation.client.get("/v1/audit", headers=ADMIN).json()["items"]
    ]
    assert {"transfer.accepted", "transfer.decided"} <= set(actions)


def test_a_large_upload_is_decided_in_the_background_without_asking(connection, settings):
    settings = settings.model_copy(update={"decide_in_background_above_bytes": 100})
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        answer = accepted(federation, headers={})
        assert "Preference-Applied" not in answer.headers
        run_jobs(client)
        assert poll(federation, answer).json()["transfer"]["status"] == "approved"


def test_a_dry_run_is_answered_at_once_even_when_asked_to_wait(federation):
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        headers=ASYNC,
        dry_run="true",
        **QI,
    )
    assert answer.status_code == 200 and answer.json()["dry_run"]


def test_idempotency_key_replays_the_job_then_its_decision(federation):
    key = {"Idempotency-Key": "job-1", **ASYNC}
    first = accepted(federation, headers=key)
    again = accepted(federation, headers=key)
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    other = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", headers=key, **QI
    )
    assert other.status_code == 409 and first.json()["id"] in other.json()["detail"]
    run_jobs(federation.client)
    replay = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", headers=key, **QI
    )
    assert replay.status_code == 200 and replay.json()["id"] == first.json()["id"]
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 1


def test_data_that_cannot_be_read_fails_the_job_with_its_problem_and_stores_nothing(
    federation, settings
):
    answer = accepted(federation, fixture=b"Age,Gender\n30\n", quasi_identifiers="Age")
    run_jobs(federation.client)
    body = poll(federation, answer).json()
    assert body["state"] == "failed" and body["transfer"] is None
    problem = body["problem"]
    assert problem["status"] == 422 and problem["type"].endswith("invalid-dataset")
    assert problem["detail"]
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0
    assert not list((settings.spool_dir / "jobs").iterdir())


def test_only_its_source_and_admins_see_a_job(federation):
    answer = accepted(federation)
    assert poll(federation, answer, source="fr-research").status_code == 404
    assert federation.client.get(answer.headers["Location"], headers=ADMIN).status_code == 200
    run_jobs(federation.client)
    # Decided and approved: the destination sees the transfer, still not the job.
    assert poll(federation, answer, source="fr-research").status_code == 404


def expire_leases(connection) -> None:
    connection.execute(
        update(TransferJob).values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
    )


def test_a_job_whose_process_stopped_is_taken_over_and_decided_once(federation, connection):
    answer = accepted(federation)
    factory = federation.client.app.state.sessionmaker
    settings = federation.client.app.state.settings
    job_id = job_queue.claim_job(factory, "process-that-dies", settings)
    assert job_id == answer.json()["id"]
    assert run_jobs(federation.client) == 0  # its lease holds
    expire_leases(connection)
    assert run_jobs(federation.client) == 1
    assert poll(federation, answer).json()["attempts"] == 2
    # The first process wakes up late: it no longer holds the job and records nothing.
    assert job_queue.run_job(factory, job_id, "process-that-dies", settings) == "lease_lost"
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 1


def test_a_job_that_keeps_stopping_its_process_fails(federation, connection):
    answer = accepted(federation)
    factory = federation.client.app.state.sessionmaker
    settings = federation.client.app.state.settings
    for attempt in range(settings.job_max_attempts):
        assert job_queue.claim_job(factory, f"crashing-{attempt}", settings) is not None
        expire_leases(connection)
    assert job_queue.claim_job(factory, "next", settings) is None
    body = poll(federation, answer).json()
    assert body["state"] == "failed" and body["problem"]["status"] == 500
    assert "stopped 3 times" in body["problem"]["detail"]


def test_a_queued_job_survives_a_broker_restart(tmp_path, settings):
    """The first broker accepts and stops before deciding; the second, on the same database
    and spool folder, decides it."""
    settings = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'b.db'}"})
    with TestClient(create_app(settings)) as client:
        federation = Federation(client)
        answer = accepted(federation)
    restarted = settings.model_copy(update={"jobs_enabled": True, "job_poll_seconds": 0.05})
    with TestClient(create_app(restarted)) as client:
        federation.client = client
        for _ in range(200):
            body = poll(federation, answer).json()
            if body["state"] == "done":
                break
            time.sleep(0.05)
        assert body["state"] == "done" and body["transfer"]["status"] == "approved"


@pytest.mark.parametrize("prefer", ["respond-async", "wait=10, respond-async", "RESPOND-ASYNC"])
def test_prefer_header_forms(federation, prefer):
    assert accepted(federation, headers={"Prefer": prefer}).status_code == 202


def test_other_preferences_are_answered_at_once(federation):
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        headers={"Prefer": "return=minimal"},
        **QI,
    )
    assert answer.status_code == 200


def test_the_sweep_removes_old_spool_files_nothing_uses(federation, settings):
    """A process that died leaves copies behind: old ones that no request, live job or
    delivery uses go; young ones and those in use stay."""
    live = accepted(federation).json()["id"]  # queued: its upload waits in jobs/
    spool = settings.spool_dir
    (spool / "deliveries").mkdir(parents=True, exist_ok=True)
    files = {
        "request copy": spool / "dead.upload",
        "young request copy": spool / "young.upload",
        "finished job": spool / "jobs" / "00000000-0000-0000-0000-000000000000.upload",
        "live job": spool / "jobs" / f"{live}.upload",
        "unheld delivery": spool / "deliveries" / "transfer-x.csv",
    }
    for name, path in files.items():
        if not path.exists():
            path.write_bytes(b"x")
        if name != "young request copy":
            os.utime(path, (1_000, 1_000))
    factory = federation.client.app.state.sessionmaker
    removed = job_queue.sweep_spool(factory, settings, now=time.time())
    assert set(removed) == {
        files["request copy"],
        files["finished job"],
        files["unheld delivery"],
    }
    assert files["live job"].exists() and files["young request copy"].exists()
    assert run_jobs(federation.client) == 1  # the live job still decides


def test_a_member_holds_a_bounded_number_of_waiting_jobs(connection, settings):
    settings = settings.model_copy(update={"jobs_per_member": 2})
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        accepted(federation)
        accepted(federation)
        refused = federation.send(
            "sn-hospital", "patients_published.csv", destination="fr-research", headers=ASYNC
        )
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "10"
        assert "2 transfers waiting" in refused.json()["detail"]
        assert not list((settings.spool_dir / "jobs").glob("*.upload"))[2:]  # nothing kept
        run_jobs(client)
        assert accepted(federation).status_code == 202

"""Job slots: several background decisions at a time, fair across members, each with a
wall-clock deadline after which it fails and frees its slot, whatever it is stuck in."""

import re
import threading
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from broker.main import create_app
from broker.transfers import service
from tests.broker.conftest import ADMIN, Federation, bearer

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}
ASYNC = {"Prefer": "respond-async"}
STUCK = "stuck.csv"  # the file name of a job whose decision blocks until released
GUARD_SECONDS = 60  # a wait that does not end fails the test instead of hanging it


def accepted(federation, source="sn-hospital", filename="data.csv") -> str:
    answer = federation.send(
        source,
        "patients_published.csv",
        filename=filename,
        destination="fr-research",
        headers=ASYNC,
        **QI,
    )
    assert answer.status_code == 202, answer.text
    return answer.json()["id"]


def job(federation, job_id: str) -> dict:
    return federation.client.get(f"/v1/transfers/jobs/{job_id}", headers=ADMIN).json()


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_the_next_job_goes_to_the_member_with_the_fewest_running(federation):
    factory = federation.client.app.state.sessionmaker
    settings = federation.client.app.state.settings
    first, second = accepted(federation), accepted(federation)
    theirs = accepted(federation, source="ng-health")  # the newest
    assert service.claim_job(factory, "process-1", settings) == first
    assert service.claim_job(factory, "process-2", settings) == theirs
    assert service.claim_job(factory, "process-3", settings) is None  # one each, running
    two_each = settings.model_copy(update={"job_slots_per_member": 2})
    assert service.claim_job(factory, "process-3", two_each) == second


@pytest.fixture
def stuck_jobs(monkeypatch):
    """Reading ``stuck.csv`` blocks until ``release`` is set (a call that does not return, as
    a hung file system's would); ``ended`` maps each job to what ``run_job`` returned."""
    release = threading.Event()
    ended: dict[str, str] = {}
    open_upload, run_job = service.open_upload, service.run_job

    def blocking_open(upload, *args, **kwargs):
        if upload.filename == STUCK:
            release.wait(GUARD_SECONDS)
        return open_upload(upload, *args, **kwargs)

    def recorded_run_job(factory, job_id, *args, **kwargs):
        try:
            ended[job_id] = run_job(factory, job_id, *args, **kwargs)
        except Exception as error:  # the stuck read finds its spool file gone
            ended[job_id] = type(error).__name__
            raise
        return ended[job_id]

    monkeypatch.setattr(service, "open_upload", blocking_open)
    monkeypatch.setattr(service, "run_job", recorded_run_job)
    yield release, ended
    release.set()


@pytest.fixture
def running_broker(tmp_path, settings):
    """A broker whose job slots run on their own: two slots, one per member."""
    settings = settings.model_copy(
        update={
            "database_url": f"sqlite:///{tmp_path / 'broker.db'}",
            "jobs_enabled": True,
            "job_slots": 2,
            "job_slots_per_member": 1,
            "job_poll_seconds": 0.05,
            "job_deadline_seconds": 5.0,
        }
    )

    def start(**update) -> TestClient:
        return TestClient(create_app(settings.model_copy(update=update)))

    return start


def test_a_stuck_job_holds_one_slot_until_its_deadline_and_never_another_members_job(
    running_broker, stuck_jobs
):
    release, ended = stuck_jobs
    with running_broker() as client:
        federation = Federation(client)
        stuck = accepted(federation, filename=STUCK)
        until(lambda: job(federation, stuck)["state"] == "running", "the stuck job started")
        theirs = accepted(federation, source="ng-health")
        mine = accepted(federation)
        until(lambda: job(federation, theirs)["state"] == "done", "the other member's job ran")
        assert job(federation, mine)["state"] == "queued"  # its member runs one already
        until(lambda: job(federation, stuck)["state"] == "failed", "the deadline failed it")
        problem = job(federation, stuck)["problem"]
        assert problem["status"] == 413 and "BROKER_JOB_DEADLINE_SECONDS" in problem["detail"]
        until(lambda: job(federation, mine)["state"] == "done", "the freed slot ran the next")
        release.set()  # the stuck call returns at last: its job is settled, it records nothing
        until(lambda: stuck in ended, "the stuck call returned")
        assert ended[stuck] in ("lease_lost", "FileNotFoundError"), ended[stuck]
        assert client.get(f"/v1/transfers/{stuck}", headers=ADMIN).status_code == 404
        assert client.get("/v1/transfers", headers=ADMIN).json()["total"] == 2
        polled = client.get(
            f"/v1/transfers/jobs/{stuck}", headers=bearer(federation.keys["sn-hospital"])
        )
        assert polled.json()["state"] == "failed"


def test_a_long_stage_keeps_its_lease_while_its_process_lives(running_broker, stuck_jobs):
    release, _ended = stuck_jobs
    with running_broker(job_lease_seconds=0.3, job_deadline_seconds=60.0) as client:
        federation = Federation(client)
        stuck = accepted(federation, filename=STUCK)
        until(lambda: job(federation, stuck)["state"] == "running", "the stuck job started")
        time.sleep(1.0)  # three leases: the supervisor extended it all along
        settings = client.app.state.settings
        factory = client.app.state.sessionmaker
        assert service.claim_job(factory, "another-process", settings) is None
        release.set()
        until(lambda: job(federation, stuck)["state"] == "done", "the job ended")
        assert job(federation, stuck)["attempts"] == 1


def job_threads(before: set[int]) -> int:
    """The live job-slot threads started since ``before`` (idents) was taken."""
    return sum(
        1
        for t in threading.enumerate()
        if t.ident not in before and re.fullmatch(r"transfer-jobs-\d+", t.name) and t.is_alive()
    )


def test_jobs_stuck_past_their_deadline_never_make_more_threads_than_slots(
    running_broker, stuck_jobs
):
    """Six jobs whose reads never return, two slots, a deadline of 0.3 s: each stuck job is
    failed at its deadline, but its thread keeps its slot until it ends; before the fix each
    deadline started a fresh thread beside the stuck one, which took the next job and stuck
    too, so threads piled up without bound."""
    release, ended = stuck_jobs
    before = {t.ident for t in threading.enumerate()}
    seen: list[int] = []
    with running_broker(
        job_slots_per_member=10, jobs_per_member=10, job_deadline_seconds=0.3
    ) as client:
        federation = Federation(client)
        jobs = [accepted(federation, filename=STUCK) for _ in range(6)]

        def failed() -> list[str]:
            seen.append(job_threads(before))
            return [j for j in jobs if job(federation, j)["state"] == "failed"]

        until(lambda: len(failed()) >= 2, "the deadline failed the first two")
        for _ in range(20):  # a second of supervisor passes (0.05 s each), threads sampled
            seen.append(job_threads(before))
            time.sleep(0.05)
        assert sorted(job(federation, j)["state"] for j in jobs) == ["failed"] * 2 + ["queued"] * 4
        assert max(seen) <= 2, seen
        release.set()  # the stuck reads return: their threads end, the slots get fresh ones
        until(
            lambda: all(job(federation, j)["state"] in ("done", "failed") for j in jobs),
            "every job settled",
        )
        seen.append(job_threads(before))
        assert max(seen) <= 2, seen
        assert sum(job(federation, j)["state"] == "done" for j in jobs) == 4
        assert len(ended) == 6

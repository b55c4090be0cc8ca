"""Faults under load, judged by the inbox: a full disk, an unexpected error, a locked database.

A fault is not the client's doing and not a bug: it is answered as what it is (507 or 503 with
``Retry-After``, ``application/problem+json``), what was half written is removed at once, and
once the fault is gone the same requests (same ``Idempotency-Key``) are decided and delivered
exactly once. The disk is a real small filesystem (tmpfs) where the broker keeps its spool.
"""

from __future__ import annotations

import logging
import sqlite3
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from fastapi import FastAPI

from broker.main import create_app
from tests.adversarial.conftest import (
    ADMIN,
    DESTINATION,
    PROBLEM,
    SOURCE,
    Broker,
    _running_broker,
    _settings,
)
from tests.adversarial.tables import csv_bytes, harmless
from tests.faults import files_under, fill, small_filesystem, wait_until
from tests.servers import ServerThread

QI = {"quasi_identifiers": ["age_band", "sex"], "sensitive": "diagnosis"}
STORAGE = "urn:fedbroker:problem:insufficient-storage"
DATABASE = "urn:fedbroker:problem:database-unavailable"


def send(broker: Broker, data: bytes, key: str) -> httpx.Response:
    return broker.client.post(
        f"{broker.url}/v1/transfers",
        headers={"Authorization": f"Bearer {broker.keys[SOURCE]}", "Idempotency-Key": key},
        files={"file": ("data.csv", data, "text/csv")},
        data={"destination": DESTINATION, "purpose": "research", **_form(QI)},
        timeout=60,
    )


def _form(fields: dict) -> dict[str, str]:
    return {k: ",".join(v) if isinstance(v, list) else v for k, v in fields.items()}


def assert_fault(answer: httpx.Response, status: int, type_: str) -> None:
    """A fault answered as what it is: the status, the problem type, a Retry-After, a detail
    that says to send again, and nothing of the broker's insides."""
    assert answer.status_code == status, answer.text[:500]
    assert answer.headers["content-type"].startswith(PROBLEM)
    assert int(answer.headers["Retry-After"]) > 0
    body = answer.json()
    assert body["type"] == type_ and body["status"] == status
    assert "again" in body["detail"] and "Traceback" not in answer.text


def delivered_once(broker: Broker, transfer_ids: list[str]) -> None:
    """Every transfer reached the inbox, each exactly once, and nothing else did."""
    expected = set(transfer_ids)
    assert wait_until(lambda: expected <= set(_posted(broker)), timeout=30), (
        f"not delivered: {expected - set(_posted(broker))}"
    )
    posted = Counter(k for k in _posted(broker) if k in expected)
    assert posted == Counter(dict.fromkeys(expected, 1))


def _posted(broker: Broker) -> list[str]:
    return [h.get("idempotency-key") for h, _ in list(broker.inbox.received)]


# --- a full disk ------------------------------------------------------------------------------


def test_a_full_spool_answers_507_under_load_keeps_nothing_and_loses_nothing(tmp_path):
    """Out of core (every upload's delivery file is written to the spool), eight concurrent
    transfers meet a spool with room for one upload's copy but not for its delivery file as
    well: each answers 507, no part of a copy or of a delivery file is left, and nothing
    reaches the inbox. With the room back, the same eight requests are delivered once each."""
    data = csv_bytes(harmless(20_000, seed=3))
    keys = [f"full-spool-{i}" for i in range(8)]
    with (
        small_filesystem(tmp_path / "spool", "4m") as spool,
        _running_broker(tmp_path, in_memory_max_bytes=0) as broker,
    ):
        ballast = fill(spool, leave=len(data) * 3 // 2)
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda key: send(broker, data, key), keys))
        for answer in answers:
            assert_fault(answer, 507, STORAGE)
        assert wait_until(lambda: files_under(spool, but=(ballast,)) == [], timeout=5), files_under(
            spool, but=(ballast,)
        )
        assert broker.inbox.received == []

        ballast.unlink()
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda key: send(broker, data, key), keys))
        assert [a.status_code for a in answers] == [200] * len(keys), answers[0].text
        assert {a.json()["status"] for a in answers} == {"approved"}
        delivered_once(broker, [a.json()["id"] for a in answers])
        assert wait_until(lambda: files_under(spool) == [], timeout=10), files_under(spool)


def test_a_dry_run_preview_on_a_full_spool_answers_507_and_keeps_no_part(tmp_path):
    """In memory, the upload's copy fits but the dry run's preview (what would leave) does
    not: 507, and neither its data nor its metadata stays behind."""
    data = csv_bytes(harmless(20_000, seed=4))
    with small_filesystem(tmp_path / "spool", "4m") as spool, _running_broker(tmp_path) as broker:
        ballast = fill(spool, leave=len(data) * 3 // 2)
        answer = broker.post(data, dry_run=True, **QI)
        assert_fault(answer, 507, STORAGE)
        assert "dry run" in answer.json()["detail"]
        assert wait_until(lambda: files_under(spool, but=(ballast,)) == [], timeout=5), files_under(
            spool, but=(ballast,)
        )
        ballast.unlink()
        again = broker.post(data, dry_run=True, **QI)
        assert again.status_code == 200 and again.json()["dataset"]["preview"], again.text


def test_the_out_of_core_engine_without_room_for_its_working_files_answers_507(
    tmp_path, monkeypatch
):
    """The out-of-core engine keeps its counts, and spills what does not fit in its memory
    limit, in a temporary folder: a full disk there is a 507 as well, never a 413 ("too
    large") or a 422 ("malformed"), which would tell the member its data is at fault."""
    data = csv_bytes(harmless(2_000, seed=5))
    with (
        small_filesystem(tmp_path / "scratch", "1m") as scratch,
        _running_broker(tmp_path, in_memory_max_bytes=0) as broker,
    ):
        ballast = fill(scratch, leave=0)
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        answer = send(broker, data, "no-scratch")
        assert_fault(answer, 507, STORAGE)
        assert "working files" in answer.json()["detail"]
        ballast.unlink()
        monkeypatch.undo()
        again = send(broker, data, "no-scratch")
        assert again.status_code == 200, again.text
        delivered_once(broker, [again.json()["id"]])


def test_a_background_job_that_meets_a_full_disk_fails_with_507_and_delivers_nothing(
    tmp_path, monkeypatch
):
    """Decided in the background (202), a transfer whose working files find no room ends
    ``failed`` with the 507 problem as its reason (not retried until its attempts run out)."""
    data = csv_bytes(harmless(2_000, seed=9))
    with (
        small_filesystem(tmp_path / "scratch", "1m") as scratch,
        _running_broker(tmp_path, in_memory_max_bytes=0, job_poll_seconds=0.05) as broker,
    ):
        fill(scratch, leave=0)
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        accepted = broker.client.post(
            f"{broker.url}/v1/transfers",
            headers={"Authorization": f"Bearer {broker.keys[SOURCE]}", "Prefer": "respond-async"},
            files={"file": ("data.csv", data, "text/csv")},
            data={"destination": DESTINATION, "purpose": "research", **_form(QI)},
        )
        assert accepted.status_code == 202, accepted.text

        def job() -> dict:
            location = f"{broker.url}{accepted.headers['Location']}"
            headers = {"Authorization": f"Bearer {broker.keys[SOURCE]}"}
            return broker.client.get(location, headers=headers).json()

        assert wait_until(lambda: job()["state"] in ("done", "failed"), timeout=20), job()
        monkeypatch.undo()
        ended = job()
        assert (ended["state"], ended["attempts"]) == ("failed", 1), ended
        assert ended["problem"]["type"] == STORAGE and ended["problem"]["status"] == 507
        assert broker.inbox.received == []


def test_a_request_body_spooled_to_a_full_disk_answers_507_not_400(tmp_path, monkeypatch):
    """The multipart parser keeps a file part over 1 MiB in a temporary file; a full disk
    there is the server's fault (507), not a body the client got wrong (400)."""
    data = csv_bytes(harmless(80_000, seed=6))
    assert len(data) > 1024 * 1024
    with (
        small_filesystem(tmp_path / "scratch", "1m") as scratch,
        _running_broker(tmp_path) as broker,
    ):
        fill(scratch, leave=0)
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        answer = send(broker, data, "big-body")
        monkeypatch.undo()
        assert_fault(answer, 507, STORAGE)
        assert broker.inbox.received == []


# --- an unexpected error ----------------------------------------------------------------------


def _local_port(response: httpx.Response) -> int:
    return response.extensions["network_stream"].get_extra_info("client_addr")[1]


def test_an_unexpected_error_is_a_500_problem_and_the_connection_serves_the_next_request(
    tmp_path, caplog
):
    """One keep-alive connection: a request that fails unexpectedly gets a 500 problem (its
    traceback in the log, none in the answer), and the next request on the same connection is
    answered."""
    settings = _settings(f"sqlite:///{tmp_path}/broker.db", tmp_path / "keys")
    app: FastAPI = create_app(settings)

    @app.get("/v1/fails-unexpectedly")
    def fails() -> None:
        raise RuntimeError("secret-internal-state 0xdeadbeef")

    server = ServerThread(app).start()
    client = httpx.Client(limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
    try:
        with caplog.at_level(logging.ERROR, logger="fedbroker.problems"):
            answers, ports = [], set()
            for path in ("fails-unexpectedly", "policies", "fails-unexpectedly", "policies"):
                answers.append(client.get(f"{server.url}/v1/{path}", headers=ADMIN))
                ports.add(_local_port(answers[-1]))  # the client's end of the connection
    finally:
        client.close()
        server.stop()
    failed = answers[0]
    assert failed.status_code == 500 and failed.headers["content-type"].startswith(PROBLEM)
    assert failed.json()["type"] == "urn:fedbroker:problem:internal-error"
    assert "secret-internal-state" not in failed.text and "Traceback" not in failed.text
    assert [a.status_code for a in answers] == [500, 200, 500, 200]
    assert len(ports) == 1, f"the connection was not kept: {len(ports)} connections"
    logged = [r for r in caplog.records if r.exc_info and "fails-unexpectedly" in r.getMessage()]
    assert len(logged) == 2 and "secret-internal-state" in str(logged[0].exc_info[1])


# --- a locked database ------------------------------------------------------------------------


def test_a_database_locked_by_a_frozen_writer_answers_503_then_delivers_once(tmp_path):
    """SQLite: another process holds the write lock (a frozen broker process mid-transaction).
    Transfers sent meanwhile answer 503 database-unavailable with Retry-After once the lock
    timeout has passed, instead of waiting for the lock; sent again with the same keys after
    the lock is released, each is delivered exactly once."""
    data = csv_bytes(harmless(300, seed=8))
    with _running_broker(tmp_path, database_lock_timeout_seconds=1) as broker:
        holder = sqlite3.connect(tmp_path / "broker.db", isolation_level=None, timeout=0)
        holder.execute("BEGIN IMMEDIATE")
        try:
            keys = [f"locked-{i}" for i in range(4)]
            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(lambda key: send(broker, data, key), keys))
            for answer in answers:
                assert_fault(answer, 503, DATABASE)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda key: send(broker, data, key), keys))
        assert [a.status_code for a in answers] == [200] * len(keys)
        delivered_once(broker, [a.json()["id"] for a in answers])


def test_the_fault_tests_leave_no_mount_behind(tmp_path):
    """A guard on the helper: the tmpfs is gone once its block ends."""
    with small_filesystem(tmp_path / "probe", "64k") as folder:
        (folder / "x").write_bytes(b"x")
    assert not (tmp_path / "probe" / "x").exists()
    assert str(tmp_path / "probe") not in Path("/proc/mounts").read_text()

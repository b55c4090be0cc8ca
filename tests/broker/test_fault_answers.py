"""How each fault is answered, fault by fault (the same faults under load, judged by the inbox:
``tests/adversarial/test_faults.py`` and ``tests/e2e/test_faults_under_load.py``)."""

from __future__ import annotations

import errno
import io
import os
import sqlite3
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from broker.errors import InsufficientStorage
from broker.intake.uploads import receive
from broker.main import create_app
from broker.storage.db import Timeouts, make_engine
from tests.broker.conftest import ADMIN
from tests.conftest import postgres_database

PROBLEM = "application/problem+json"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG])
def test_a_full_disk_while_copying_an_upload_is_insufficient_storage_and_leaves_no_part(
    tmp_path, monkeypatch, code
):
    opened = Path.open

    def open_on_a_full_disk(path, mode="r", *args, **kwargs):
        handle = opened(path, mode, *args, **kwargs)
        if "b" in mode and "x" in mode:  # the copy: its first write takes the last block
            handle.write(b"part of the upload")
            handle.flush()
            handle.write = lambda data: (_ for _ in ()).throw(OSError(code, os.strerror(code)))
        return handle

    monkeypatch.setattr(Path, "open", open_on_a_full_disk)
    with pytest.raises(InsufficientStorage) as raised:
        receive(io.BytesIO(b"a,b\n1,2\n"), tmp_path / "spool", "t.csv", "text/csv")
    monkeypatch.undo()
    assert raised.value.status == 507 and raised.value.headers["Retry-After"] == "30"
    assert "upload" in raised.value.detail and "again" in raised.value.detail
    assert list((tmp_path / "spool").iterdir()) == []


def test_other_write_errors_stay_what_they_are(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "open", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13)))
    with pytest.raises(PermissionError):
        receive(io.BytesIO(b"a\n1\n"), tmp_path / "spool", "t.csv", "text/csv")


def _failing_app(settings, error: Exception) -> TestClient:
    app = create_app(settings)

    @app.get("/v1/test-fault")
    def fault() -> None:
        raise error

    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("error", "status", "type_"),
    [
        (PoolTimeout("QueuePool limit of size 5 overflow 10 reached"), 503, "database-unavailable"),
        (
            OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked")),
            503,
            "database-unavailable",
        ),
        (
            InterfaceError("SELECT", {}, psycopg.InterfaceError("the connection is closed")),
            503,
            "database-unavailable",
        ),
        (  # a misuse of the driver is a bug, not a fault
            InterfaceError("SELECT", {}, sqlite3.InterfaceError("Error binding parameter 1")),
            500,
            "internal-error",
        ),
        (OSError(errno.ENOSPC, "No space left on device"), 507, "insufficient-storage"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), 507, "insufficient-storage"),
        (OSError(errno.EIO, "Input/output error"), 500, "internal-error"),
    ],
)
def test_each_fault_is_answered_as_what_it_is(settings, error, status, type_):
    with _failing_app(settings, error) as client:
        answer = client.get("/v1/test-fault", headers=ADMIN)
    assert answer.status_code == status and answer.headers["content-type"] == PROBLEM
    assert answer.json()["type"] == f"urn:fedbroker:problem:{type_}"
    assert ("Retry-After" in answer.headers) == (status != 500)
    assert "Traceback" not in answer.text and "Input/output" not in answer.text
    assert "binding" not in answer.text


def test_a_database_out_of_disk_is_insufficient_storage(settings):
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    with _failing_app(settings, OperationalError("INSERT", {}, full)) as client:
        answer = client.get("/v1/test-fault", headers=ADMIN)
    assert answer.status_code == 507 and "database" in answer.json()["detail"]


def test_sqlite_waits_for_its_writer_as_long_as_the_lock_timeout(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path}/t.db", Timeouts(lock=1.5))
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1500
    engine.dispose()


def test_the_timeouts_are_settings_with_a_limit_by_default():
    from broker.config import Settings

    timeouts = Timeouts.of(Settings())
    assert timeouts == Timeouts()
    assert all(t > 0 for t in vars(timeouts).values())
    assert timeouts.answer == timeouts.statement + 2
    assert Timeouts(statement=0).answer is None
    assert Timeouts(statement=1, lock=0.25, idle_in_transaction=0).server_options() == (
        "-c statement_timeout=1000 -c lock_timeout=250"
    )


@pytest.mark.postgres
def test_a_postgresql_session_has_the_timeouts_and_the_urls_own_options_win():
    url, drop = postgres_database()
    try:
        engine = make_engine(
            url + "?options=-c%20lock_timeout%3D777", Timeouts(statement=2, idle_in_transaction=9)
        )
        with engine.connect() as connection:
            names = ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")
            shown = [connection.execute(text(f"SHOW {name}")).scalar() for name in names]
            with pytest.raises(OperationalError) as slow:
                connection.execute(text("SELECT pg_sleep(3)"))
        engine.dispose()
    finally:
        drop()
    assert shown == ["2s", "777ms", "9s"]
    assert "statement timeout" in str(slow.value)


@pytest.mark.postgres
def test_a_pooled_connection_the_server_closed_while_idle_is_replaced_not_handed_out(
    monkeypatch,
):
    """Pinged only after lying idle: the server ending it (a restart, an idle timeout) costs no
    request an error; a connection given back moments ago is handed out again."""
    from broker.storage import db

    url, drop = postgres_database()
    server = make_engine(url)
    engine = make_engine(url, Timeouts(idle_in_transaction=0))
    try:
        with engine.connect() as connection:
            first = connection.execute(text("SELECT pg_backend_pid()")).scalar()
        with engine.connect() as connection:  # at once: the same connection, not pinged
            again = connection.execute(text("SELECT pg_backend_pid()")).scalar()
        with server.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
        monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 0.0)  # it has lain idle long enough
        with engine.connect() as connection:
            replaced = connection.execute(text("SELECT pg_backend_pid()")).scalar()
    finally:
        engine.dispose()
        server.dispose()
        drop()
    assert again == first and replaced != first

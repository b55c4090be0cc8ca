"""Shared fixtures: a migrated database (SQLite and PostgreSQL) and broker apps on it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from broker.storage.db import make_engine, upgrade

REPO = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
POLICIES = REPO / "policies"
ADMIN_TOKEN = "test-admin-token-0123456789"
POSTGRES_SERVER = os.environ.get(
    "FEDBROKER_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def serve_env(tmp_path: Path, **more: str) -> dict[str, str]:
    """The environment of a `fedbroker serve` on a SQLite file in ``tmp_path``, plus ``more``."""
    return {
        **os.environ,
        "BROKER_ADMIN_TOKEN": "x" * 16,
        "BROKER_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}",
        "BROKER_POLICY_DIR": str(POLICIES),
        "BROKER_SIGNING_KEY_DIR": str(tmp_path / "keys"),
        **more,
    }


def postgres_database():
    """Create a throwaway database on the local server; skip (visibly) when none answers."""
    server = create_engine(POSTGRES_SERVER, isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as connection:
            name = f"fedbroker_test_{uuid.uuid4().hex[:10]}"
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as error:
        server.dispose()
        pytest.skip(
            f"no PostgreSQL server answers at {POSTGRES_SERVER.split('@')[-1]}: "
            f"{str(error.orig).splitlines()[0]}"
        )
    url = POSTGRES_SERVER.rsplit("/", 1)[0] + f"/{name}"

    def drop():
        with server.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        server.dispose()

    return url, drop


@pytest.fixture(
    scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def database_url(request, tmp_path_factory):
    """A migrated, empty database; every test using it runs on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'broker.db'}"
        return
    url, drop = postgres_database()
    try:
        yield url
    finally:
        drop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def own_database(request, tmp_path):
    """The URL of a migrated database of this test's own, on SQLite and on PostgreSQL: for a
    broker that commits (not bound to the test's connection, whose transaction is rolled back)."""
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path / 'own.db'}", None
    else:
        url, drop = postgres_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url
    if drop is not None:
        drop()


@pytest.fixture(scope="session")
def engine(database_url):
    engine = make_engine(database_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def connection(engine):
    """A connection whose transaction is rolled back after the test: nothing leaks."""
    with engine.connect() as connection:
        transaction = connection.begin()
        yield connection
        transaction.rollback()


@pytest.fixture
def inbox():
    """A real inbox server on loopback that records what it receives (``.received``) and
    answers as told (``.answers``)."""
    from tests.servers import RecordingInbox, ServerThread

    recorder = RecordingInbox()
    server = ServerThread(recorder.app()).start()
    recorder.url = server.url + "/inbox"
    yield recorder
    server.stop()

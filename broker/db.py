"""Database plumbing: the declarative base, the engine, sessions, and Alembic at start.

SQLite (the default, for running everything on one machine) and PostgreSQL are both supported;
the schema is only ever created by the Alembic migrations in ``broker/migrations``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    Connection,
    DateTime,
    Engine,
    MetaData,
    TypeDecorator,
    create_engine,
    event,
    text,
)
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class UTCDateTime(TypeDecorator):
    """A timezone-aware UTC datetime on every database (SQLite keeps no time zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime: store timezone-aware UTC datetimes")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets foreign keys, WAL and a busy timeout."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            # Let SQLAlchemy, not the driver, open transactions, so BEGIN IMMEDIATE below holds.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA busy_timeout = 30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):
            # Writers queue at the start of a transaction instead of failing on lock upgrade.
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (safe to run on every start)."""
    command.upgrade(alembic_config(engine), "head")


def schema_is_current(connection: Connection) -> bool:
    """True when the database answers and its schema is at the newest migration."""
    head = ScriptDirectory.from_config(alembic_config(connection.engine)).get_current_head()
    return MigrationContext.configure(connection).get_current_revision() == head


# Any constant: the PostgreSQL advisory lock that lets one broker at a time migrate and seed.
_STARTUP_LOCK = 7_314_002


@contextmanager
def startup_lock(engine: Engine) -> Iterator[None]:
    """Serialize start-up work (migrations, seeding) between brokers sharing one database."""
    if engine.dialect.name != "postgresql":
        yield  # SQLite is one process's file; its BEGIN IMMEDIATE serializes the rest
        return
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _STARTUP_LOCK})
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _STARTUP_LOCK})
            connection.commit()


def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One session per request; services commit, anything left open is rolled back."""
    session = factory()
    try:
        yield session
    finally:
        session.close()

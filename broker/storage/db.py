"""Database plumbing: the declarative base, the engine, sessions, and Alembic at start.

SQLite (the default, for running everything on one machine) and PostgreSQL are both supported;
the schema is only ever created by the Alembic migrations in ``broker/migrations``. Every wait on
the database is bounded (:class:`Timeouts`): a database that is frozen, locked or out of
connections answers 503 instead of holding the request (``docs/operations-faults.md``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
    exc,
    text,
)
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

MIGRATIONS = Path(__file__).parents[1] / "migrations"

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


@dataclass(frozen=True)
class Timeouts:
    """How long the broker waits on its database, in seconds (0: no limit); the defaults are
    the settings' (``BROKER_DATABASE_*_TIMEOUT_SECONDS``)."""

    connect: float = 5.0  # to open a connection (PostgreSQL)
    statement: float = 15.0  # one statement (PostgreSQL), and so any answer of the server
    lock: float = 10.0  # a lock another connection holds (PostgreSQL), the writer's (SQLite)
    idle_in_transaction: float = 60.0  # a session holding a transaction open (PostgreSQL)
    pool: float = 10.0  # a free connection of the pool

    @classmethod
    def of(cls, settings: Any) -> Timeouts:
        return cls(
            connect=settings.database_connect_timeout_seconds,
            statement=settings.database_statement_timeout_seconds,
            lock=settings.database_lock_timeout_seconds,
            idle_in_transaction=settings.database_idle_in_transaction_timeout_seconds,
            pool=settings.database_pool_timeout_seconds,
        )

    def server_options(self) -> str:
        """PostgreSQL's timeouts for a session, as libpq's ``options`` (milliseconds)."""
        timeouts = {
            "statement_timeout": self.statement,
            "lock_timeout": self.lock,
            "idle_in_transaction_session_timeout": self.idle_in_transaction,
        }
        return " ".join(f"-c {name}={round(s * 1000)}" for name, s in timeouts.items() if s)

    @property
    def answer(self) -> float | None:
        """How long the broker waits for any answer of a PostgreSQL server before it gives the
        connection up (a frozen server cannot time its statements out): a little past the
        statement timeout, which a running server reports first. None without one."""
        from broker.storage.postgres import ANSWER_MARGIN

        return self.statement + ANSWER_MARGIN if self.statement else None


# PostgreSQL's settings that :class:`Timeouts` sets for each session.
_SESSION_TIMEOUTS = ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")


def make_engine(url: str, timeouts: Timeouts | None = None) -> Engine:
    """An engine for ``url``, every wait on the database bounded by ``timeouts``; SQLite gets
    foreign keys, WAL and a busy timeout."""
    timeouts = timeouts or Timeouts()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        pooled = {}
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            pooled = {"pool_timeout": timeouts.pool}  # an in-memory database has one connection
        engine = create_engine(
            url,
            connect_args={"timeout": timeouts.lock, "check_same_thread": False},
            **pooled,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            # Let SQLAlchemy, not the driver, open transactions, so BEGIN IMMEDIATE below holds.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA busy_timeout = {round(timeouts.lock * 1000)}")
            cursor.close()

        @event.listens_for(engine, "checkin")
        def _sqlite_driver_never_begins(dbapi_connection, _record):
            # Given back after reads in autocommit, the connection is reset to the default
            # isolation, which turns the driver's own implicit BEGIN back on: off again.
            dbapi_connection.isolation_level = None

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):
            # Writers queue at the start of a transaction instead of failing on lock upgrade;
            # statements outside any transaction (each_statement_on_its_own) hold it only for
            # themselves, and reads in WAL mode not at all.
            if connection.get_execution_options().get("isolation_level") != AUTOCOMMIT:
                connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return _postgresql_engine(url, timeouts)


# Connections a process keeps to PostgreSQL: as many as SQLAlchemy's default pool opens at most
# (5, and 10 more under load), all kept once opened. With the default, under load the 10 beyond
# the first five were opened and closed again over and over (each one a server process started):
# a quarter of a connection a decision in benchmarks/load.py.
POOL_SIZE = 15


def _postgresql_engine(url: str, timeouts: Timeouts) -> Engine:
    """PostgreSQL with the session's timeouts set at connection (an ``options`` of the URL's
    own comes after them, so it wins) and, with psycopg 3, answers awaited no longer than
    :attr:`Timeouts.answer`."""
    parsed = make_url(url)
    options = " ".join(o for o in (timeouts.server_options(), parsed.query.get("options")) if o)
    connect_args: dict[str, Any] = {"options": options} if options else {}
    if timeouts.connect:  # libpq counts whole seconds, and takes less than 2 as 2
        connect_args["connect_timeout"] = max(2, math.ceil(timeouts.connect))
    engine = create_engine(
        url,
        pool_size=POOL_SIZE,
        max_overflow=0,
        pool_timeout=timeouts.pool,
        connect_args=connect_args,
    )
    _ping_when_idle(engine)
    if parsed.get_driver_name() == "psycopg":
        from broker.storage import postgres

        @event.listens_for(engine, "do_connect")
        def _connect_with_deadline(_dialect, _record, cargs, cparams):
            return postgres.connect(timeouts.answer, *cargs, **cparams)

    return engine


# A pooled connection unused for longer than this is pinged before it is handed out.
PING_AFTER_IDLE_SECONDS = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection before use only when it has lain idle in the pool: one that a
    server restart or an idle timeout may have closed is replaced, not handed to a request. A
    connection given back moments ago is not pinged (``pool_pre_ping`` would, at every
    checkout: a round trip each time a request or a delivery opens a transaction)."""

    @event.listens_for(engine, "checkin")
    def _note_idle(_dbapi_connection, record) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection, record, _proxy) -> None:
        idle_since = record.info.pop("idle_since", None)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return  # new, or used moments ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:  # the pool drops it and hands out another
            raise exc.DisconnectionError(f"a pooled connection was closed: {error}") from error


@contextmanager
def without_timeouts(connection: Connection) -> Iterator[Connection]:
    """Lift the timeouts of ``connection`` (PostgreSQL) while it does what may rightly take
    long: migrations, and the wait for another broker's start-up. The connection is closed
    afterwards rather than going back to the pool without its timeouts."""
    if connection.dialect.name != "postgresql":
        yield connection
        return
    raw = connection.connection.dbapi_connection
    if hasattr(raw, "answer_timeout"):
        raw.answer_timeout = None
    for name in _SESSION_TIMEOUTS:
        connection.exec_driver_sql(f"SET {name} = 0")
    try:
        yield connection
    finally:
        connection.invalidate()


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
    with engine.connect() as connection, without_timeouts(connection):  # another may migrate
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _STARTUP_LOCK})
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _STARTUP_LOCK})
            connection.commit()


AUTOCOMMIT = "AUTOCOMMIT"


def each_statement_on_its_own(session: Session) -> None:
    """Run the session's statements, until it next commits or rolls back, outside any
    transaction: each one on its own, as the database's autocommit does.

    For a request's short reads that need nothing a transaction gives: under PostgreSQL's READ
    COMMITTED each statement sees its own snapshot anyway, so a transaction around them only
    adds two round trips (BEGIN, COMMIT) and on SQLite takes the write lock. And for a write
    that stands alone (the outbox's lease, one conditional UPDATE): it is committed at once.
    Call it when the session holds no transaction, and only for such statements: writes that
    must stand or fall together need a transaction. The connection is given back to the pool as
    it was. A session bound to a connection (the tests', in savepoints) runs within that
    connection's transaction, as before."""
    if session.in_transaction():
        raise RuntimeError("each_statement_on_its_own needs a session that holds no transaction")
    if not isinstance(session.get_bind(), Connection):
        session.connection(execution_options={"isolation_level": AUTOCOMMIT})

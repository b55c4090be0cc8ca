"""Reads and appends of the audit log. Appends are serialized so the chain never forks.

Every change the broker makes appends an entry, so the three statements of an append are
built once, as Core statements on the table (an ORM flush or a statement built per call costs
several times the database's own work).
"""

from collections.abc import Iterator

from sqlalchemy import Row, select, text
from sqlalchemy.orm import Session

from broker.audit.models import AuditEntry
from broker.storage.rows import insert_objects

# Any constant will do: it names the PostgreSQL advisory lock that serializes appends.
_APPEND_LOCK = 7_314_001
_LOCK = text(f"SELECT pg_advisory_xact_lock({_APPEND_LOCK})")
_TABLE = AuditEntry.__table__
_LAST = select(_TABLE.c.id, _TABLE.c.hash).order_by(_TABLE.c.id.desc()).limit(1)


def lock_for_append(session: Session) -> None:
    """Hold the append lock until the transaction ends (SQLite already holds its write lock)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(_LOCK)


def last(session: Session) -> Row[tuple[int, str]] | None:
    """The last entry's ``id`` and ``hash``: all an append needs (not its details)."""
    return session.execute(_LAST).first()


def add(session: Session, entry: AuditEntry) -> None:
    """Insert the entry (it stays a plain object: nothing reads it back in this session)."""
    insert_objects(session, entry)


def get(session: Session, entry_id: int) -> AuditEntry | None:
    return session.get(AuditEntry, entry_id)


def page(session: Session, after_id: int, limit: int) -> list[AuditEntry]:
    query = select(AuditEntry).where(AuditEntry.id > after_id).order_by(AuditEntry.id)
    return list(session.scalars(query.limit(limit)))


def stream(session: Session, batch: int = 1000) -> Iterator[AuditEntry]:
    query = select(AuditEntry).order_by(AuditEntry.id).execution_options(yield_per=batch)
    yield from session.scalars(query)

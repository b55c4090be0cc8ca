"""Reads and appends of the audit log. Appends are serialized so the chain never forks."""

from collections.abc import Iterator

from sqlalchemy import Row, select, text
from sqlalchemy.orm import Session

from broker.audit.models import AuditEntry

# Any constant will do: it names the PostgreSQL advisory lock that serializes appends.
_APPEND_LOCK = 7_314_001


def lock_for_append(session: Session) -> None:
    """Hold the append lock until the transaction ends (SQLite already holds its write lock)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _APPEND_LOCK})


def last(session: Session) -> Row[tuple[int, str]] | None:
    """The last entry's ``id`` and ``hash``: all an append needs (not its details)."""
    query = select(AuditEntry.id, AuditEntry.hash).order_by(AuditEntry.id.desc()).limit(1)
    return session.execute(query).first()


def add(session: Session, entry: AuditEntry) -> None:
    session.add(entry)
    session.flush()


def get(session: Session, entry_id: int) -> AuditEntry | None:
    return session.get(AuditEntry, entry_id)


def page(session: Session, after_id: int, limit: int) -> list[AuditEntry]:
    query = select(AuditEntry).where(AuditEntry.id > after_id).order_by(AuditEntry.id)
    return list(session.scalars(query.limit(limit)))


def stream(session: Session, batch: int = 1000) -> Iterator[AuditEntry]:
    query = select(AuditEntry).order_by(AuditEntry.id).execution_options(yield_per=batch)
    yield from session.scalars(query)

from sqlalchemy import select
from sqlalchemy.orm import Session

from broker.admins.models import Administrator


def get(session: Session, name: str) -> Administrator | None:
    return session.get(Administrator, name)


def by_token_hash(session: Session, token_hash: str) -> Administrator | None:
    query = select(Administrator).where(Administrator.token_hash == token_hash)
    return session.scalars(query).first()


def all_administrators(session: Session) -> list[Administrator]:
    return list(session.scalars(select(Administrator).order_by(Administrator.created_at)))


def active_locked(session: Session) -> list[Administrator]:
    """The active administrators, their rows locked until the transaction ends (PostgreSQL; a
    SQLite writer holds the whole database), so two revocations cannot both see another one."""
    query = select(Administrator).where(Administrator.revoked_at.is_(None))
    return list(session.scalars(query.with_for_update()))


def add(session: Session, administrator: Administrator) -> None:
    session.add(administrator)
    session.flush()

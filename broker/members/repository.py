from sqlalchemy import select
from sqlalchemy.orm import Session

from broker.members.models import Member


def get(session: Session, member_id: str) -> Member | None:
    return session.get(Member, member_id)


def by_key_hash(session: Session, key_hash: str) -> Member | None:
    return session.scalars(select(Member).where(Member.api_key_hash == key_hash)).first()


def all_members(session: Session) -> list[Member]:
    return list(session.scalars(select(Member).order_by(Member.id)))


def add(session: Session, member: Member) -> None:
    session.add(member)
    session.flush()

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from broker.members.models import Member


def get(session: Session, member_id: str) -> Member | None:
    return session.get(Member, member_id)


def by_key_hash(session: Session, key_hash: str, now: datetime) -> Member | None:
    """The member whose current key, or previous key still in its grace period, has this hash."""
    current = session.scalars(select(Member).where(Member.api_key_hash == key_hash)).first()
    if current is not None:
        return current
    return session.scalars(
        select(Member).where(
            Member.previous_api_key_hash == key_hash, Member.previous_key_expires_at > now
        )
    ).first()


def all_members(session: Session) -> list[Member]:
    return list(session.scalars(select(Member).order_by(Member.id)))


def add(session: Session, member: Member) -> None:
    session.add(member)
    session.flush()

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, and_, func, or_, select, update
from sqlalchemy.orm import Session, selectinload

from broker.members.models import Member, MemberHealth
from broker.policies.models import PolicyVersion
from broker.wire.statuses import MemberStatus


def get(session: Session, member_id: str) -> Member | None:
    return session.get(Member, member_id)


def by_key_hash(session: Session, key_hash: str, now: datetime) -> tuple[Member, bool] | None:
    """The member whose current key, or previous key still in its grace period, has this hash,
    and whether it was the previous key."""
    current = session.scalars(select(Member).where(Member.api_key_hash == key_hash)).first()
    if current is not None:
        return current, False
    previous = session.scalars(
        select(Member).where(
            Member.previous_api_key_hash == key_hash, Member.previous_key_expires_at > now
        )
    ).first()
    return None if previous is None else (previous, True)


def all_members(session: Session) -> list[Member]:
    """Every member with its health (two queries, whatever their number)."""
    query = select(Member).options(selectinload(Member.health)).order_by(Member.id)
    return list(session.scalars(query))


def add(session: Session, member: Member) -> None:
    session.add(member)
    session.flush()


def health(session: Session, member_id: str) -> MemberHealth | None:
    return session.get(MemberHealth, member_id)


def healths(session: Session, member_ids: Sequence[str]) -> dict[str, MemberHealth]:
    """The health rows of these members, by member id (the catalog shows its providers')."""
    rows = session.scalars(select(MemberHealth).where(MemberHealth.member_id.in_(member_ids)))
    return {row.member_id: row for row in rows}


def due_for_check(session: Session, now: datetime, limit: int) -> list[Row]:
    """Active members whose next health check is due (``id``, ``inbox_url``, ``health_url``),
    never checked first, then oldest."""
    query = (
        select(Member.id, Member.inbox_url, Member.health_url)
        .join(MemberHealth, MemberHealth.member_id == Member.id)
        .where(
            Member.status == MemberStatus.ACTIVE,
            or_(MemberHealth.next_check_at.is_(None), MemberHealth.next_check_at <= now),
        )
        .order_by(MemberHealth.next_check_at.is_not(None), MemberHealth.next_check_at)
        .limit(limit)
    )
    return list(session.execute(query))


def claim_check(session: Session, member_id: str, now: datetime, next_at: datetime) -> bool:
    """Take the member's check of this period: move its next check to ``next_at`` unless
    another process did first (a conditional UPDATE); True when this one is ours."""
    result = session.execute(
        update(MemberHealth)
        .where(
            MemberHealth.member_id == member_id,
            or_(MemberHealth.next_check_at.is_(None), MemberHealth.next_check_at <= now),
        )
        .values(next_check_at=next_at)
    )
    return result.rowcount == 1


def parties(session: Session, member_ids: Sequence[str]) -> list[Row]:
    """Each of these members (``id``, ``jurisdiction``, ``status``) with its jurisdiction's newest
    F-SLA ``version`` and ``document`` (both None when it has none), in one query."""
    newest = (
        select(func.max(PolicyVersion.version))
        .where(PolicyVersion.jurisdiction == Member.jurisdiction)
        .correlate(Member)
        .scalar_subquery()
    )
    query = (
        select(
            Member.id,
            Member.jurisdiction,
            Member.status,
            PolicyVersion.version,
            PolicyVersion.document,
        )
        .outerjoin(
            PolicyVersion,
            and_(
                PolicyVersion.jurisdiction == Member.jurisdiction, PolicyVersion.version == newest
            ),
        )
        .where(Member.id.in_(member_ids))
    )
    return list(session.execute(query))

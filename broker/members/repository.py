from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, and_, bindparam, func, or_, select, update
from sqlalchemy.orm import Session, selectinload

from broker.members.models import Member, MemberHealth
from broker.policies.models import PolicyVersion
from broker.wire.statuses import MemberStatus


def get(session: Session, member_id: str) -> Member | None:
    return session.get(Member, member_id)


def by_key_hash(session: Session, key_hash: str, now: datetime) -> tuple[Row, bool] | None:
    """The member (``id``, ``jurisdiction``, ``status``) whose current key, or previous key
    still in its grace period, has this hash, and whether it was the previous key. Read on
    every call a member makes: statements built once, on the table."""
    current = session.execute(_BY_KEY, {"key_hash": key_hash}).first()
    if current is not None:
        return current, False
    previous = session.execute(_BY_PREVIOUS_KEY, {"key_hash": key_hash, "now": now}).first()
    return None if previous is None else (previous, True)


_MEMBERS = Member.__table__
_CALLER = select(_MEMBERS.c.id, _MEMBERS.c.jurisdiction, _MEMBERS.c.status)
_BY_KEY = _CALLER.where(_MEMBERS.c.api_key_hash == bindparam("key_hash")).limit(1)
_BY_PREVIOUS_KEY = _CALLER.where(
    _MEMBERS.c.previous_api_key_hash == bindparam("key_hash"),
    _MEMBERS.c.previous_key_expires_at > bindparam("now"),
).limit(1)


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
    F-SLA ``version`` and ``document`` (both None when it has none) and its health
    (``health_state``, ``health_since``, ``health_checked_at``, ``health_reason``: None when never
    checked), in one query (built once: every decision reads it)."""
    return list(session.execute(_PARTIES, {"ids": list(member_ids)}))


_VERSIONS = PolicyVersion.__table__
_HEALTH = MemberHealth.__table__
_NEWEST = (
    select(func.max(_VERSIONS.c.version))
    .where(_VERSIONS.c.jurisdiction == _MEMBERS.c.jurisdiction)
    .correlate(_MEMBERS)
    .scalar_subquery()
)
_PARTIES = (
    select(
        _MEMBERS.c.id,
        _MEMBERS.c.jurisdiction,
        _MEMBERS.c.status,
        _VERSIONS.c.version,
        _VERSIONS.c.document,
        _HEALTH.c.state.label("health_state"),
        _HEALTH.c.since.label("health_since"),
        _HEALTH.c.checked_at.label("health_checked_at"),
        _HEALTH.c.reason.label("health_reason"),
    )
    .outerjoin(
        _VERSIONS,
        and_(_VERSIONS.c.jurisdiction == _MEMBERS.c.jurisdiction, _VERSIONS.c.version == _NEWEST),
    )
    .outerjoin(_HEALTH, _HEALTH.c.member_id == _MEMBERS.c.id)
    .where(_MEMBERS.c.id.in_(bindparam("ids", expanding=True)))
)

"""Member clouds: registration (the key is shown once, only its hash is kept), suspension, key
rotation (the previous key stays valid for a grace period), revocation of every key, and the
health checks' bookkeeping (which member to check now, what a check found)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from broker.audit import service as audit
from broker.errors import Conflict, NotFound, Unprocessable
from broker.members import repository
from broker.members.health import Health, after_check, changed, health_url
from broker.members.models import Member, MemberHealth
from broker.policies import repository as policies
from broker.wire.inbox_urls import InboxPolicy
from broker.wire.statuses import HealthState, MemberStatus

KEY_PREFIX = "fbk_"
ACTOR = "broker"  # the audit log's actor for what the broker finds by itself


def hash_key(api_key: str) -> str:
    """Keys are 256 random bits, so a plain SHA-256 is enough (no password stretching)."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def authenticate(session: Session, api_key: str) -> tuple[Row, bool] | None:
    """The member this key is a key of (``id``, ``jurisdiction``, ``status``), and whether it
    is a rotated-out key in its grace period (which authenticates ordinary calls but manages
    no keys)."""
    if not api_key.startswith(KEY_PREFIX):
        return None
    return authenticate_digest(session, hash_key(api_key))


def authenticate_digest(session: Session, key_hash: str) -> tuple[Row, bool] | None:
    """:func:`authenticate` by the key's SHA-256 (a console session keeps it, never the key)."""
    return repository.by_key_hash(session, key_hash, datetime.now(UTC))


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def get(session: Session, member_id: str) -> Member:
    member = repository.get(session, member_id)
    if member is None:
        raise NotFound(f"No member cloud {member_id!r}")
    return member


def list_members(session: Session) -> list[Member]:
    return repository.all_members(session)


def register(
    session: Session,
    member_id: str,
    name: str,
    jurisdiction: str,
    inbox_url: str,
    actor: str,
    inbox_policy: InboxPolicy,
    given_health_url: str | None = None,
) -> tuple[Member, str]:
    """Create a member and return it with its API key (never stored, never shown again). Its
    health is ``unknown`` until the first check."""
    refused = inbox_policy.refusal(inbox_url)
    if refused:
        raise Unprocessable(
            f"inbox_url: the broker will not deliver to {inbox_url!r}: {refused}",
            errors=[{"field": "inbox_url", "reason": refused}],
        )
    refused = given_health_url is not None and inbox_policy.refusal(given_health_url)
    if refused:
        raise Unprocessable(
            f"health_url: the broker will not check {given_health_url!r}: {refused}",
            errors=[{"field": "health_url", "reason": refused}],
        )
    if repository.get(session, member_id) is not None:
        raise Conflict(f"A member cloud {member_id!r} is already registered")
    if policies.latest(session, jurisdiction) is None:
        raise Unprocessable(
            f"jurisdiction: there is no F-SLA record for {jurisdiction!r}; "
            "create one first (PUT /v1/policies/{jurisdiction})",
            errors=[{"field": "jurisdiction", "reason": "no F-SLA record"}],
        )
    api_key = new_key()
    now = datetime.now(UTC)
    member = Member(
        id=member_id,
        name=name,
        jurisdiction=jurisdiction,
        inbox_url=inbox_url,
        health_url=given_health_url,
        api_key_hash=hash_key(api_key),
        status=MemberStatus.ACTIVE,
        created_at=now,
    )
    member.health = MemberHealth(state=HealthState.UNKNOWN, since=now, failures=0)
    try:
        repository.add(session, member)
        audit.record(
            session,
            actor,
            "member.registered",
            member_id,
            {
                "name": name,
                "jurisdiction": jurisdiction,
                "inbox_url": inbox_url,
                "health_url": health_url(inbox_url, given_health_url),
            },
        )
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"A member cloud {member_id!r} is already registered") from None
    return member, api_key


def set_status(session: Session, member_id: str, status: str, actor: str) -> Member:
    member = get(session, member_id)
    if member.status != status:
        member.status = status
        action = "member.suspended" if status == MemberStatus.SUSPENDED else "member.reactivated"
        audit.record(session, actor, action, member_id, {"status": status})
        session.commit()
    return member


def rotate_key(
    session: Session, member_id: str, actor: str, grace_seconds: float
) -> tuple[Member, str]:
    """Issue a new key; the current one stays valid for ``grace_seconds`` (0: not at all)."""
    member = get(session, member_id)
    api_key = new_key()
    expires = datetime.now(UTC) + timedelta(seconds=grace_seconds)
    member.previous_api_key_hash = member.api_key_hash if grace_seconds > 0 else None
    member.previous_key_expires_at = expires if grace_seconds > 0 else None
    member.api_key_hash = hash_key(api_key)
    audit.record(
        session,
        actor,
        "member.key_rotated",
        member_id,
        {"previous_key_valid_until": expires.isoformat() if grace_seconds > 0 else None},
    )
    session.commit()
    return member, api_key


def revoke_keys(session: Session, member_id: str, actor: str) -> Member:
    """Every key of the member stops working at once; an admin issues a new one by rotating."""
    member = get(session, member_id)
    member.api_key_hash = hash_key(new_key())  # a key nobody was ever shown
    member.previous_api_key_hash = None
    member.previous_key_expires_at = None
    audit.record(session, actor, "member.keys_revoked", member_id, {})
    session.commit()
    return member


@dataclass(frozen=True)
class CheckTarget:
    """A member whose health this process checks now, and where."""

    member_id: str
    url: str


def claim_checks(
    factory: sessionmaker[Session], period_seconds: float, limit: int = 1000
) -> list[CheckTarget]:
    """Take the checks that are due (active members not checked this period), each by moving
    its next check one period on: another broker process sharing the database finds it taken."""
    now = datetime.now(UTC)
    next_at = now + timedelta(seconds=period_seconds)
    claimed = []
    with factory() as session:
        for member_id, inbox_url, given in repository.due_for_check(session, now, limit):
            if repository.claim_check(session, member_id, now, next_at):
                claimed.append(CheckTarget(member_id, health_url(inbox_url, given)))
        session.commit()
    return claimed


def record_check(
    session: Session,
    member_id: str,
    ok: bool,
    reason: str | None,
    down_after: int,
    now: datetime,
) -> tuple[Health, Health]:
    """Write what a check found, in the caller's transaction; returns the health before and
    after it. A change of state is audited (not every check). What a member seen up again
    means for its deliveries is :func:`broker.flows.record_health_check`'s."""
    row = repository.health(session, member_id)
    if row is None:  # the member is gone since the claim: nothing to record
        return Health(), Health()
    before = Health.of(row)
    after = after_check(before, ok=ok, reason=reason, now=now, down_after=down_after)
    row.state, row.since, row.checked_at = after.state, after.since, after.checked_at
    row.reason, row.failures = after.reason, after.failures
    if changed(before, after):
        audit.record(
            session,
            ACTOR,
            "member.health_changed",
            member_id,
            {"from": before.state, "to": after.state, "reason": after.reason},
        )
    return before, after

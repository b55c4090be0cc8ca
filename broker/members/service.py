"""Member clouds: registration (the key is shown once, only its hash is kept), suspension."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.errors import Conflict, NotFound, Unprocessable
from broker.members import repository
from broker.members.models import ACTIVE, SUSPENDED, Member
from broker.policies import repository as policies

KEY_PREFIX = "fbk_"


def hash_key(api_key: str) -> str:
    """Keys are 256 random bits, so a plain SHA-256 is enough (no password stretching)."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def authenticate(session: Session, api_key: str) -> Member | None:
    if not api_key.startswith(KEY_PREFIX):
        return None
    return repository.by_key_hash(session, hash_key(api_key))


def get(session: Session, member_id: str) -> Member:
    member = repository.get(session, member_id)
    if member is None:
        raise NotFound(f"No member cloud {member_id!r}")
    return member


def list_members(session: Session) -> list[Member]:
    return repository.all_members(session)


def register(
    session: Session, member_id: str, name: str, jurisdiction: str, inbox_url: str, actor: str
) -> tuple[Member, str]:
    """Create a member and return it with its API key (never stored, never shown again)."""
    if repository.get(session, member_id) is not None:
        raise Conflict(f"A member cloud {member_id!r} is already registered")
    if policies.latest(session, jurisdiction) is None:
        raise Unprocessable(
            f"jurisdiction: there is no F-SLA record for {jurisdiction!r}; "
            "create one first (PUT /v1/policies/{jurisdiction})",
            errors=[{"field": "jurisdiction", "reason": "no F-SLA record"}],
        )
    api_key = KEY_PREFIX + secrets.token_urlsafe(32)
    member = Member(
        id=member_id,
        name=name,
        jurisdiction=jurisdiction,
        inbox_url=inbox_url,
        api_key_hash=hash_key(api_key),
        status=ACTIVE,
    )
    try:
        repository.add(session, member)
        audit.record(
            session,
            actor,
            "member.registered",
            member_id,
            {"name": name, "jurisdiction": jurisdiction, "inbox_url": inbox_url},
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
        action = "member.suspended" if status == SUSPENDED else "member.reactivated"
        audit.record(session, actor, action, member_id, {"status": status})
        session.commit()
    return member

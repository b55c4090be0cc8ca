"""Named administrators: created with a token shown once (only its SHA-256 is kept), listed,
revoked. ``bootstrap`` is ``BROKER_ADMIN_TOKEN``, the token of existing deployments; like any
administrator it can be revoked, but never the last active one (409), so the federation always
keeps someone who can create administrators over HTTP.

In the audit log and in ``created_by`` an administrator acts as ``admin:<name>``: member ids
have no colon, so an administrator can never be mistaken for a member cloud.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.admins import repository
from broker.admins.models import Administrator
from broker.audit import service as audit
from broker.callers import BOOTSTRAP
from broker.errors import Conflict, NotFound

TOKEN_PREFIX = "fba_"


def hash_token(token: str) -> str:
    """Tokens are 256 random bits, so a plain SHA-256 is enough (as for member keys)."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def authenticate(session: Session, token: str) -> Administrator | None:
    """The active administrator holding ``token``, else None.

    The row is found by the token's SHA-256 (an index lookup leaks at most how the *hash* of a
    guess compares, which says nothing about a valid token); the hashes are then compared in
    constant time.
    """
    if not token.startswith(TOKEN_PREFIX):
        return None
    return authenticate_digest(session, hash_token(token))


def authenticate_digest(session: Session, digest: str) -> Administrator | None:
    """The active administrator whose token has this SHA-256 (a console session keeps the
    digest, never the token, and is checked again with it at every page), else None."""
    found = repository.by_token_hash(session, digest)
    if found is None or found.token_hash is None:
        return None
    if not hmac.compare_digest(found.token_hash, digest) or not found.active:
        return None
    return found


def bootstrap_active(session: Session) -> bool:
    """Whether ``BROKER_ADMIN_TOKEN`` still works (its row not revoked)."""
    row = repository.get(session, BOOTSTRAP)
    return row is None or row.active  # no row: a database older than the migration's insert


def list_administrators(session: Session) -> list[Administrator]:
    return repository.all_administrators(session)


def create(session: Session, name: str, actor: str) -> tuple[Administrator, str]:
    """A new administrator and its token (never stored, never shown again).

    A name is never reused, even after a revocation: the audit log names people by it.
    """
    if repository.get(session, name) is not None:
        raise Conflict(
            f"An administrator {name!r} exists or existed: names are never reused, so the audit "
            "log names one person each; choose another"
        )
    token = new_token()
    administrator = Administrator(name=name, token_hash=hash_token(token), created_by=actor)
    try:
        repository.add(session, administrator)
        audit.record(session, actor, "admin.created", name, {})
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"An administrator {name!r} exists or existed: choose another") from None
    return administrator, token


def revoke(session: Session, name: str, actor: str) -> Administrator:
    """Its token stops working at once (401). Revoking a revoked administrator changes
    nothing; revoking the last active one is refused (409)."""
    administrator = repository.get(session, name)
    if administrator is None:
        raise NotFound(f"No administrator {name!r}")
    if not administrator.active:
        return administrator
    active = repository.active_locked(session)
    if [a.name for a in active] == [name]:
        session.rollback()
        raise Conflict(
            f"{name!r} is the last active administrator: create another one first "
            "(POST /v1/admins), so that someone can still administer the federation"
        )
    administrator.revoked_at = datetime.now(UTC)
    administrator.revoked_by = actor
    audit.record(session, actor, "admin.revoked", name, {})
    session.commit()
    return administrator

"""Console sessions: open one at sign-in, resume it at each page, close it at sign-out.

A session ends after ``idle`` without a page opened or ``lifetime`` after its sign-in, whichever
comes first; expired rows are deleted when met and whenever someone signs in. Whether the token
or key behind a session still works is not decided here: the console asks the rule the API asks
(:func:`broker.web.deps.caller_of`) at every page and closes the session when it says no.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, or_
from sqlalchemy.orm import Session

from broker.console.models import ConsoleSession

# A session id is 256 random bits; anything longer in a cookie is not one of ours.
MAX_COOKIE_LENGTH = 64
# The last-seen clock is written at most this often (a page load is not a database write).
TOUCH_EVERY = timedelta(seconds=30)


@dataclass(frozen=True)
class Lifetimes:
    idle: timedelta
    lifetime: timedelta


def _id_hash(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def open_session(
    session: Session, credential_kind: str, credential_hash: str, limits: Lifetimes
) -> str:
    """A new session for the holder of a credential; returns the cookie's value (shown once)."""
    now = datetime.now(UTC)
    _purge(session, limits, now)
    cookie = secrets.token_urlsafe(32)
    session.add(
        ConsoleSession(
            id_hash=_id_hash(cookie),
            credential_kind=credential_kind,
            credential_hash=credential_hash,
            csrf_token=new_csrf_token(),
            created_at=now,
            last_seen_at=now,
        )
    )
    session.commit()
    return cookie


def resume(session: Session, cookie: str | None, limits: Lifetimes) -> ConsoleSession | None:
    """The live session this cookie names, its idle clock moved on; None when there is none or
    it expired (then it is deleted)."""
    if not cookie or len(cookie) > MAX_COOKIE_LENGTH:
        return None
    row = session.get(ConsoleSession, _id_hash(cookie))
    if row is None:
        return None
    now = datetime.now(UTC)
    if _expired(row, limits, now):
        session.delete(row)
        session.commit()
        return None
    if now - row.last_seen_at >= TOUCH_EVERY:
        row.last_seen_at = now
        session.commit()
    return row


def close(session: Session, cookie: str | None) -> None:
    """Sign out: the session's row is deleted (the cookie names nothing any more)."""
    if cookie and len(cookie) <= MAX_COOKIE_LENGTH:
        session.execute(delete(ConsoleSession).where(ConsoleSession.id_hash == _id_hash(cookie)))
        session.commit()


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def same_token(expected: str | None, sent: str | None) -> bool:
    """Whether a form sent back the CSRF token it was given (compared in constant time)."""
    if not expected or not sent:
        return False
    return secrets.compare_digest(expected.encode(), sent.encode())


def _expired(row: ConsoleSession, limits: Lifetimes, now: datetime) -> bool:
    return now - row.last_seen_at > limits.idle or now - row.created_at > limits.lifetime


def _purge(session: Session, limits: Lifetimes, now: datetime) -> None:
    session.execute(
        delete(ConsoleSession).where(
            or_(
                ConsoleSession.last_seen_at < now - limits.idle,
                ConsoleSession.created_at < now - limits.lifetime,
            )
        )
    )

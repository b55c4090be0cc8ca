"""Request dependencies: the database session, the settings, the uploaded file (copied into the
spool folder), and who is calling (authenticated
here into a :class:`broker.callers.Caller`, which services take; no service imports this module)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Annotated

from anyio import CancelScope, CapacityLimiter, to_thread
from fastapi import Depends, File, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from broker.admins import service as admins
from broker.callers import ADMIN, BOOTSTRAP, MEMBER, Caller
from broker.config import Settings
from broker.errors import Forbidden, NotAuthenticated
from broker.intake import uploads
from broker.intake.uploads import Upload
from broker.members import service as members
from broker.storage.db import each_statement_on_its_own

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="BearerToken",
    description="An administrator's token (BROKER_ADMIN_TOKEN or a named administrator's), or a "
    "member cloud's API key",
)


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One session per request; services commit, anything left open is rolled back.

    Made and closed on the event loop: FastAPI would hand a ``def`` generator to its thread pool
    twice a request, to open and to close. Making a session reads nothing (it connects when
    first used), and closing one that holds no transaction writes nothing. One that still does
    is rolled back in a thread, as FastAPI closes a ``def`` dependency: shielded from
    cancellation (a request cut off still gives its connection back) and not waiting for a
    free thread of the shared pool (whose requests may be waiting for this connection).
    """
    session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        if session.in_transaction():
            with CancelScope(shield=True):
                await to_thread.run_sync(session.close, limiter=CapacityLimiter(1))
        else:
            session.close()


# Dependencies that neither block nor touch the database are ``async def``: FastAPI runs each
# ``def`` dependency in its thread pool, and a hand-off to a thread per request costs more than
# reading a setting or checking a role (measured under load, benchmarks/load.py).


async def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]


@dataclass(frozen=True)
class Credential:
    """A presented secret as the broker checks it: which kind of secret, and its SHA-256 (what
    the database keeps of keys and tokens, and all a console session keeps)."""

    kind: str  # BOOTSTRAP (BROKER_ADMIN_TOKEN), ADMIN (a named administrator's) or MEMBER
    digest: str


def credential_of(settings: Settings, secret: str) -> Credential:
    """Which kind of secret ``secret`` is (the bootstrap token compared in constant time)."""
    admin_token = settings.admin_token.get_secret_value()  # checked at start
    if hmac.compare_digest(secret.encode(), admin_token.encode()):
        return Credential(BOOTSTRAP, _sha256(secret))
    if secret.startswith(admins.TOKEN_PREFIX):
        return Credential(ADMIN, admins.hash_token(secret))
    return Credential(MEMBER, members.hash_key(secret))


def _sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def caller_of(session: Session, settings: Settings, credential: Credential) -> Caller:
    """Who holds ``credential`` now: the one rule for the API's bearer header and the console's
    sessions, so a revoked token, a revoked key or a suspended member ends both at once.

    Raises :class:`NotAuthenticated` (unknown or revoked) or :class:`Forbidden` (suspended)."""
    if not session.in_transaction():  # read on every call: one round trip, not three
        each_statement_on_its_own(session)
    if credential.kind == BOOTSTRAP:
        expected = _sha256(settings.admin_token.get_secret_value())
        active = hmac.compare_digest(credential.digest, expected) and admins.bootstrap_active(
            session
        )
        session.rollback()
        if not active:
            raise NotAuthenticated("This admin token (BROKER_ADMIN_TOKEN) was revoked")
        return Caller(ADMIN, admin_name=BOOTSTRAP)
    if credential.kind == ADMIN:
        administrator = admins.authenticate_digest(session, credential.digest)
        name = administrator.name if administrator else None
        session.rollback()
        if name is None:
            raise NotAuthenticated("The bearer token is not an active administrator's token")
        return Caller(ADMIN, admin_name=name)
    found = members.authenticate_digest(session, credential.digest)
    if found is None:
        session.rollback()
        raise NotAuthenticated(
            "The bearer token is neither an administrator's token nor a member's key"
        )
    member, rotated_out = found
    caller = Caller(MEMBER, member.id, member.jurisdiction, rotated_out_key=rotated_out)
    active = member.status == "active"
    session.commit()  # end the read (it wrote nothing): no transaction held into the route
    if not active:
        raise Forbidden(f"Member {caller.member_id!r} is suspended")
    return caller


def current_caller(
    session: SessionDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Caller:
    if credentials is None:
        raise NotAuthenticated(
            "Send 'Authorization: Bearer <token>' with an administrator's token or a member's "
            "API key"
        )
    return caller_of(session, settings, credential_of(settings, credentials.credentials))


CurrentCaller = Annotated[Caller, Depends(current_caller)]


def require_admin(caller: Caller) -> Caller:
    """The administrators' routes and pages (the console's too) refuse everyone else."""
    if not caller.is_admin:
        raise Forbidden("This route is for the federation's administrators")
    return caller


async def admin_only(caller: CurrentCaller) -> Caller:
    return require_admin(caller)


async def member_only(caller: CurrentCaller) -> Caller:
    if caller.is_admin:
        raise Forbidden("Only member clouds send transfers: use a member's API key")
    return caller


AdminOnly = Annotated[Caller, Depends(admin_only)]
CurrentMember = Annotated[Caller, Depends(member_only)]


async def rate_limited(request: Request, caller: CurrentCaller) -> Caller:
    """The caller, counted against its upload rate limit (admins are not limited): on the event
    loop when counted in memory, in the thread pool when the counts are in a shared store."""
    limiter = request.app.state.rate_limiter
    if caller.is_admin:
        return caller
    if limiter.in_memory:
        limiter.check(caller.name)
    else:
        await run_in_threadpool(limiter.check, caller.name)
    return caller


async def rate_limited_member(request: Request, caller: CurrentMember) -> Caller:
    return await rate_limited(request, caller)


RateLimitedCaller = Annotated[Caller, Depends(rate_limited)]
RateLimitedMember = Annotated[Caller, Depends(rate_limited_member)]


def spooled_upload(
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="CSV, JSON (array of records) or Parquet")],
) -> Iterator[Upload]:
    """The request's file, copied into the spool folder; removed when the request ends."""
    with uploads.spooled(file.file, settings.spool_dir, file.filename, file.content_type) as upload:
        yield upload


SpooledUpload = Annotated[Upload, Depends(spooled_upload)]

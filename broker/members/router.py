from typing import Annotated

from fastapi import APIRouter, Path

from broker.callers import Caller
from broker.errors import Forbidden, example, responses
from broker.members import service
from broker.members.health import health_read, health_url
from broker.members.models import Member
from broker.members.schemas import KeyRotated, MemberCreate, MemberCreated, MemberRead
from broker.web.deps import AdminOnly, CurrentCaller, SessionDep, SettingsDep
from broker.wire.statuses import MemberStatus

router = APIRouter(prefix="/v1/members", tags=["Members"])
MemberId = Annotated[str, Path(description="Member cloud id", max_length=64)]


@router.post(
    "",
    status_code=201,
    response_model=MemberCreated,
    responses=responses(
        400,
        401,
        403,
        409,
        413,
        422,
        examples={
            409: example(
                409,
                "conflict",
                "Conflict",
                "A member cloud 'sn-hospital' is already registered",
                "/v1/members",
            )
        },
    ),
    summary="Register a member cloud (admin); its API key is shown once",
    description="The member's jurisdiction must have an F-SLA record. The broker keeps only a "
    "hash of the key: copy it from this answer. Its `inbox_url`, and its `health_url` when "
    "given, must pass the federation's inbox policy (allowed networks, https). Its health is "
    "`unknown` until the broker's first check of it (within a second or so).",
)
def register_member(
    body: MemberCreate,
    session: SessionDep,
    caller: AdminOnly,
    settings: SettingsDep,
) -> MemberCreated:
    member, api_key = service.register(
        session,
        body.id,
        body.name,
        body.jurisdiction,
        str(body.inbox_url),
        caller.name,
        settings.inbox_policy,
        str(body.health_url) if body.health_url is not None else None,
    )
    return MemberCreated(**_read(member, admin=True).model_dump(), api_key=api_key)


@router.get(
    "",
    response_model=list[MemberRead],
    responses=responses(401, 403),
    summary="Service discovery: every member cloud",
    description="Every member with its jurisdiction, status and health (`up`, `down` or "
    "`unknown`, as the broker's last check of its `/readyz` found it); inbox and health URLs, "
    "and why a check failed, are shown to admins and to the member itself only.",
)
def list_members(session: SessionDep, caller: CurrentCaller) -> list[MemberRead]:
    return [_read(m, _sees_all(caller, m.id)) for m in service.list_members(session)]


@router.get(
    "/{member_id}",
    response_model=MemberRead,
    responses=responses(401, 403, 404, 422),
    summary="One member cloud",
    description="Its jurisdiction, status and health; the inbox and health URLs, and why a "
    "check failed, are shown to admins and to the member itself only.",
)
def get_member(member_id: MemberId, session: SessionDep, caller: CurrentCaller) -> MemberRead:
    return _read(service.get(session, member_id), _sees_all(caller, member_id))


def _sees_all(caller: Caller, member_id: str) -> bool:
    return caller.is_admin or caller.member_id == member_id


def _read(member: Member, admin: bool) -> MemberRead:
    """Members see each other without the broker's addresses of them (inbox, health check)
    and without why a check failed (a reason can name an address of the member's network);
    ``admin``: an admin, or the member itself, sees them."""
    return MemberRead(
        id=member.id,
        name=member.name,
        jurisdiction=member.jurisdiction,
        inbox_url=member.inbox_url if admin else None,
        health_url=health_url(member.inbox_url, member.health_url) if admin else None,
        status=member.status,
        health=health_read(member.health, admin=admin),
        created_at=member.created_at,
    )


@router.post(
    "/{member_id}/suspend",
    response_model=MemberRead,
    responses=responses(401, 403, 404, 422),
    summary="Suspend a member (admin): its key stops working, nothing is sent to it",
    description="Transfers to a suspended member are refused; its keys are kept, so "
    "reactivating it restores them. Audited.",
)
def suspend_member(member_id: MemberId, session: SessionDep, caller: AdminOnly) -> MemberRead:
    return _read(service.set_status(session, member_id, MemberStatus.SUSPENDED, caller.name), True)


@router.post(
    "/{member_id}/reactivate",
    response_model=MemberRead,
    responses=responses(401, 403, 404, 422),
    summary="Reactivate a member (admin)",
    description="Its keys work again and transfers may be sent to it. Audited.",
)
def reactivate_member(member_id: MemberId, session: SessionDep, caller: AdminOnly) -> MemberRead:
    return _read(service.set_status(session, member_id, MemberStatus.ACTIVE, caller.name), True)


@router.post(
    "/{member_id}/api-key",
    status_code=201,
    response_model=KeyRotated,
    responses=responses(401, 403, 404, 422),
    summary="Rotate a member's API key (the member itself or an admin)",
    description="Issues a new key, shown once. The key used until now keeps working for "
    "`BROKER_KEY_GRACE_SECONDS` (a day by default), so the member can switch without a gap; "
    "in that grace period it makes ordinary calls but cannot rotate again (403): whoever holds "
    "only the old key cannot outlive the rotation. After a revocation, this is how an admin "
    "gives the member a key again.",
)
def rotate_member_key(
    member_id: MemberId, session: SessionDep, caller: CurrentCaller, settings: SettingsDep
) -> KeyRotated:
    if not caller.is_admin and caller.member_id != member_id:
        raise Forbidden("A member can rotate only its own key")
    if caller.rotated_out_key:
        raise Forbidden(
            "This key was rotated out: until its grace period ends it makes ordinary calls, but "
            "it manages no keys. Rotate with the member's current key, or ask an administrator"
        )
    member, api_key = service.rotate_key(
        session, member_id, caller.name, settings.key_grace_seconds
    )
    return KeyRotated(api_key=api_key, previous_key_valid_until=member.previous_key_expires_at)


@router.post(
    "/{member_id}/api-key/revoke",
    response_model=MemberRead,
    responses=responses(401, 403, 404, 422),
    summary="Revoke every key of a member at once (admin)",
    description="The current key and a previous one still in its grace period stop working "
    "now; issue a new key with `POST /v1/members/{member_id}/api-key`.",
)
def revoke_member_keys(member_id: MemberId, session: SessionDep, caller: AdminOnly) -> MemberRead:
    return _read(service.revoke_keys(session, member_id, caller.name), True)

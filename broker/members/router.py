from typing import Annotated

from fastapi import APIRouter, Path

from broker.deps import AdminOnly, CurrentCaller, SessionDep
from broker.errors import responses
from broker.members import service
from broker.members.models import ACTIVE, SUSPENDED
from broker.members.schemas import MemberCreate, MemberCreated, MemberRead

router = APIRouter(prefix="/v1/members", tags=["Members"])
MemberId = Annotated[str, Path(description="Member cloud id", max_length=64)]


@router.post(
    "",
    status_code=201,
    response_model=MemberCreated,
    responses=responses(400, 401, 403, 409, 413, 422),
    summary="Register a member cloud (admin); its API key is shown once",
)
def register(body: MemberCreate, session: SessionDep, caller: AdminOnly) -> MemberCreated:
    member, api_key = service.register(
        session, body.id, body.name, body.jurisdiction, str(body.inbox_url), caller.name
    )
    return MemberCreated(**MemberRead.model_validate(member).model_dump(), api_key=api_key)


@router.get(
    "",
    response_model=list[MemberRead],
    responses=responses(401, 403),
    summary="Service discovery: every member cloud",
)
def list_members(session: SessionDep, _: CurrentCaller) -> list[MemberRead]:
    return [MemberRead.model_validate(m) for m in service.list_members(session)]


@router.get("/{member_id}", response_model=MemberRead, responses=responses(401, 403, 404, 422))
def get_member(member_id: MemberId, session: SessionDep, _: CurrentCaller) -> MemberRead:
    return MemberRead.model_validate(service.get(session, member_id))


@router.post(
    "/{member_id}/suspend",
    response_model=MemberRead,
    responses=responses(401, 403, 404, 422),
    summary="Suspend a member (admin): its key stops working, nothing is sent to it",
)
def suspend(member_id: MemberId, session: SessionDep, caller: AdminOnly) -> MemberRead:
    return MemberRead.model_validate(service.set_status(session, member_id, SUSPENDED, caller.name))


@router.post(
    "/{member_id}/reactivate",
    response_model=MemberRead,
    responses=responses(401, 403, 404, 422),
    summary="Reactivate a member (admin)",
)
def reactivate(member_id: MemberId, session: SessionDep, caller: AdminOnly) -> MemberRead:
    return MemberRead.model_validate(service.set_status(session, member_id, ACTIVE, caller.name))

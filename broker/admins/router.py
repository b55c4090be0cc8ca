from typing import Annotated

from fastapi import APIRouter, Path

from broker.admins import service
from broker.admins.schemas import (
    NAME_PATTERN,
    AdministratorCreate,
    AdministratorCreated,
    AdministratorRead,
)
from broker.errors import example, responses
from broker.web.deps import AdminOnly, SessionDep

router = APIRouter(prefix="/v1/admins", tags=["Administrators"])
Name = Annotated[str, Path(description="Administrator name", pattern=NAME_PATTERN)]

TAKEN = example(
    409,
    "conflict",
    "Conflict",
    "An administrator 'awa.diop' exists or existed: names are never reused, so the audit log "
    "names one person each; choose another",
    "/v1/admins",
)
LAST = example(
    409,
    "conflict",
    "Conflict",
    "'bootstrap' is the last active administrator: create another one first (POST /v1/admins), "
    "so that someone can still administer the federation",
    "/v1/admins/bootstrap/revoke",
)
UNKNOWN = example(
    404, "not-found", "Not found", "No administrator 'nobody'", "/v1/admins/nobody/revoke"
)


@router.post(
    "",
    status_code=201,
    response_model=AdministratorCreated,
    responses=responses(400, 401, 403, 409, 413, 422, examples={409: TAKEN}),
    summary="Create a named administrator (admin); its token is shown once",
    description="The broker keeps only a hash of the token: copy it from this answer. What the "
    "new administrator changes is recorded as `admin:<name>` in the audit log and in the "
    "`created_by` of policy versions. Names are never reused. Audited.",
)
def create_admin(
    body: AdministratorCreate, session: SessionDep, caller: AdminOnly
) -> AdministratorCreated:
    administrator, token = service.create(session, body.name, caller.name)
    read = AdministratorRead.model_validate(administrator)
    return AdministratorCreated(**read.model_dump(), token=token)


@router.get(
    "",
    response_model=list[AdministratorRead],
    responses=responses(401, 403),
    summary="Every administrator, active or revoked (admin)",
    description="Oldest first; `bootstrap` is the token of `BROKER_ADMIN_TOKEN`. Tokens are "
    "never shown again.",
)
def list_admins(session: SessionDep, _: AdminOnly) -> list[AdministratorRead]:
    return [AdministratorRead.model_validate(a) for a in service.list_administrators(session)]


@router.post(
    "/{name}/revoke",
    response_model=AdministratorRead,
    responses=responses(401, 403, 404, 409, 422, examples={404: UNKNOWN, 409: LAST}),
    summary="Revoke an administrator's token (admin)",
    description="The token answers 401 from now on; the name stays in the list and the audit "
    "log. Revoking `bootstrap` retires `BROKER_ADMIN_TOKEN`. The last active administrator "
    "cannot be revoked (409). Revoking a revoked administrator changes nothing. Audited.",
)
def revoke_admin(name: Name, session: SessionDep, caller: AdminOnly) -> AdministratorRead:
    return AdministratorRead.model_validate(service.revoke(session, name, caller.name))

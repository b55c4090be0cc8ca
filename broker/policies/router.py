from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Path, Response

from broker.deps import AdminOnly, CurrentCaller, SessionDep
from broker.errors import MAX_INT32, NotFound, responses
from broker.fsla.models import FSLARecord
from broker.policies import service
from broker.policies.models import PolicyVersion
from broker.policies.schemas import PolicyCheck, PolicyRead

router = APIRouter(prefix="/v1/policies", tags=["F-SLA policies"])
Jurisdiction = Annotated[
    str,
    Path(
        description="Jurisdiction code, e.g. SN, FR, EU",
        pattern=r"^[A-Za-z][A-Za-z0-9]{1,9}$",
    ),
]


def _read(row: PolicyVersion) -> PolicyRead:
    return PolicyRead(
        jurisdiction=row.jurisdiction,
        version=row.version,
        created_at=row.created_at,
        created_by=row.created_by,
        record=service.record_of(row),
    )


@router.get(
    "",
    response_model=list[PolicyRead],
    responses=responses(401, 403),
    summary="Current version of every F-SLA record",
)
def list_policies(session: SessionDep, _: CurrentCaller) -> list[PolicyRead]:
    return [_read(row) for row in service.list_current(session)]


@router.get(
    "/{jurisdiction}",
    response_model=PolicyRead,
    responses=responses(401, 403, 404, 422),
    summary="Current version of one F-SLA record",
)
def get_policy(jurisdiction: Jurisdiction, session: SessionDep, _: CurrentCaller) -> PolicyRead:
    return _read(service.current(session, jurisdiction))


@router.get(
    "/{jurisdiction}/versions",
    response_model=list[PolicyRead],
    responses=responses(401, 403, 404, 422),
    summary="Every version, oldest first",
)
def list_versions(
    jurisdiction: Jurisdiction, session: SessionDep, _: CurrentCaller
) -> list[PolicyRead]:
    return [_read(row) for row in service.versions(session, jurisdiction)]


@router.get(
    "/{jurisdiction}/versions/{number}",
    response_model=PolicyRead,
    responses=responses(401, 403, 404, 422),
    summary="One past or current version",
)
def get_version(
    jurisdiction: Jurisdiction,
    number: Annotated[int, Path(ge=1, le=MAX_INT32)],
    session: SessionDep,
    _: CurrentCaller,
) -> PolicyRead:
    return _read(service.version(session, jurisdiction, number))


@router.put(
    "/{jurisdiction}",
    response_model=PolicyRead,
    responses={
        **responses(400, 401, 403, 409, 413, 422),
        201: {"model": PolicyRead, "description": "Version 1 of a new jurisdiction"},
    },
    summary="Save a new version (admin)",
    description="Every change makes a new version; older versions stay readable. "
    "Sending the current record unchanged makes no version. Send `If-Match` with the "
    "version you edited to refuse the save (409) if someone saved in between.",
)
def put_policy(
    jurisdiction: Jurisdiction,
    record: FSLARecord,
    session: SessionDep,
    caller: AdminOnly,
    response: Response,
    if_match: Annotated[
        str | None, Header(description="Version you edited, e.g. 3", pattern=r'^"?\d+"?$')
    ] = None,
) -> PolicyRead:
    expected = int(if_match.strip('"')) if if_match else None
    row, created = service.update(session, jurisdiction, record, caller.name, expected)
    response.headers["ETag"] = f'"{row.version}"'
    if created:
        response.status_code = 201 if row.version == 1 else 200
    return _read(row)


@router.post(
    "/{jurisdiction}/check",
    response_model=PolicyCheck,
    responses=responses(400, 401, 403, 413, 422),
    summary="Check a draft record without saving it (admin)",
)
def check_policy(
    jurisdiction: Jurisdiction,
    session: SessionDep,
    _: AdminOnly,
    document: Annotated[
        dict[str, Any], Body(description="A full F-SLA record, as you would PUT it")
    ],
) -> PolicyCheck:
    record = service.check_draft(jurisdiction, document)
    try:
        current = service.current(session, jurisdiction)
    except NotFound:
        current = None
    stored = record.model_dump(mode="json")
    return PolicyCheck(
        valid=True,
        record=record,
        current_version=current.version if current else None,
        changed_fields=sorted(
            k for k in stored if current is None or current.document.get(k) != stored[k]
        ),
    )

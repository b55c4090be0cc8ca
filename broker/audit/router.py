from typing import Annotated

from fastapi import APIRouter, Query

from broker.audit import service
from broker.audit.schemas import AuditEntryRead, AuditPage, AuditVerification
from broker.errors import MAX_INT64, responses
from broker.web.deps import AdminOnly, SessionDep

router = APIRouter(prefix="/v1/audit", tags=["Audit"])


@router.get(
    "",
    response_model=AuditPage,
    responses=responses(401, 403, 422),
    summary="The audit log, oldest first (admin)",
    description="Every decision, policy change and member change, hash-chained. Keyset paging: "
    "pass the page's `next_after` as `after` for the next page.",
)
def list_audit_entries(
    session: SessionDep,
    _: AdminOnly,
    after: Annotated[int, Query(ge=0, le=MAX_INT64, description="Last id already read")] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> AuditPage:
    rows = service.entries(session, after, limit)
    return AuditPage(
        items=[AuditEntryRead.model_validate(r) for r in rows],
        next_after=rows[-1].id if len(rows) == limit else None,
    )


@router.get(
    "/verify",
    response_model=AuditVerification,
    responses=responses(401, 403),
    summary="Recompute the hash chain and report the first entry that does not fit",
    description="Reads the whole log; `valid` is false with the first entry whose hash or "
    "link to the previous one does not match (admin).",
)
def verify_audit_chain(session: SessionDep, _: AdminOnly) -> AuditVerification:
    result = service.verify(session)
    return AuditVerification(
        valid=result.valid,
        entries_checked=result.entries_checked,
        first_invalid_id=result.first_invalid_id,
        reason=result.reason,
        head_id=result.head_id,
        head_hash=result.head_hash,
    )

"""F-SLA records over HTTP: read (with ETag), save (PUT, If-Match), patch (RFC 7396), check,
replay a draft over past transfers, diff and page through versions. Bodies that are not valid
F-SLA records are answered as ``invalid-policy`` problems, whichever of PUT, PATCH, /check and
/replay they came to."""

from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from broker import flows
from broker.errors import (
    MAX_INT32,
    InvalidPolicy,
    UnsupportedMediaType,
    example,
    responses,
)
from broker.fsla.changes import ABSENT, Change
from broker.fsla.models import FSLARecord
from broker.policies import service
from broker.policies.models import PolicyVersion
from broker.policies.schemas import (
    EXAMPLE_PATCH,
    EXAMPLE_RECORD,
    PolicyChange,
    PolicyCheck,
    PolicyDiff,
    PolicyRead,
    PolicyReplay,
    PolicyVersionPage,
    PolicyWarningRead,
    ReplayedRule,
    ReplayedTransfer,
)
from broker.web.deps import AdminOnly, CurrentCaller, SessionDep
from broker.wire.problem_model import field_errors

MERGE_PATCH = "application/merge-patch+json"


class PolicyRoute(APIRoute):
    """Answers a request body that fails the F-SLA model as ``invalid-policy``, as PATCH (whose
    patched record the service validates) does."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handle(request)
            except RequestValidationError as error:
                raw = list(error.errors())
                in_body = [e for e in raw if e.get("loc", ("",))[0] == "body"]
                if not in_body or len(in_body) != len(raw) or raw[0]["type"] == "json_invalid":
                    raise
                errors = field_errors(in_body, model=FSLARecord)
                raise InvalidPolicy(
                    f"{errors[0]['field']}: {errors[0]['reason']}", errors=errors
                ) from None

        return route


async def merge_patch_body(request: Request) -> None:
    """Refuse a PATCH body in another media type (415, with ``Accept-Patch``, RFC 5789).

    A dependency declared after the caller's, so an unauthenticated request is still a 401;
    it runs before the body's validation errors are raised."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip()
    if media_type.lower() != MERGE_PATCH:
        raise UnsupportedMediaType(
            f"Send the patch as {MERGE_PATCH} (RFC 7396), not "
            f"{media_type or 'without a Content-Type'}",
            accept_patch=MERGE_PATCH,
        )


router = APIRouter(prefix="/v1/policies", tags=["F-SLA policies"], route_class=PolicyRoute)
Jurisdiction = Annotated[
    str,
    Path(
        description="Jurisdiction code, e.g. SN, FR, EU",
        pattern=r"^[A-Za-z][A-Za-z0-9]{1,9}$",
        examples=["SN"],
    ),
]
Version = Annotated[int, Path(ge=1, le=MAX_INT32, examples=[1])]
IfMatch = Annotated[
    str | None,
    Header(
        description='The `ETag` of the version you edited, e.g. `"3"` (from GET). Required '
        "once the jurisdiction has a record: without it the answer is 428, with another "
        "version 412. `*` saves over whatever is current.",
        max_length=200,
    ),
]
ETAG_HEADER = {"ETag": {"description": 'The version, quoted: `"3"`', "schema": {"type": "string"}}}

INVALID_POLICY = example(
    422,
    "invalid-policy",
    "Invalid F-SLA record",
    "allowed_destinations: 'france' is not a jurisdiction code (e.g. FR, EU) or '*'",
    "/v1/policies/SN",
)
MALFORMED = example(
    422,
    "malformed-json",
    "Malformed JSON",
    "The body is not valid JSON: Expecting ',' delimiter at line 12, column 5",
    "/v1/policies/SN",
)
NO_RECORD = example(
    404, "not-found", "Not found", "No F-SLA record for jurisdiction 'ZZ'", "/v1/policies/ZZ"
)
STALE = example(
    412,
    "version-mismatch",
    "The record changed since you read it",
    'SN is at version 4 (ETag "4"), not "3": read it again and reapply your change',
    "/v1/policies/SN",
)
MISSING_IF_MATCH = example(
    428,
    "precondition-required",
    "If-Match required",
    "Send If-Match with the ETag that GET /v1/policies/SN gave for the version you edited "
    '(e.g. If-Match: "3"), so that a save cannot overwrite someone else\'s',
    "/v1/policies/SN",
)
NOT_ADMIN = example(
    403,
    "forbidden",
    "Forbidden",
    "This route is for the federation's administrators",
    "/v1/policies/SN",
)
RACE = example(
    409,
    "conflict",
    "Conflict",
    "SN was changed by someone else at the same time: read it again and retry",
    "/v1/policies/SN",
)
WRONG_MEDIA_TYPE = example(
    415,
    "unsupported-media-type",
    "Unsupported media type",
    f"Send the patch as {MERGE_PATCH} (RFC 7396), not application/json",
    "/v1/policies/SN",
)
EDIT_EXAMPLES = {
    403: NOT_ADMIN,
    404: NO_RECORD,
    409: RACE,
    412: STALE,
    415: WRONG_MEDIA_TYPE,
    422: INVALID_POLICY,
    428: MISSING_IF_MATCH,
}
READ_EXAMPLES = {404: NO_RECORD}


def _read(row: PolicyVersion) -> PolicyRead:
    return PolicyRead(
        jurisdiction=row.jurisdiction,
        version=row.version,
        created_at=row.created_at,
        created_by=row.created_by,
        record=service.record_of(row),
    )


def _change(change: Change) -> PolicyChange:
    return PolicyChange(
        path=change.path,
        old=None if change.old is ABSENT else change.old,
        new=None if change.new is ABSENT else change.new,
        text=str(change),
    )


def _saved(row: PolicyVersion, created: bool, response: Response) -> PolicyRead:
    response.headers["ETag"] = service.etag(row.version)
    if created and row.version == 1:
        response.status_code = 201
    return _read(row)


@router.get(
    "",
    response_model=list[PolicyRead],
    responses=responses(401, 403),
    summary="Current version of every F-SLA record",
    description="One entry per jurisdiction, its newest version. Any member or admin may read.",
)
def list_policies(session: SessionDep, _: CurrentCaller) -> list[PolicyRead]:
    return [_read(row) for row in service.list_current(session)]


@router.get(
    "/{jurisdiction}",
    response_model=PolicyRead,
    responses={
        **responses(401, 403, 404, 422, examples=READ_EXAMPLES),
        200: {"headers": ETAG_HEADER},
    },
    summary="Current version of one F-SLA record",
    description="The `ETag` header names the version: send it back as `If-Match` to PUT or "
    "PATCH, so that your save is refused (412) if someone saved in between.",
)
def get_policy(
    jurisdiction: Jurisdiction, session: SessionDep, _: CurrentCaller, response: Response
) -> PolicyRead:
    row = service.current(session, jurisdiction)
    response.headers["ETag"] = service.etag(row.version)
    return _read(row)


@router.get(
    "/{jurisdiction}/versions",
    response_model=PolicyVersionPage,
    responses={
        **responses(401, 403, 404, 422, examples=READ_EXAMPLES),
        200: {
            "headers": {
                "Link": {
                    "description": "The next page, when there is one: `</v1/policies/SN/"
                    'versions?after=20&limit=20>; rel="next"`',
                    "schema": {"type": "string"},
                }
            }
        },
    },
    summary="Versions of one F-SLA record, oldest first, a page at a time",
    description="Keyset paging, as `GET /v1/audit` does: pass the page's `next_after` as "
    '`after` for the next one; the `Link` header (RFC 8288, rel="next") holds the same '
    "request as a relative URL. "
    "`next_after` is null on the last page.",
)
def list_policy_versions(
    jurisdiction: Jurisdiction,
    session: SessionDep,
    _: CurrentCaller,
    request: Request,
    response: Response,
    after: Annotated[
        int, Query(ge=0, le=MAX_INT32, description="Last version number already read")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> PolicyVersionPage:
    rows, next_after = service.versions_page(session, jurisdiction, after, limit)
    if next_after is not None:
        query = request.url.include_query_params(after=next_after, limit=limit).query
        response.headers["Link"] = f'<{request.url.path}?{query}>; rel="next"'
    return PolicyVersionPage(items=[_read(row) for row in rows], next_after=next_after)


@router.get(
    "/{jurisdiction}/versions/{number}",
    response_model=PolicyRead,
    responses={
        **responses(401, 403, 404, 422, examples=READ_EXAMPLES),
        200: {"headers": ETAG_HEADER},
    },
    summary="One past or current version",
    description="Versions are never changed or deleted: a decision names the versions it "
    "applied, and this reads them back. `ETag` names the version.",
)
def get_policy_version(
    jurisdiction: Jurisdiction,
    number: Version,
    session: SessionDep,
    _: CurrentCaller,
    response: Response,
) -> PolicyRead:
    row = service.version(session, jurisdiction, number)
    response.headers["ETag"] = service.etag(row.version)
    return _read(row)


@router.get(
    "/{jurisdiction}/versions/{old}/diff/{new}",
    response_model=PolicyDiff,
    responses=responses(401, 403, 404, 422, examples=READ_EXAMPLES),
    summary="What changed between two versions",
    description="Each field that differs from version `old` to version `new`, as "
    "`path: old -> new` (the format of `/check`). `new` may be the earlier one.",
)
def diff_policy_versions(
    jurisdiction: Jurisdiction,
    old: Version,
    new: Version,
    session: SessionDep,
    _: CurrentCaller,
) -> PolicyDiff:
    found = service.diff(session, jurisdiction, old, new)
    return PolicyDiff(
        jurisdiction=jurisdiction.upper(),
        old_version=old,
        new_version=new,
        changes=[_change(c) for c in found],
    )


@router.put(
    "/{jurisdiction}",
    response_model=PolicyRead,
    responses={
        **responses(400, 401, 403, 409, 412, 413, 422, 428, examples=EDIT_EXAMPLES),
        200: {"description": "Saved as a new version (or unchanged)", "headers": ETAG_HEADER},
        201: {
            "model": PolicyRead,
            "description": "Version 1 of a new jurisdiction",
            "headers": ETAG_HEADER,
        },
    },
    summary="Save a whole record as a new version (admin)",
    description="Send the whole record (GET it first: the example is Senegal's seed record, "
    "not the current one) and its `ETag` as `If-Match`. Without `If-Match` the save is refused "
    "with 428, with a stale one with 412 (RFC 9110 conditional requests), so Execute cannot "
    "overwrite someone else's change. Every change makes a new version; older versions stay "
    "readable; sending the current record unchanged makes no version. A new jurisdiction's "
    "first version needs no `If-Match` and answers 201. To change a few fields, PATCH.",
)
def put_policy(
    jurisdiction: Jurisdiction,
    record: Annotated[
        FSLARecord,
        Body(openapi_examples={"senegal": {"summary": "SN seed", "value": EXAMPLE_RECORD}}),
    ],
    session: SessionDep,
    caller: AdminOnly,
    response: Response,
    if_match: IfMatch = None,
) -> PolicyRead:
    row, created = flows.update_policy(session, jurisdiction, caller.name, if_match, record=record)
    return _saved(row, created, response)


@router.patch(
    "/{jurisdiction}",
    response_model=PolicyRead,
    responses={
        **responses(400, 401, 403, 404, 409, 412, 413, 415, 422, 428, examples=EDIT_EXAMPLES),
        200: {"description": "Saved as a new version (or unchanged)", "headers": ETAG_HEADER},
    },
    summary="Change some fields of a record: JSON merge patch (admin)",
    description=f"A JSON merge patch (RFC 7396, `Content-Type: {MERGE_PATCH}`) names only "
    "what changes: an object merges into the current record, `null` removes a key (the field "
    "goes back to its default: no rule), a list replaces the whole list. The patched record is "
    "validated as PUT validates it and saved as a new version; a patch that changes nothing "
    "makes none. `If-Match` is required as for PUT.",
)
def patch_policy(
    jurisdiction: Jurisdiction,
    patch: Annotated[
        dict[str, Any],
        Body(
            media_type=MERGE_PATCH,
            openapi_examples={
                "raise-k": {
                    "summary": "Raise k for data leaving the country",
                    "value": EXAMPLE_PATCH,
                }
            },
        ),
    ],
    session: SessionDep,
    caller: AdminOnly,
    _: Annotated[None, Depends(merge_patch_body)],
    response: Response,
    if_match: IfMatch = None,
) -> PolicyRead:
    row, created = flows.update_policy(
        session, jurisdiction, caller.name, if_match, merge_patch=patch
    )
    return _saved(row, created, response)


@router.post(
    "/{jurisdiction}/check",
    response_model=PolicyCheck,
    responses=responses(400, 401, 403, 413, 422, examples=EDIT_EXAMPLES),
    summary="Check a draft record without saving it (admin)",
    description="Validates the draft as PUT would, then lists each field that differs from the "
    "current version (`path: old -> new`) and warnings: destinations with no F-SLA record, "
    "purposes or attributes spelled twice, destinations with no purpose in common, rules that "
    "contradict each other. Nothing is saved.",
)
def check_policy(
    jurisdiction: Jurisdiction,
    record: Annotated[
        FSLARecord,
        Body(openapi_examples={"senegal": {"summary": "SN seed", "value": EXAMPLE_RECORD}}),
    ],
    session: SessionDep,
    _: AdminOnly,
) -> PolicyCheck:
    result = service.check(session, jurisdiction, record)
    return PolicyCheck(
        valid=True,
        record=result.record,
        current_version=result.current_version,
        changed_fields=sorted({c.field for c in result.changes}),
        changes=[_change(c) for c in result.changes],
        warnings=[
            PolicyWarningRead(code=w.code, path=w.path, message=w.message) for w in result.warnings
        ],
    )


def _replayed_rule(change) -> ReplayedRule:
    return ReplayedRule(
        rule=change.rule,
        scope=change.scope,
        jurisdiction=change.jurisdiction,
        attribute=change.attribute,
        before=change.before,
        after=change.after,
        detail=change.detail,
    )


@router.post(
    "/{jurisdiction}/replay",
    response_model=PolicyReplay,
    responses=responses(400, 401, 403, 413, 422, examples=EDIT_EXAMPLES),
    summary="Replay a draft record over past transfers: which decisions would change (admin)",
    description="Judges the stored report of each past transfer from or to a member of the "
    "jurisdiction (the last `limit`, newest first; `since` and `before` bound their time) "
    "under the draft, the other party's record at the version the decision used, with the "
    "functions the broker decides with. Answers the verdict then and under the draft (before "
    "any remedy), the rules that newly fail or pass, and what cannot be replayed because the "
    "data is not kept (linkage with earlier releases, whether a remedy exists, some "
    "identifier checks). Only transfers where something changes, or that cannot be replayed, "
    "are listed. Nothing is saved.",
)
def replay_policy(
    jurisdiction: Jurisdiction,
    record: Annotated[
        FSLARecord,
        Body(openapi_examples={"senegal": {"summary": "SN seed", "value": EXAMPLE_RECORD}}),
    ],
    session: SessionDep,
    _: AdminOnly,
    limit: Annotated[int, Query(ge=1, le=1000, description="Most transfers examined")] = 100,
    since: Annotated[
        datetime | None, Query(description="Only transfers decided at or after this time")
    ] = None,
    before: Annotated[
        datetime | None,
        Query(description="Only transfers decided before this time (`next_before` pages)"),
    ] = None,
) -> PolicyReplay:
    page = flows.replay_policy(session, jurisdiction, record, limit, since, before)
    items = [
        ReplayedTransfer(
            transfer_id=transfer.id,
            created_at=transfer.created_at,
            source_id=transfer.source_id,
            destination_id=transfer.destination_id,
            purpose=transfer.purpose,
            policy_versions=transfer.policy_versions,
            status=found.status,
            replayable=found.replayable,
            old_verdict=found.old_verdict,
            new_verdict=found.new_verdict,
            verdict_changed=found.verdict_changed,
            newly_failed=[_replayed_rule(c) for c in found.newly_failed],
            newly_passed=[_replayed_rule(c) for c in found.newly_passed],
            not_replayed=list(found.not_replayed),
            delivered_passes=found.delivered_passes,
            note=found.note,
        )
        for transfer, found in page.replays
        if found.changed or not found.replayable
    ]
    replays = [found for _, found in page.replays]
    return PolicyReplay(
        jurisdiction=jurisdiction.upper(),
        examined=len(replays),
        verdicts_changed=sum(r.verdict_changed for r in replays),
        rules_changed=sum(r.changed and not r.verdict_changed for r in replays),
        not_replayable=sum(not r.replayable for r in replays),
        items=items,
        next_before=page.next_before,
    )

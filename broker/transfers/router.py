from contextlib import ExitStack
from typing import Annotated

from fastapi import APIRouter, Form, Header, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from sqlalchemy.orm import Session

from broker import flows, reports
from broker.callers import Caller
from broker.config import Settings
from broker.errors import (
    FAULT_EXAMPLES,
    MAX_INT32,
    NotImplementedHere,
    Unprocessable,
    example,
    responses,
)
from broker.intake import references
from broker.intake.uploads import spooled
from broker.transfers import dry_runs, service
from broker.transfers.models import TransferJob
from broker.transfers.schemas import TransferForm, TransferJobRead, TransferPage, TransferRead
from broker.web.deps import (
    CurrentCaller,
    CurrentMember,
    RateLimitedMember,
    SessionDep,
    SettingsDep,
)
from broker.wire.headers import IDEMPOTENCY_KEY
from broker.wire.statuses import JobState, TransferKind, TransferStatus

RESPOND_ASYNC = "respond-async"

router = APIRouter(prefix="/v1/transfers", tags=["Transfers"])
SUBMIT_EXAMPLES = {
    404: example(404, "not-found", "Not found", "No member cloud 'fr-reserch'", "/v1/transfers"),
    409: example(
        409,
        "idempotency-key-reused",
        "Idempotency key reused with another request",
        "Idempotency key 'upload-42' was used for another request (transfer 7c9e...); use a "
        "new key for a new request",
        "/v1/transfers",
    ),
    422: example(
        422,
        "unknown-column",
        "Unknown column",
        "Quasi-identifier 'zip' is not a column of the dataset; its columns: Age, Gender, Disease",
        "/v1/transfers",
    ),
}
NO_TRANSFER = {404: example(404, "not-found", "Not found", "No transfer '7c9e...'")}
NO_REPORTS = {
    501: example(
        501,
        "not-implemented",
        "Not implemented by this installation",
        "The HTML report needs matplotlib and Jinja2 (matplotlib is not installed): "
        "pip install 'fedbroker[reports]'",
    )
}


# The form model holds the file too, so that its fields stay the top level of one multipart body
# (FastAPI nests a form model beside any other form parameter).
TransferFormDep = Annotated[TransferForm, Form(media_type="multipart/form-data")]


@router.post(
    "",
    response_model=TransferRead,
    responses=responses(
        400, 401, 403, 404, 409, 413, 422, 429, 503, 507, examples=SUBMIT_EXAMPLES | FAULT_EXAMPLES
    )
    | {
        202: {
            "model": TransferJobRead,
            "description": "Accepted: decided in the background; poll the `Location`",
        }
    },
    summary="Ask the broker to send a dataset to another member (member only)",
    description="The broker measures the dataset, checks the source's export rules and the "
    "destination's import rules, and answers with its decision: `approved` (the data is "
    "delivered to the destination's inbox), `anonymization_required` (with the failing rules "
    "and a remedy) or `rejected`. A policy that says no is a 200 answer, not an error. "
    f"`{IDEMPOTENCY_KEY}`: the same key with the same request replays the first answer; with "
    "another request it is refused (409). Large uploads, and any request with "
    f"`Prefer: {RESPOND_ASYNC}`, are decided in the background: `202 Accepted` with a "
    "`Location` to poll.",
)
async def create_transfer(
    session: SessionDep,
    caller: RateLimitedMember,
    settings: SettingsDep,
    response: Response,
    http_request: Request,
    form: TransferFormDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    prefer: Annotated[
        str | None,
        Header(
            max_length=200,
            description=f"`{RESPOND_ASYNC}` (RFC 7240): decide in the background and answer "
            "202 Accepted at once",
        ),
    ] = None,
) -> TransferRead:
    # All of the request's blocking work (the upload's copy into the spool, the decision, its
    # recording) in one hand-off to the thread pool. A def route with a def generator
    # dependency for the copy took four (the dependency in and out, the route, and the
    # validation of its answer), each a wake-up of a thread that contends for the GIL.
    return await run_in_threadpool(
        _create_transfer,
        session,
        caller,
        settings,
        response,
        http_request,
        form,
        idempotency_key,
        prefer,
    )


def _create_transfer(
    session: Session,
    caller: Caller,
    settings: Settings,
    response: Response,
    http_request: Request,
    form: TransferForm,
    idempotency_key: str | None,
    prefer: str | None,
) -> TransferRead | JSONResponse:
    with ExitStack() as request_files:  # the upload's copy is removed when the request ends
        upload = None
        if form.file is not None:
            file = form.file
            upload = request_files.enter_context(
                spooled(file.file, settings.spool_dir, file.filename, file.content_type)
            )
        request = form.request(idempotency_key)
        location = form.location.strip()
        if (upload is None) == (not location):
            raise Unprocessable(
                "Send the data as `file`, or name where it lies as `location` (by reference): "
                "one of the two"
            )
        source = upload or references.resolve(location, caller.member_id, settings)
        asked_async = RESPOND_ASYNC in _preferences(prefer)
        in_background = asked_async or source.size > settings.decide_in_background_above_bytes
        in_background = in_background and form.kind == TransferKind.MICRODATA
        monitoring = http_request.app.state.monitoring
        with monitoring.timed("transfer"):
            submitted = service.submit(
                session,
                caller,
                source,
                request,
                settings,
                in_background,
                handoff=http_request.app.state.delivery_worker,
            )
        headers = {"Idempotent-Replayed": "true"} if submitted.replayed else {}
        if submitted.job is not None:
            http_request.app.state.job_runner.wake()
            headers |= {"Location": _job_location(submitted.job.id), "Retry-After": "1"}
            if asked_async:
                headers["Preference-Applied"] = RESPOND_ASYNC
            body = _job_read(session, submitted.job, caller).model_dump(mode="json")
            return JSONResponse(body, status_code=202, headers=headers)
        transfer = submitted.transfer
        if not submitted.replayed and not form.dry_run:
            monitoring.count_decision(transfer.status, transfer.rules)
        approved = transfer.status == TransferStatus.APPROVED and not form.dry_run
        if approved and not submitted.handed_over:  # else its delivery is under way
            http_request.app.state.delivery_worker.wake()
        response.headers.update(headers)
        return TransferRead.of(transfer, dry_run=form.dry_run)


def _preferences(prefer: str | None) -> set[str]:
    """The preference tokens of a ``Prefer`` header (RFC 7240), without their parameters."""
    tokens = (part.split(";")[0].split("=")[0] for part in (prefer or "").split(","))
    return {token.strip().lower() for token in tokens if token.strip()}


def _job_location(job_id: str) -> str:
    return f"{router.prefix}/jobs/{job_id}"


def _job_read(session, job: TransferJob, caller: Caller) -> TransferJobRead:
    read = TransferJobRead.model_validate(job)
    if job.state == JobState.DONE:
        transfer = service.get_visible(session, caller, job.id)
        read = read.model_copy(update={"transfer": TransferRead.of(transfer, caller=caller)})
    return read


@router.get(
    "/jobs/{job_id}",
    response_model=TransferJobRead,
    responses=responses(401, 403, 404, 422),
    summary="Where a transfer decided in the background stands (its source or an admin)",
    description="The `Location` of a `202 Accepted` answer. Poll it (`Retry-After` says how "
    "soon) until `state` is `done`, with the decision in `transfer`, or `failed`, with the "
    "problem in `problem`. A job survives a broker restart.",
)
def get_transfer_job(
    job_id: Annotated[str, Path(max_length=36)],
    session: SessionDep,
    caller: CurrentCaller,
    response: Response,
) -> TransferJobRead:
    job = service.get_visible_job(session, caller, job_id)
    if job.state not in (JobState.DONE, JobState.FAILED):
        response.headers["Retry-After"] = "1"
    return _job_read(session, job, caller)


@router.get(
    "",
    response_model=TransferPage,
    responses=responses(401, 403, 422),
    summary="Transfers the caller sent or received (admins: all), newest first",
    description="Offset paging with `total`; filter by decision with `status`. A destination "
    "sees only what it received, not the sender's report.",
)
def list_transfers(
    session: SessionDep,
    caller: CurrentCaller,
    status: Annotated[TransferStatus | None, Query()] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> TransferPage:
    rows, total = service.list_visible(session, caller, status, offset, limit)
    return TransferPage(
        items=[TransferRead.of(t, caller=caller) for t in rows],
        total=total,
        offset=offset,
        limit=limit,
    )


@router.post(
    "/{transfer_id}/redeliver",
    response_model=TransferRead,
    responses=responses(401, 403, 404, 409, 422),
    summary="Deliver a failed transfer again (its source or an admin)",
    description="The delivery becomes pending with its attempts reset, and the worker tries the "
    "destination's registered inbox again; audited. 409 when the delivery did not fail, or when "
    "its data is no longer held (failed deliveries keep it for "
    "`BROKER_DELIVERY_FAILED_RETENTION_SECONDS`, a week by default).",
)
def redeliver_transfer(
    transfer_id: Annotated[str, Path(max_length=36)],
    session: SessionDep,
    caller: CurrentCaller,
    http_request: Request,
) -> TransferRead:
    flows.redeliver(session, caller, transfer_id)
    http_request.app.state.delivery_worker.wake()
    return TransferRead.of(service.get_visible(session, caller, transfer_id), caller=caller)


@router.post(
    "/{transfer_id}/erasure",
    response_model=TransferRead,
    responses=responses(
        401,
        403,
        404,
        409,
        422,
        examples={
            404: example(404, "not-found", "Not found", "No transfer '7c9e...' delivered to you")
        },
    ),
    summary="Say you deleted what a transfer delivered (its destination)",
    description="Once the retention a delivery carried (`retain_until`, from the F-SLA records "
    "and the agreement) ends, the destination's member cloud deletes the data and says so "
    "here; the broker records when (`erased_at`) and audits it, noting a deletion after the "
    "limit. Saying it twice is the same as once.",
)
def erase_transfer(
    transfer_id: Annotated[str, Path(max_length=36)],
    session: SessionDep,
    caller: CurrentMember,
) -> TransferRead:
    service.record_erasure(session, caller, transfer_id)
    return TransferRead.of(service.get_visible(session, caller, transfer_id), caller=caller)


@router.get(
    "/dry-runs/{dry_run_id}/data",
    response_class=FileResponse,
    responses=responses(401, 403, 404, 422)
    | {
        200: {
            "description": "The data, as an attachment",
            "content": {"application/octet-stream": {}},
        }
    },
    summary="What a dry run's transfer would deliver (the member that ran it, or an admin)",
    description="The table the transfer would deliver, written as a delivery is (in the format "
    "that came in, person key removed, rows shuffled on purpose), kept "
    "`BROKER_DRY_RUN_RETENTION_SECONDS` (an hour by default) after the dry run; 404 after.",
)
def get_dry_run_data(
    dry_run_id: Annotated[str, Path(max_length=36, pattern=r"^[0-9a-f-]{36}$")],
    caller: CurrentCaller,
    settings: SettingsDep,
) -> FileResponse:
    path, meta = dry_runs.fetch(settings, caller, dry_run_id)
    response = FileResponse(path, filename=meta["filename"])
    response.headers["Content-Type"] = meta["media_type"]
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@router.get(
    "/{transfer_id}/report",
    response_class=HTMLResponse,
    responses={200: {"description": "The report page", "content": {"text/html": {}}}}
    | responses(401, 403, 404, 422, 501, examples=NO_TRANSFER | NO_REPORTS),
    summary="One transfer's report as a page to look at (its source, its destination or an admin)",
    description="HTML: the verdict in words, then plots (inline SVG, no script) of the class "
    "sizes, the risk per record, the risk per attribute and, for an anonymized transfer, the "
    "figures before and after and the information kept per attribute. The same people see it "
    "as `GET /v1/transfers/{transfer_id}`, and the same content: the destination's page has the "
    "decision, not the measurement of the upload. 501 when the broker was installed without the "
    "`reports` extra.",
)
def get_transfer_report(
    transfer_id: Annotated[str, Path(max_length=36)], session: SessionDep, caller: CurrentCaller
) -> HTMLResponse:
    read = TransferRead.of(service.get_visible(session, caller, transfer_id), caller=caller)
    try:
        page = reports.transfer_page(read.model_dump(mode="json"))
    except reports.ReportUnavailable as error:
        raise NotImplementedHere(str(error)) from None
    return HTMLResponse(page, headers=reports.PAGE_HEADERS)


@router.get(
    "/{transfer_id}",
    response_model=TransferRead,
    responses=responses(401, 403, 404, 422, examples=NO_TRANSFER),
    summary="One transfer and its decision (its source, its destination or an admin)",
    description="The source and admins see the report, the rules and the remedy; the "
    "destination sees the decision and what it received.",
)
def get_transfer(
    transfer_id: Annotated[str, Path(max_length=36)], session: SessionDep, caller: CurrentCaller
) -> TransferRead:
    return TransferRead.of(service.get_visible(session, caller, transfer_id), caller=caller)

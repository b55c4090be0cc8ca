"""The console's pages (``/console/``): each calls the service its API route calls, with the
signed-in caller, so a person sees what the API would show them and nothing more.

Pages of the same data as the API: the overview and the reports are the API's own pages
(:mod:`broker.reports`); the F-SLA edit form saves through :func:`broker.flows.update_policy`
with the version it was opened at as ``If-Match``, so a stale edit is refused as the API
refuses it, and the page shows what changed meanwhile.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from pydantic import ValidationError

from broker import flows, reports
from broker.audit import service as audit
from broker.catalog import service as catalog
from broker.console import sessions
from broker.errors import (
    MAX_INT32,
    MAX_INT64,
    Conflict,
    Forbidden,
    InvalidPolicy,
    NotAuthenticated,
    NotImplementedHere,
    VersionMismatch,
)
from broker.federation import service as federation
from broker.federation.overview import DEFAULT_DAYS, MAX_DAYS
from broker.fsla.models import FSLARecord
from broker.negotiations import service as negotiations
from broker.policies import service as policies
from broker.transfers import service as transfers
from broker.transfers.schemas import TransferRead
from broker.web.console import (
    COOKIE,
    PREFIX,
    SIGN_IN,
    SIGN_IN_COOKIE,
    ConsoleRoute,
    Person,
    check_csrf,
    forget_cookie,
    lifetimes,
    redirect,
    render,
    set_cookie,
)
from broker.web.deps import SessionDep, SettingsDep, caller_of, credential_of, require_admin
from broker.wire import json_limits
from broker.wire.problem_model import field_errors
from broker.wire.statuses import TransferStatus

log = logging.getLogger("broker.console")
router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute, include_in_schema=False)
STYLESHEET = FilePath(__file__).parent / "static" / "console.css"
# A secret longer than this is no token or key of ours (they are 40-odd characters).
MAX_SECRET = 512
MAX_RECORD_CHARS = 200_000  # an F-SLA record as the edit form sends it
SIGN_IN_FAILED = (
    "This token or key was not accepted. Check that you pasted the whole of it; if it is "
    "right, it may have been revoked or its member suspended: ask the federation's "
    "administrators."
)
Jurisdiction = Annotated[str, Path(pattern=r"^[A-Za-z][A-Za-z0-9]{1,9}$")]
Version = Annotated[int, Path(ge=1, le=MAX_INT32)]
Page = Annotated[int, Query(ge=0, le=MAX_INT32)]
PAGE_SIZE = 20


@router.get("/console.css")
def stylesheet() -> FileResponse:
    return FileResponse(
        STYLESHEET,
        media_type="text/css",
        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
    )


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_page(request: Request) -> Response:
    return _sign_in_form(request)


def _sign_in_form(request: Request, message: str | None = None, status_code: int = 200):
    """The form with a fresh CSRF token, also set as a cookie the POST must match (there is no
    session yet to hold it)."""
    token = sessions.new_csrf_token()
    response = render("sign_in.html", status_code=status_code, csrf_token=token, message=message)
    set_cookie(response, request, SIGN_IN_COOKIE, token, max_age=3600)
    return response


@router.post("/sign-in", response_class=HTMLResponse)
def sign_in(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    secret: Annotated[str, Form(max_length=MAX_SECRET)],
    csrf_token: Annotated[str, Form(max_length=100)],
) -> Response:
    expected = request.cookies.get(SIGN_IN_COOKIE)
    if not sessions.same_token(expected, csrf_token):
        raise Forbidden(
            "This form is out of date or was not sent from the console: open the sign-in page again"
        )
    client = request.client.host if request.client else "unknown"
    request.app.state.console_sign_in_limiter.check(client, who="This address")
    credential = credential_of(settings, secret.strip())
    try:
        caller = caller_of(session, settings, credential)
    except (NotAuthenticated, Forbidden) as error:
        log.warning("console sign-in refused from %s: %s", client, error.detail)
        return _sign_in_form(request, SIGN_IN_FAILED, status_code=401)
    log.info("console sign-in: %s from %s", caller.name, client)
    sessions.close(session, request.cookies.get(COOKIE))  # a browser holds one session
    cookie = sessions.open_session(session, credential.kind, credential.digest, lifetimes(settings))
    response = redirect(f"{PREFIX}/")
    set_cookie(
        response, request, COOKIE, cookie, max_age=int(settings.console_session_hours * 3600)
    )
    forget_cookie(response, request, SIGN_IN_COOKIE)
    return response


@router.post("/sign-out")
def sign_out(
    request: Request,
    session: SessionDep,
    person: Person,
    csrf_token: Annotated[str, Form(max_length=100)],
) -> Response:
    check_csrf(person, csrf_token)
    sessions.close(session, request.cookies.get(COOKIE))
    response = redirect(SIGN_IN)
    forget_cookie(response, request, COOKIE)
    return response


@router.get("/", response_class=HTMLResponse)
def home(session: SessionDep, person: Person) -> Response:
    return render("home.html", person)


@router.get("/overview", response_class=HTMLResponse)
def overview(
    session: SessionDep,
    person: Person,
    days: Annotated[int, Query(ge=1, le=MAX_DAYS)] = DEFAULT_DAYS,
) -> Response:
    """The API's overview page (its own headers: inline styles, no script)."""
    require_admin(person.caller)
    found = federation.federation_overview(session, days)
    return _report(lambda: reports.overview_page(found.model_dump(mode="json")))


def _report(draw) -> HTMLResponse:
    try:
        page = draw()
    except reports.ReportUnavailable as error:
        raise NotImplementedHere(str(error)) from None
    return HTMLResponse(page, headers=reports.PAGE_HEADERS)


@router.get("/transfers", response_class=HTMLResponse)
def transfer_list(
    session: SessionDep,
    person: Person,
    status: Annotated[TransferStatus | None, Query()] = None,
    offset: Page = 0,
) -> Response:
    rows, total = transfers.list_visible(session, person.caller, status, offset, PAGE_SIZE)
    items = [TransferRead.of(row, caller=person.caller) for row in rows]
    return render(
        "transfers.html",
        person,
        items=items,
        total=total,
        offset=offset,
        size=PAGE_SIZE,
        status=status.value if status else "",
        statuses=[s.value for s in TransferStatus],
    )


@router.get("/transfers/{transfer_id}", response_class=HTMLResponse)
def transfer_page(
    session: SessionDep,
    person: Person,
    transfer_id: Annotated[str, Path(max_length=36)],
) -> Response:
    found = transfers.get_visible(session, person.caller, transfer_id)
    return render("transfer.html", person, transfer=TransferRead.of(found, caller=person.caller))


@router.get("/transfers/{transfer_id}/report", response_class=HTMLResponse)
def transfer_report(
    session: SessionDep, person: Person, transfer_id: Annotated[str, Path(max_length=36)]
) -> Response:
    found = transfers.get_visible(session, person.caller, transfer_id)
    read = TransferRead.of(found, caller=person.caller).model_dump(mode="json")
    return _report(lambda: reports.transfer_page(read))


@router.get("/policies", response_class=HTMLResponse)
def policy_list(session: SessionDep, person: Person) -> Response:
    return render("policies.html", person, rows=policies.list_current(session))


@router.get("/policies/{jurisdiction}", response_class=HTMLResponse)
def policy_page(
    session: SessionDep,
    person: Person,
    jurisdiction: Jurisdiction,
    after: Page = 0,
) -> Response:
    row = policies.current(session, jurisdiction)
    versions, next_after = policies.versions_page(session, jurisdiction, after, PAGE_SIZE)
    return render(
        "policy.html",
        person,
        row=row,
        shown=row,
        document=_document(row),
        versions=versions,
        next_after=next_after,
    )


@router.get("/policies/{jurisdiction}/versions/{number}", response_class=HTMLResponse)
def policy_version_page(
    session: SessionDep,
    person: Person,
    jurisdiction: Jurisdiction,
    number: Version,
) -> Response:
    row = policies.current(session, jurisdiction)
    shown = policies.version(session, jurisdiction, number)
    return render(
        "policy.html",
        person,
        row=row,
        shown=shown,
        document=_document(shown),
        versions=[],
        next_after=None,
    )


@router.get("/policies/{jurisdiction}/diff", response_class=HTMLResponse)
def policy_diff(
    session: SessionDep,
    person: Person,
    jurisdiction: Jurisdiction,
    old: Annotated[int, Query(ge=1, le=MAX_INT32)],
    new: Annotated[int, Query(ge=1, le=MAX_INT32)],
) -> Response:
    changes = policies.diff(session, jurisdiction, old, new)
    row = policies.current(session, jurisdiction)
    return render("diff.html", person, row=row, old=old, new=new, changes=changes)


@router.get("/policies/{jurisdiction}/edit", response_class=HTMLResponse)
def policy_edit_form(session: SessionDep, person: Person, jurisdiction: Jurisdiction) -> Response:
    require_admin(person.caller)
    row = policies.current(session, jurisdiction)
    return render(
        "edit.html",
        person,
        row=row,
        version=row.version,
        draft=_document(row),
        messages=[],
        changed=None,
    )


@router.post("/policies/{jurisdiction}/edit", response_class=HTMLResponse)
def policy_edit(
    session: SessionDep,
    person: Person,
    jurisdiction: Jurisdiction,
    csrf_token: Annotated[str, Form(max_length=100)],
    version: Annotated[int, Form(ge=1, le=MAX_INT32)],
    record: Annotated[str, Form(max_length=MAX_RECORD_CHARS)],
) -> Response:
    """Save the edited record as a new version if ``version`` is still the current one."""
    check_csrf(person, csrf_token)
    caller = require_admin(person.caller)
    parsed = _parse_record(record)
    if isinstance(parsed, list):
        return _edit_refused(session, person, jurisdiction, version, record, parsed)
    try:
        flows.update_policy(
            session, jurisdiction, caller.name, policies.etag(version), record=parsed
        )
    except VersionMismatch as error:
        current = policies.current(session, jurisdiction).version
        changed = (
            policies.diff(session, jurisdiction, version, current) if version < current else None
        )
        return _edit_refused(
            session,
            person,
            jurisdiction,
            version,
            record,
            [error.detail],
            changed=changed,
            status_code=error.status,
        )
    except (InvalidPolicy, Conflict) as error:  # e.g. another jurisdiction, a race
        return _edit_refused(
            session,
            person,
            jurisdiction,
            version,
            record,
            [error.detail],
            status_code=error.status,
        )
    return redirect(f"{PREFIX}/policies/{jurisdiction.upper()}")


def _parse_record(text: str) -> FSLARecord | list[str]:
    """The record the form holds, or what is wrong with it, in the API's words."""
    try:
        return FSLARecord.model_validate(json_limits.loads(text))
    except json_limits.JsonTooComplex as error:
        return [str(error)]
    except json.JSONDecodeError as error:
        return [
            f"The record is not valid JSON: {error.msg} at line {error.lineno}, column "
            f"{error.colno}"
        ]
    except ValidationError as error:
        errors = field_errors(error.errors(), model=FSLARecord)
        return [f"{e['field']}: {e['reason']}" for e in errors]


def _edit_refused(
    session,
    person,
    jurisdiction,
    version,
    draft,
    messages,
    *,
    changed=None,
    status_code=422,
) -> Response:
    """The form again, the draft kept, with why it was not saved (and, when someone saved in
    between, what they changed since the version the draft was made from)."""
    row = policies.current(session, jurisdiction)
    return render(
        "edit.html",
        person,
        status_code=status_code,
        row=row,
        version=version,
        draft=draft,
        messages=messages,
        changed=changed,
    )


def _document(row) -> str:
    return json.dumps(policies.record_of(row).model_dump(mode="json"), indent=2, ensure_ascii=False)


@router.get("/catalog", response_class=HTMLResponse)
def catalog_page(session: SessionDep, person: Person, offset: Page = 0) -> Response:
    entries, total = catalog.search(
        session,
        jurisdiction=None,
        purpose=None,
        column=None,
        keyword=None,
        provider=None,
        offset=offset,
        limit=PAGE_SIZE,
    )
    return render(
        "catalog.html",
        person,
        entries=[(entry.as_dict(), entry.described()) for entry in entries],
        total=total,
        offset=offset,
        size=PAGE_SIZE,
    )


@router.get("/negotiations", response_class=HTMLResponse)
def negotiation_list(session: SessionDep, person: Person, offset: Page = 0) -> Response:
    found, total = negotiations.page(session, person.caller, [], offset, PAGE_SIZE)
    return render(
        "negotiations.html",
        person,
        items=found,
        total=total,
        offset=offset,
        size=PAGE_SIZE,
    )


@router.get("/negotiations/{negotiation_id}", response_class=HTMLResponse)
def negotiation_page(
    session: SessionDep,
    person: Person,
    negotiation_id: Annotated[str, Path(max_length=36)],
) -> Response:
    found = negotiations.get(session, person.caller, negotiation_id)
    events = negotiations.events(session, found)
    return render("negotiation.html", person, negotiation=found, events=events)


@router.get("/audit", response_class=HTMLResponse)
def audit_page(
    session: SessionDep,
    person: Person,
    after: Annotated[int, Query(ge=0, le=MAX_INT64)] = 0,
) -> Response:
    require_admin(person.caller)
    verification = audit.verify(session)
    rows = audit.entries(session, after, PAGE_SIZE)
    return render(
        "audit.html",
        person,
        verification=verification,
        rows=rows,
        next_after=rows[-1].id if len(rows) == PAGE_SIZE else None,
    )

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from broker import reports
from broker.errors import NotImplementedHere, example, responses
from broker.federation import service
from broker.federation.overview import DEFAULT_DAYS, MAX_DAYS
from broker.federation.schemas import FederationOverview
from broker.web.deps import AdminOnly, SessionDep

router = APIRouter(prefix="/v1/federation", tags=["Federation"])
Days = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_DAYS,
        description=f"Decisions over time: the last `days` UTC days, today included (1 to "
        f"{MAX_DAYS})",
    ),
]
NOT_ADMIN = {
    403: example(403, "forbidden", "Forbidden", "This route is for the federation's administrators")
}
NO_REPORTS = {
    501: example(
        501,
        "not-implemented",
        "Not implemented by this installation",
        "The HTML report needs matplotlib and Jinja2 (matplotlib is not installed): "
        "pip install 'fedbroker[reports]'",
    )
}
OVERVIEW = (
    "Every member with its jurisdiction, status and health (as the broker's last check of its "
    "`/readyz` found it, with the reason of a failure) and the count per health state; every "
    "decision ever made per (source jurisdiction, destination jurisdiction) pair and status; "
    "decisions per UTC day and status over the last `days` days (days without any included); "
    "and the approved transfers' deliveries per state (`held`: pending, to a member that is "
    "down). Counted by the database: as fast for a million transfers as for a few."
)


@router.get(
    "/overview",
    response_model=FederationOverview,
    responses=responses(401, 403, 422, examples=NOT_ADMIN),
    summary="The federation at a glance (admin): members, health, transfers, deliveries",
    description=OVERVIEW + " The same as a page: `GET /v1/federation/overview.html`.",
)
def get_federation_overview(
    session: SessionDep, _: AdminOnly, days: Days = DEFAULT_DAYS
) -> FederationOverview:
    return service.federation_overview(session, days)


@router.get(
    "/overview.html",
    response_class=HTMLResponse,
    responses={200: {"description": "The overview page", "content": {"text/html": {}}}}
    | responses(401, 403, 422, 501, examples=NOT_ADMIN | NO_REPORTS),
    summary="The federation overview as a page to look at (admin)",
    description="HTML: the same figures as `GET /v1/federation/overview`, each plot (inline "
    "SVG, no script, nothing fetched) with its table. 501 when the broker was installed "
    "without the `reports` extra.",
)
def get_federation_overview_page(
    session: SessionDep, _: AdminOnly, days: Days = DEFAULT_DAYS
) -> HTMLResponse:
    found = service.federation_overview(session, days)
    try:
        page = reports.overview_page(found.model_dump(mode="json"))
    except reports.ReportUnavailable as error:
        raise NotImplementedHere(str(error)) from None
    return HTMLResponse(page, headers=reports.PAGE_HEADERS)

from typing import Annotated

from fastapi import APIRouter, Query

from broker.deps import AdminOnly, SessionDep
from broker.errors import example, responses
from broker.federation import service
from broker.federation.overview import DEFAULT_DAYS, MAX_DAYS
from broker.federation.schemas import FederationOverview

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
    description=OVERVIEW,
)
def get_federation_overview(
    session: SessionDep, _: AdminOnly, days: Days = DEFAULT_DAYS
) -> FederationOverview:
    return service.federation_overview(session, days)

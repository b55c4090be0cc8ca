from fastapi import APIRouter, Request
from sqlalchemy.exc import SQLAlchemyError

from broker.errors import NotReady, responses
from broker.storage.db import schema_is_current

router = APIRouter(tags=["Health"])


@router.get(
    "/livez",
    summary="The process answers",
    description="Liveness probe: 200 while the process serves requests; touches nothing else.",
)
def get_liveness() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses=responses(503),
    summary="The database answers and its schema is at the newest migration",
    description="Readiness probe: 503 (with the reason) until the broker can serve requests.",
)
def get_readiness(request: Request) -> dict[str, str]:
    try:
        with request.app.state.sessionmaker() as session:
            current = schema_is_current(session.connection())
    except SQLAlchemyError as error:
        raise NotReady(f"The database does not answer: {type(error).__name__}") from None
    if not current:
        raise NotReady(
            "The database schema is not at the newest migration: run 'fedbroker db upgrade'"
        )
    return {"status": "ready"}

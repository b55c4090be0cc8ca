"""The member cloud's side of the data market: publish its datasets in the federation's catalog,
browse it, and negotiate agreements as consumer or provider, through the broker.

Each route calls the broker (:mod:`fedbroker.client`) and answers what it answered;
an error the broker answers is passed through as its problem+json, a broker that does not
answer is 502. Before confirming an agreement (``/verify``), this member checks the broker's
signature of it with the keys it pinned: it does not take the broker's word for what it signed.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Annotated, Any

import pyarrow.parquet as pq
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from broker.wire.signing import SignatureError
from fedbroker.client import BrokerAnsweredError, BrokerKeys, BrokerUnavailable, Client, plain
from member_cloud.downloads import media_type
from member_cloud.errors import PROBLEM_MEDIA_TYPE, BadRequest, BrokerUnreachable, responses
from member_cloud.schemas import CounterAsk, Ending, NegotiationAsk, OfferTerms, Publication
from member_cloud.storage import DatasetStore

catalog = APIRouter(prefix="/catalog", tags=["Catalog"])
negotiations = APIRouter(prefix="/negotiations", tags=["Negotiations"])
PASSED_THROUGH = responses(400, 401, 403, 404, 409, 412, 413, 422, 502)


async def _broker(request: Request) -> Client:
    return request.app.state.broker


async def _datasets(request: Request) -> DatasetStore:
    return request.app.state.datasets


async def _keys(request: Request) -> BrokerKeys:
    return request.app.state.broker_keys


BrokerDep = Annotated[Client, Depends(_broker)]
DatasetsDep = Annotated[DatasetStore, Depends(_datasets)]
KeysDep = Annotated[BrokerKeys, Depends(_keys)]


def _answered(call: Callable[[], Any], status: int = 200) -> JSONResponse:
    """The broker's answer, or its problem passed through; 502 when it does not answer."""
    try:
        return JSONResponse(plain(call()), status_code=status)
    except BrokerAnsweredError as error:
        return JSONResponse(error.problem, status_code=error.status, media_type=PROBLEM_MEDIA_TYPE)
    except BrokerUnavailable as error:
        raise BrokerUnreachable(
            f"The broker at {error.base_url} does not answer: {error.reason}"
        ) from None


@catalog.post(
    "",
    responses={201: {"description": "The catalog entry the broker keeps"}, **PASSED_THROUGH},
    status_code=201,
    summary="Publish one of this member's datasets in the federation's catalog",
    description="Describes the local dataset (its columns, read from the file, with the roles "
    "given) at the broker, never its data; with `measure` (the default) also sends the file "
    "for the broker to measure, which keeps only the figures.",
)
def publish(body: Publication, store: DatasetsDep, broker: BrokerDep) -> JSONResponse:
    names = _columns(store, body.dataset)
    declared = [*body.quasi_identifiers, *body.sensitive, *filter(None, [body.person_key])]
    unknown = [name for name in declared if name not in names]
    if unknown:
        raise BadRequest(
            f"No column {', '.join(map(repr, unknown))} in {body.dataset!r}; its columns: "
            + ", ".join(names)
        )
    roles = {name: "quasi_identifier" for name in body.quasi_identifiers}
    roles |= {name: "sensitive" for name in body.sensitive}
    if body.person_key:
        roles[body.person_key] = "person_key"
    description = {
        "title": body.title,
        "description": body.description,
        "keywords": body.keywords,
        "columns": [{"name": name, "role": roles.get(name, "other")} for name in names],
        "format": _format(body.dataset),
        "purposes": body.purposes,
    }

    def call() -> Any:
        entry = broker.publish_dataset(description)
        if body.measure:
            with store.open(body.dataset) as data:
                entry = broker.measure_dataset(
                    entry.id, data, body.dataset, media_type(body.dataset)
                )
        return entry

    return _answered(call, 201)


@catalog.get(
    "",
    responses={200: {"description": "The catalog (JSON-LD), as the broker answered"}},
    summary="Browse the federation's catalog, with the offers this member could get",
)
def browse(
    broker: BrokerDep,
    jurisdiction: Annotated[str | None, Query(max_length=16)] = None,
    purpose: Annotated[str | None, Query(max_length=200)] = None,
    column: Annotated[str | None, Query(max_length=200)] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> JSONResponse:
    return _answered(
        lambda: broker.list_catalog(jurisdiction, purpose, column, q, None, offset, limit)
    )


@negotiations.post(
    "",
    status_code=201,
    responses=PASSED_THROUGH,
    summary="Ask for a catalogued dataset, for a purpose (as consumer)",
)
def ask(body: NegotiationAsk, broker: BrokerDep) -> JSONResponse:
    return _answered(
        lambda: broker.create_negotiation(
            body.dataset_id, body.purpose, body.columns, body.retention_days
        ),
        201,
    )


@negotiations.get("", responses=PASSED_THROUGH, summary="The negotiations this member is in")
def listed(broker: BrokerDep) -> JSONResponse:
    return _answered(broker.list_negotiations)


@negotiations.get("/{negotiation_id}", responses=PASSED_THROUGH, summary="One negotiation")
def one(negotiation_id: str, broker: BrokerDep) -> JSONResponse:
    return _answered(lambda: broker.get_negotiation(negotiation_id))


@negotiations.post(
    "/{negotiation_id}/offer",
    responses=PASSED_THROUGH,
    summary="Offer the broker's terms, or stricter ones (as provider)",
)
def offer(negotiation_id: str, body: OfferTerms, broker: BrokerDep) -> JSONResponse:
    return _answered(lambda: broker.offer_negotiation(negotiation_id, body.terms))


@negotiations.post(
    "/{negotiation_id}/request",
    responses=PASSED_THROUGH,
    summary="Answer an offer with another request (as consumer)",
)
def counter(negotiation_id: str, body: CounterAsk, broker: BrokerDep) -> JSONResponse:
    return _answered(
        lambda: broker.request_negotiation(negotiation_id, body.columns, body.retention_days)
    )


@negotiations.post(
    "/{negotiation_id}/accept",
    responses=PASSED_THROUGH,
    summary="Accept the offer (as consumer): the broker signs the agreement",
)
def accept(negotiation_id: str, broker: BrokerDep) -> JSONResponse:
    return _answered(lambda: broker.accept_negotiation(negotiation_id))


@negotiations.post(
    "/{negotiation_id}/verify",
    responses=PASSED_THROUGH,
    summary="Check the broker's signature of the agreement, then confirm it (as consumer)",
    description="Reads the agreement, checks its signature against the broker keys this member "
    "pinned (fetching them again once for a key it does not know), and only then tells the "
    "broker (FINALIZED). A signature that does not verify is 502 and nothing is confirmed.",
)
def verify(negotiation_id: str, broker: BrokerDep, keys: KeysDep) -> JSONResponse:
    def call() -> Any:
        agreement_id = broker.get_negotiation(negotiation_id).agreement_id
        if agreement_id:
            agreement = broker.get_agreement(agreement_id)
            try:
                keys.verify_document(agreement.signature, agreement.document)
            except SignatureError as error:
                raise BrokerUnreachable(
                    f"The broker's signature of agreement {agreement_id} does not verify "
                    f"({error}): it was not confirmed"
                ) from None
        return broker.verify_negotiation(negotiation_id)

    return _answered(call)


@negotiations.post(
    "/{negotiation_id}/terminate",
    responses=PASSED_THROUGH,
    summary="End a negotiation (either party)",
)
def terminate(negotiation_id: str, body: Ending, broker: BrokerDep) -> JSONResponse:
    return _answered(lambda: broker.terminate_negotiation(negotiation_id, body.reason))


def _columns(store: DatasetStore, name: str) -> list[str]:
    """A local dataset's column names, read from its file's header (Parquet: its schema)."""
    path = store.path(name)
    fmt = _format(name)
    try:
        if fmt == "parquet":
            return list(pq.read_schema(path).names)
        if fmt == "json":
            records = json.loads(path.read_text(encoding="utf-8"))
            return list(records[0]) if records else []
        with path.open(encoding="utf-8-sig", newline="") as file:
            head = file.read(64 * 1024)
        dialect = csv.Sniffer().sniff(head, delimiters=",;\t|") if head else csv.excel
        return next(csv.reader(io.StringIO(head), dialect), [])
    except (OSError, ValueError, csv.Error, IndexError, KeyError, TypeError) as error:
        raise BadRequest(f"The columns of {name!r} cannot be read: {error}") from None


def _format(name: str) -> str:
    lowered = name.lower()
    if lowered.endswith(".parquet"):
        return "parquet"
    return "json" if lowered.endswith(".json") else "csv"

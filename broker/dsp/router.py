"""The Dataspace Protocol's HTTPS binding, provider side, under :data:`BASE`.

Routes stay thin: the message is a model (:mod:`broker.dsp.messages`), the work is the market's
(:mod:`broker.dsp.binding`), every error a protocol error document (:mod:`broker.dsp.route`).
A member's API key is the bearer token (the protocol leaves identity to the dataspace).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse

from broker.dsp import binding, documents, transfers
from broker.dsp.documents import ProtocolError
from broker.dsp.messages import (
    AgreementVerification,
    CatalogRequest,
    ContractRequest,
    NegotiationEvent,
    NegotiationTermination,
    TransferMessage,
    TransferRequest,
)
from broker.dsp.route import (
    CATALOG_ERROR,
    NEGOTIATION_ERROR,
    TRANSFER_ERROR,
    documented,
    protocol_route,
)
from broker.dsp.transfer_states import Move
from broker.errors import MAX_INT32
from broker.web.deps import CurrentMember, SessionDep, SettingsDep

BASE = "/dsp/2025-1"
PARTICIPANT = "fedbroker"
TAGS = ["Dataspace Protocol"]

well_known = APIRouter(tags=TAGS)
catalog_router = APIRouter(prefix=BASE, tags=TAGS, route_class=protocol_route(CATALOG_ERROR))
negotiation_router = APIRouter(
    prefix=BASE, tags=TAGS, route_class=protocol_route(NEGOTIATION_ERROR)
)
transfer_router = APIRouter(prefix=BASE, tags=TAGS, route_class=protocol_route(TRANSFER_ERROR))
ProviderPid = Annotated[str, Path(description="The negotiation's providerPid", max_length=80)]
ProcessPid = Annotated[str, Path(description="The transfer process's providerPid", max_length=80)]


def _json(document: dict[str, Any], status: int = 200, **headers: str) -> JSONResponse:
    return JSONResponse(document, status, headers=headers, media_type=documents.MEDIA_TYPE)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/") + BASE


@well_known.get(
    "/.well-known/dspace-version",
    operation_id="get_dspace_version",
    response_class=JSONResponse,
    responses={
        200: {
            "description": "The version document",
            "content": {documents.MEDIA_TYPE: {"schema": {"type": "object"}}},
        }
    },
    summary="The Dataspace Protocol versions the broker speaks, and where",
    description="Without authorization, as the protocol requires: release 2025-1 over HTTPS, "
    f"at `{BASE}`.",
)
def dspace_version() -> JSONResponse:
    return _json(documents.version_document(BASE, PARTICIPANT))


@catalog_router.post(
    "/catalog/request",
    operation_id="dsp_request_catalog",
    response_class=JSONResponse,
    responses=documented(CATALOG_ERROR, 200, 400, 401, 403),
    summary="The catalog: the datasets you can get an offer for (CatalogRequestMessage)",
    description="A Catalog of the datasets the broker can make you an offer for, with the "
    "offers; 100 at a time, the next page in the `Link` header. Filters are not supported.",
)
def catalog_request(
    message: Annotated[CatalogRequest, Body()],
    session: SessionDep,
    caller: CurrentMember,
    request: Request,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
) -> JSONResponse:
    if message.filter:
        raise ProtocolError(400, "Catalog filters are not supported: ask for the whole catalog")
    base = _base(request)
    datasets, more = binding.catalog_page(session, caller, offset, base)
    headers = {}
    if more:
        following = request.url.include_query_params(offset=offset + binding.PAGE)
        headers["Link"] = f'<{following}>; rel="next"'
    return _json(documents.catalog(datasets, base, PARTICIPANT), **headers)


@catalog_router.get(
    "/catalog/datasets/{dataset_id}",
    operation_id="dsp_get_dataset",
    response_class=JSONResponse,
    responses=documented(CATALOG_ERROR, 200, 400, 401, 403, 404),
    summary="One dataset with its offers",
    description="The Dataset, with the offers the broker can make you; 404 when it can make "
    "you none.",
)
def catalog_dataset(
    dataset_id: Annotated[str, Path(max_length=36)],
    session: SessionDep,
    caller: CurrentMember,
    request: Request,
) -> JSONResponse:
    return _json(binding.dataset(session, caller, dataset_id, _base(request)))


@negotiation_router.post(
    "/negotiations/request",
    operation_id="dsp_request_negotiation",
    response_class=JSONResponse,
    responses=documented(NEGOTIATION_ERROR, 201, 400, 401, 403, 404, 409),
    status_code=201,
    summary="Start a contract negotiation (initial ContractRequestMessage)",
    description="The broker checks the request against both F-SLA records at once, as "
    "`POST /v1/negotiations` does: the negotiation is REQUESTED (waiting for the provider's "
    "offer) or TERMINATED with the reason. The same consumerPid again answers the same "
    "negotiation.",
)
def negotiation_request(
    message: Annotated[ContractRequest, Body()],
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
) -> JSONResponse:
    seen, new = binding.request(session, caller, message, settings)
    location = f"{BASE}/negotiations/{documents.PROVIDER_PID}{seen.negotiation.id}"
    return _json(seen.document(), 201 if new else 200, Location=location)


@negotiation_router.get(
    "/negotiations/{provider_pid}",
    operation_id="dsp_get_negotiation",
    response_class=JSONResponse,
    responses=documented(NEGOTIATION_ERROR, 200, 400, 401, 403, 404),
    summary="A contract negotiation",
    description="The ContractNegotiation: its pids and state. 404 when you take no part in it.",
)
def negotiation(provider_pid: ProviderPid, session: SessionDep, caller: CurrentMember):
    return _json(binding.get(session, caller, provider_pid).document())


@negotiation_router.post(
    "/negotiations/{provider_pid}/request",
    operation_id="dsp_counter_request_negotiation",
    response_class=JSONResponse,
    responses=documented(NEGOTIATION_ERROR, 200, 400, 401, 403, 404),
    summary="Ask again after the provider's offer (ContractRequestMessage)",
    description="OFFERED -> REQUESTED: the broker checks the records again and the "
    "negotiation waits for the provider's next offer.",
)
def negotiation_counter_request(
    provider_pid: ProviderPid,
    message: Annotated[ContractRequest, Body()],
    session: SessionDep,
    caller: CurrentMember,
) -> JSONResponse:
    return _json(binding.counter_request(session, caller, provider_pid, message).document())


@negotiation_router.post(
    "/negotiations/{provider_pid}/events",
    operation_id="dsp_accept_negotiation",
    response_class=JSONResponse,
    responses=documented(NEGOTIATION_ERROR, 200, 400, 401, 403, 404),
    summary="Accept the provider's offer (ContractNegotiationEventMessage, ACCEPTED)",
    description="The broker checks the offer against the records as they are now and signs "
    "the agreement (AGREED), or ends the negotiation with the reason.",
)
def negotiation_event(
    provider_pid: ProviderPid,
    message: Annotated[NegotiationEvent, Body()],
    session: SessionDep,
    caller: CurrentMember,
    request: Request,
) -> JSONResponse:
    keyring = request.app.state.keyring
    return _json(binding.event(session, caller, provider_pid, message, keyring).document())


@negotiation_router.post(
    "/negotiations/{provider_pid}/agreement/verification",
    operation_id="dsp_verify_agreement",
    response_class=JSONResponse,
    responses=documented(NEGOTIATION_ERROR, 200, 400, 401, 403, 404),
    summary="Verify the agreement (ContractAgreementVerificationMessage)",
    description="AGREED -> VERIFIED, and the broker finalizes it (FINALIZED): the agreement "
    "is in force.",
)
def negotiation_verification(
    provider_pid: ProviderPid,
    message: Annotated[AgreementVerification, Body()],
    session: SessionDep,
    caller: CurrentMember,
) -> JSONResponse:
    return _json(binding.verification(session, caller, provider_pid, message).document())


@negotiation_router.post(
    "/negotiations/{provider_pid}/termination",
    operation_id="dsp_terminate_negotiation",
    response_class=JSONResponse,
    responses=documented(NEGOTIATION_ERROR, 200, 400, 401, 403, 404),
    summary="End the negotiation (ContractNegotiationTerminationMessage)",
    description="Any state but FINALIZED and TERMINATED -> TERMINATED, with the message's reason.",
)
def negotiation_termination(
    provider_pid: ProviderPid,
    message: Annotated[NegotiationTermination, Body()],
    session: SessionDep,
    caller: CurrentMember,
) -> JSONResponse:
    return _json(binding.termination(session, caller, provider_pid, message).document())


@transfer_router.post(
    "/transfers/request",
    operation_id="dsp_request_transfer",
    response_class=JSONResponse,
    responses=documented(TRANSFER_ERROR, 201, 400, 401, 403, 404, 503),
    status_code=201,
    summary="Ask for the data an agreement covers (TransferRequestMessage)",
    description="For a FINALIZED agreement you are the consumer of, in force: a transfer "
    f"process, REQUESTED, and the provider is told. Format `{documents.PUSH_FORMAT}` only: "
    "the broker delivers the data, once its checks pass, to your member's registered inbox "
    "(a `dataAddress` naming anywhere else is refused). The same consumerPid again answers "
    "the same process (200).",
)
def transfer_request(
    message: Annotated[TransferRequest, Body()],
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
) -> JSONResponse:
    found, new = transfers.request(session, caller, message, settings)
    location = f"{BASE}/transfers/{documents.PROVIDER_PID}{found.id}"
    return _json(transfers.document(found), 201 if new else 200, Location=location)


@transfer_router.get(
    "/transfers/{provider_pid}",
    operation_id="dsp_get_transfer",
    response_class=JSONResponse,
    responses=documented(TRANSFER_ERROR, 200, 400, 401, 403, 404, 503),
    summary="A transfer process",
    description="The TransferProcess: its pids and state, for its consumer and its provider. "
    "404 when you take no part in it.",
)
def transfer(provider_pid: ProcessPid, session: SessionDep, caller: CurrentMember):
    return _json(transfers.document(transfers.get(session, caller, provider_pid)))


def _transfer_move(path: str, verb: str, move: Move, summary: str, description: str):
    @transfer_router.post(
        f"/transfers/{{provider_pid}}/{path}",
        operation_id=f"dsp_{verb}_transfer",
        response_class=JSONResponse,
        responses=documented(TRANSFER_ERROR, 200, 400, 401, 403, 404, 503),
        summary=summary,
        description=description,
    )
    def moved(
        provider_pid: ProcessPid,
        message: Annotated[TransferMessage, Body()],
        session: SessionDep,
        caller: CurrentMember,
    ) -> JSONResponse:
        found = transfers.move(session, caller, provider_pid, move, message)
        return _json(transfers.document(found))

    return moved


_transfer_move(
    "start",
    "start",
    Move.START,
    "Resume a suspended transfer process (TransferStartMessage, consumer)",
    "SUSPENDED -> STARTED, under an agreement still in force. The provider's own start is the "
    "broker's delivery.",
)
_transfer_move(
    "completion",
    "complete",
    Move.COMPLETE,
    "Complete a started transfer process (TransferCompletionMessage, consumer)",
    "STARTED -> COMPLETED.",
)
_transfer_move(
    "suspension",
    "suspend",
    Move.SUSPEND,
    "Suspend a started transfer process (TransferSuspensionMessage, consumer)",
    "STARTED -> SUSPENDED.",
)
_transfer_move(
    "termination",
    "terminate",
    Move.TERMINATE,
    "End a transfer process (TransferTerminationMessage, consumer or provider)",
    "REQUESTED, STARTED or SUSPENDED -> TERMINATED; the other party is told in the broker's "
    "words (the message's reasons are not forwarded). A delivery already approved is not "
    "called back.",
)

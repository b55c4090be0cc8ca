"""Contract negotiations, agreements and notifications over HTTP.

Every message is a POST to the negotiation (``/request``, ``/offer``, ``/accept``, ``/verify``,
``/terminate``), idempotent: the same message again (or the same ``Idempotency-Key``) answers
the negotiation as it stands with ``Idempotent-Replayed: true``; a message its state does not
accept is a 409 ``invalid-transition`` naming the state."""

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request, Response

from broker.catalog import jsonld
from broker.errors import MAX_INT32, example, responses
from broker.negotiations import agreements, service
from broker.negotiations.models import Agreement, Negotiation
from broker.negotiations.schemas import (
    AgreementPage,
    AgreementRead,
    CounterRequest,
    NegotiationCreate,
    NegotiationEventRead,
    NegotiationPage,
    NegotiationRead,
    NotificationRead,
    OfferCreate,
    Termination,
    TermsRead,
)
from broker.negotiations.states import FINAL, WAITING_FOR
from broker.web.deps import CurrentCaller, CurrentMember, SessionDep, SettingsDep
from broker.wire.headers import IDEMPOTENCY_KEY
from broker.wire.statuses import NegotiationState

router = APIRouter(tags=["Negotiations"])
NegotiationId = Annotated[str, Path(description="The negotiation's id", max_length=36)]
AgreementId = Annotated[str, Path(description="The agreement's id", max_length=36)]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_KEY,
        max_length=200,
        description="The same key with the same message answers the negotiation as it stands",
    ),
]
NO_NEGOTIATION = {404: example(404, "not-found", "Not found", "No negotiation '7c9e...'")}
WRONG_STATE = {
    409: example(
        409,
        "invalid-transition",
        "Not allowed in the negotiation's current state",
        "Negotiation 7c9e... is AGREED: a negotiation in state AGREED does not accept "
        "'accept'; it accepts 'terminate', 'verify'",
    )
}
MESSAGE_RESPONSES = responses(
    400, 401, 403, 404, 409, 413, 422, examples=NO_NEGOTIATION | WRONG_STATE
)


def _read(session, negotiation: Negotiation, settings) -> NegotiationRead:
    waiting = WAITING_FOR.get(NegotiationState(negotiation.state))
    expires = None
    if negotiation.state not in FINAL:
        expires = negotiation.updated_at + timedelta(seconds=settings.negotiation_timeout_seconds)
    return NegotiationRead(
        id=negotiation.id,
        dataset_id=negotiation.dataset_id,
        dataset_version=negotiation.dataset_version,
        consumer=negotiation.consumer_id,
        provider=negotiation.provider_id,
        state=negotiation.state,
        waiting_for=None if waiting is None else str(waiting),
        purpose=negotiation.purpose,
        asked=negotiation.asked,
        required=negotiation.required,
        offered=None if negotiation.offered is None else TermsRead(**negotiation.offered),
        reason=negotiation.reason,
        agreement_id=negotiation.agreement_id,
        expires_at=expires,
        created_at=negotiation.created_at,
        updated_at=negotiation.updated_at,
        events=[NegotiationEventRead.of(e) for e in service.events(session, negotiation)],
    )


def _answer(session, answered: service.Answered, settings, response: Response) -> NegotiationRead:
    if answered.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return _read(session, answered.negotiation, settings)


def agreement_read(agreement: Agreement) -> AgreementRead:
    return AgreementRead(
        id=agreement.id,
        negotiation_id=agreement.negotiation_id,
        dataset_id=agreement.dataset_id,
        dataset_version=agreement.dataset_version,
        provider=agreement.provider_id,
        consumer=agreement.consumer_id,
        terms=TermsRead(**agreement.terms),
        state=agreement.state,
        reason=agreement.reason,
        document=agreement.document,
        signature=agreement.signature,
        odrl=jsonld.agreement(agreement.document),
        created_at=agreement.created_at,
        updated_at=agreement.updated_at,
    )


@router.post(
    "/v1/negotiations",
    status_code=201,
    response_model=NegotiationRead,
    responses=responses(
        400,
        401,
        403,
        404,
        409,
        413,
        422,
        examples={404: example(404, "not-found", "Not found", "No dataset '3f2b' in the catalog")},
    ),
    summary="Ask for a catalogued dataset, for a purpose (the consumer)",
    description="A contract request (Dataspace Protocol: REQUESTED). The broker checks both "
    "F-SLA records at once: the answer holds the least they require (`required`: the columns "
    "that may leave, k, l, t, the retention), and the negotiation waits for the provider's "
    "offer; or, when they do not allow it at all, the negotiation is TERMINATED with the "
    "reason. The same `Idempotency-Key` with the same request answers the same negotiation.",
)
def create_negotiation(
    body: NegotiationCreate,
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> NegotiationRead:
    answered = service.request(
        session,
        caller,
        body.dataset_id,
        body.purpose.strip(),
        body.columns,
        body.retention_days,
        idempotency_key,
    )
    if answered.replayed:
        response.status_code = 200
    response.headers["Location"] = f"/v1/negotiations/{answered.negotiation.id}"
    return _answer(session, answered, settings, response)


@router.get(
    "/v1/negotiations",
    response_model=NegotiationPage,
    responses=responses(401, 403, 422),
    summary="The negotiations you take part in (all of them, for an administrator)",
    description="Newest change first; `state` filters (repeat it for several).",
)
def list_negotiations(
    session: SessionDep,
    caller: CurrentCaller,
    settings: SettingsDep,
    state: Annotated[list[NegotiationState] | None, Query()] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> NegotiationPage:
    found, total = service.page(session, caller, list(state or []), offset, limit)
    return NegotiationPage(items=[_read(session, n, settings) for n in found], total=total)


@router.get(
    "/v1/negotiations/{negotiation_id}",
    response_model=NegotiationRead,
    responses=responses(401, 403, 404, 422, examples=NO_NEGOTIATION),
    summary="One negotiation, with its messages",
    description="Its state, whose message it waits for and until when, the broker's and the "
    "provider's terms, and every message so far with the Dataspace Protocol's name of it.",
)
def get_negotiation(
    negotiation_id: NegotiationId, session: SessionDep, caller: CurrentCaller, settings: SettingsDep
) -> NegotiationRead:
    return _read(session, service.get(session, caller, negotiation_id), settings)


@router.post(
    "/v1/negotiations/{negotiation_id}/offer",
    response_model=NegotiationRead,
    responses=MESSAGE_RESPONSES,
    summary="Offer terms (the provider): the broker's, or stricter ones",
    description="REQUESTED -> OFFERED. Without `terms` the provider offers what the records "
    "require; with them it changes some of them: fewer columns, a higher k or l, a lower t, a "
    "shorter retention, onward transfer allowed or not. An offer that asks less than the "
    "records require is refused (422).",
)
def offer_negotiation(
    negotiation_id: NegotiationId,
    body: OfferCreate,
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> NegotiationRead:
    terms = None if body.terms is None else body.terms.model_dump(exclude_unset=True)
    answered = service.offer(session, caller, negotiation_id, terms, idempotency_key)
    return _answer(session, answered, settings, response)


@router.post(
    "/v1/negotiations/{negotiation_id}/request",
    response_model=NegotiationRead,
    responses=MESSAGE_RESPONSES,
    summary="Answer an offer with another request (the consumer)",
    description="OFFERED -> REQUESTED: other columns or a shorter retention, for the same "
    "purpose. The broker computes its terms again; the provider offers again.",
)
def request_negotiation(
    negotiation_id: NegotiationId,
    body: CounterRequest,
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> NegotiationRead:
    answered = service.counter_request(
        session, caller, negotiation_id, body.columns, body.retention_days, idempotency_key
    )
    return _answer(session, answered, settings, response)


@router.post(
    "/v1/negotiations/{negotiation_id}/accept",
    response_model=NegotiationRead,
    responses=MESSAGE_RESPONSES,
    summary="Accept the offer (the consumer): the broker signs the agreement",
    description="OFFERED -> ACCEPTED -> AGREED: the broker checks the offer against the F-SLA "
    "records as they are now, records the agreement and signs it (`agreement_id`); if the "
    "records changed so that they no longer allow it, the negotiation is TERMINATED with why.",
)
def accept_negotiation(
    negotiation_id: NegotiationId,
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
    request: Request,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> NegotiationRead:
    keyring = request.app.state.keyring
    answered = service.accept(session, caller, negotiation_id, idempotency_key, keyring)
    return _answer(session, answered, settings, response)


@router.post(
    "/v1/negotiations/{negotiation_id}/verify",
    response_model=NegotiationRead,
    responses=MESSAGE_RESPONSES,
    summary="Confirm the agreement's signature was checked (the consumer): in force",
    description="AGREED -> VERIFIED -> FINALIZED. Check the agreement's `signature` against "
    "the broker's published keys first (the member cloud does). Transfers may then be made "
    "under it.",
)
def verify_negotiation(
    negotiation_id: NegotiationId,
    session: SessionDep,
    caller: CurrentMember,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> NegotiationRead:
    answered = service.verify(session, caller, negotiation_id, idempotency_key)
    return _answer(session, answered, settings, response)


@router.post(
    "/v1/negotiations/{negotiation_id}/terminate",
    response_model=NegotiationRead,
    responses=MESSAGE_RESPONSES,
    summary="End the negotiation (either party, or an administrator)",
    description="Any state but FINALIZED and TERMINATED -> TERMINATED, with the reason given.",
)
def terminate_negotiation(
    negotiation_id: NegotiationId,
    body: Termination,
    session: SessionDep,
    caller: CurrentCaller,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> NegotiationRead:
    answered = service.terminate(
        session, caller, negotiation_id, body.reason.strip(), idempotency_key
    )
    return _answer(session, answered, settings, response)


@router.get(
    "/v1/agreements",
    response_model=AgreementPage,
    responses=responses(401, 403, 422),
    summary="The agreements you are a party to (all of them, for an administrator)",
    description="Newest first.",
)
def list_agreements(
    session: SessionDep,
    caller: CurrentCaller,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> AgreementPage:
    found, total = agreements.page(session, caller, offset, limit)
    return AgreementPage(items=[agreement_read(a) for a in found], total=total)


@router.get(
    "/v1/agreements/{agreement_id}",
    response_model=AgreementRead,
    responses=responses(
        401, 403, 404, 422, examples={404: example(404, "not-found", "Not found", "No agreement")}
    ),
    summary="One agreement: its terms, the signed document, its state",
    description="`document` is exactly what the broker signed; check `signature` against the "
    "keys at `/.well-known/fedbroker-keys.json`. `odrl` is the same agreement as an ODRL "
    "Agreement. A `suspended` agreement (an F-SLA change broke its terms) allows no transfer "
    "until a later change mends it.",
)
def get_agreement(
    agreement_id: AgreementId, session: SessionDep, caller: CurrentCaller
) -> AgreementRead:
    return agreement_read(agreements.get(session, caller, agreement_id))


@router.get(
    "/v1/notifications",
    response_model=list[NotificationRead],
    responses=responses(401, 403, 422),
    summary="What you must know that no answer of yours told you (member)",
    description="Oldest first, after the id `after`: agreements an F-SLA change suspended or "
    "restored, and the Dataspace Protocol's transfer processes: a consumer's connector asking "
    "for the data of an agreement you provide (`transfer.requested`, the process's id as "
    "`subject`), the transfer that carries it, its delivery or its end. Read them regularly; "
    "pass the last id you read as `after`.",
)
def list_notifications(
    session: SessionDep,
    caller: CurrentMember,
    after: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[NotificationRead]:
    return [
        NotificationRead.model_validate(n, from_attributes=True)
        for n in service.notifications(session, caller, after, limit)
    ]

"""The binding: the protocol's messages answered by the market's own services, as a route
answers ``/v1`` (the catalog's offers, the negotiation's state machine in
:mod:`broker.negotiations.service`), so that a protocol negotiation is the ``/v1`` negotiation
of the same id, under one set of rules and records.

A consumer's ``consumerPid`` is its own id for the negotiation: an initial request sent again
with the same one (a connector's retry) answers the negotiation it started, as an
``Idempotency-Key`` does on ``/v1``. A negotiation started on ``/v1`` has no consumerPid of the
consumer's: its providerPid stands for both.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from broker.callers import Caller
from broker.catalog import entries
from broker.catalog import service as catalog
from broker.catalog.jsonld import dataset_iri
from broker.config import Settings
from broker.dsp import documents
from broker.dsp.documents import ProtocolError
from broker.dsp.messages import (
    AgreementVerification,
    ContractRequest,
    NegotiationEvent,
    NegotiationTermination,
)
from broker.dsp.models import ProtocolNegotiation
from broker.negotiations import service as negotiations
from broker.negotiations.models import Negotiation
from broker.negotiations.texts import split_across

if TYPE_CHECKING:
    from broker.delivery.keyring import KeyRing

PAGE = 100  # datasets per catalog page (the next one is in the Link header)


@dataclass(frozen=True)
class Seen:
    """A negotiation as the protocol names it."""

    negotiation: Negotiation
    consumer_pid: str

    def document(self) -> dict:
        return documents.negotiation(self.negotiation.id, self.consumer_pid, self.negotiation.state)


def catalog_page(session: Session, caller: Caller, offset: int, broker_url: str):
    """The datasets the caller can get an offer for, a page at a time, and whether more
    follow."""
    found, total = catalog.search(session, offset=offset, limit=PAGE)
    offers = catalog.offers_for(session, caller, found)
    datasets = [
        documents.dataset(entry.as_dict(), made, broker_url)
        for entry, made in zip(found, offers, strict=True)
        if documents.has_offers(made)
    ]
    return datasets, offset + len(found) < total


def dataset(session: Session, caller: Caller, dataset_id: str, broker_url: str) -> dict:
    entry = entries.entry(session, caller, dataset_id, None)
    [made] = catalog.offers_for(session, caller, [entry])
    if not documents.has_offers(made):
        raise ProtocolError(404, f"No dataset {dataset_id!r} you can get an offer for")
    return documents.dataset(entry.as_dict(), made, broker_url)


def request(
    session: Session, caller: Caller, message: ContractRequest, settings: Settings
) -> tuple[Seen, bool]:
    """An initial ContractRequestMessage: a new negotiation (or, with a consumerPid already
    used, the one it started), and whether it is new."""
    pids = {"consumerPid": message.consumer_pid}
    if message.provider_pid:
        raise ProtocolError(
            400,
            "An initial request names no providerPid: a request on an existing negotiation "
            "goes to /negotiations/{providerPid}/request",
            pids,
        )
    if not message.callback_address:
        raise ProtocolError(400, "An initial request needs a callbackAddress", pids)
    why = settings.inbox_policy.refusal(message.callback_address)
    if why is not None:
        raise ProtocolError(400, f"callbackAddress refused: {why}", pids)
    dataset_id = _dataset_of(message.offer.target, pids)
    purpose = message.offer.purpose() or _purpose_of(message.offer.id, dataset_id)
    if purpose is None:
        raise ProtocolError(
            400,
            "The offer names no purpose: send one of the catalog's offers (its @id) or a "
            "permission constrained by 'purpose eq ...'",
            pids,
        )
    key = "dsp:" + hashlib.sha256(message.consumer_pid.encode()).hexdigest()
    answered = negotiations.request(session, caller, dataset_id, purpose, None, None, key)
    negotiation = answered.negotiation
    if session.get(ProtocolNegotiation, negotiation.id) is None:  # also after a lost commit
        session.add(
            ProtocolNegotiation(
                negotiation_id=negotiation.id,
                consumer_pid=message.consumer_pid,
                callback_address=message.callback_address,
                # what the answer to this request tells (an immediate end) is not sent again
                sent_event_id=max(e.id for e in negotiations.events(session, negotiation)),
            )
        )
        session.commit()
    return Seen(negotiation, message.consumer_pid), not answered.replayed


def get(session: Session, caller: Caller, provider_pid: str) -> Seen:
    negotiation = negotiations.get(session, caller, _negotiation_id(provider_pid))
    return Seen(negotiation, _consumer_pid(session, negotiation))


def counter_request(session: Session, caller: Caller, pid: str, message: ContractRequest) -> Seen:
    seen = _addressed(session, caller, pid, message.provider_pid, message.consumer_pid)
    answered = negotiations.counter_request(session, caller, seen.negotiation.id, None, None, None)
    return Seen(answered.negotiation, seen.consumer_pid)


def event(
    session: Session, caller: Caller, pid: str, message: NegotiationEvent, keyring: KeyRing
) -> Seen:
    seen = _addressed(session, caller, pid, message.provider_pid, message.consumer_pid)
    if message.event_type != "ACCEPTED":
        raise ProtocolError(
            400,
            "A consumer's event accepts the offer (ACCEPTED); the agreement is finalized by the "
            "provider's side",
            _pids(seen),
        )
    answered = negotiations.accept(session, caller, seen.negotiation.id, None, keyring)
    return Seen(answered.negotiation, seen.consumer_pid)


def verification(
    session: Session, caller: Caller, pid: str, message: AgreementVerification
) -> Seen:
    seen = _addressed(session, caller, pid, message.provider_pid, message.consumer_pid)
    answered = negotiations.verify(session, caller, seen.negotiation.id, None)
    return Seen(answered.negotiation, seen.consumer_pid)


def termination(
    session: Session, caller: Caller, pid: str, message: NegotiationTermination
) -> Seen:
    seen = _addressed(session, caller, pid, message.provider_pid, message.consumer_pid)
    split = split_across("reason", message.reason)
    if split is not None:  # the reasons are shown joined: read them side by side
        field, what = split
        raise ProtocolError(
            400,
            f"The message's {field} holds {what} once read together: the other party reads "
            "them; a reason explains, it never carries values of the data",
            _pids(seen),
        )
    reason = "; ".join(message.reason) or f"terminated by the consumer (code {message.code})"
    answered = negotiations.terminate(session, caller, seen.negotiation.id, reason, None)
    return Seen(answered.negotiation, seen.consumer_pid)


def _addressed(
    session: Session, caller: Caller, path_pid: str, provider_pid: str, consumer_pid: str
) -> Seen:
    """The negotiation a message on ``path_pid`` is for, once its pids agree with the path's and
    the negotiation's."""
    seen = get(session, caller, path_pid)
    if provider_pid != path_pid or consumer_pid != seen.consumer_pid:
        raise ProtocolError(
            400,
            "The message's providerPid and consumerPid must be the negotiation's: "
            f"{documents.PROVIDER_PID}{seen.negotiation.id} and {seen.consumer_pid}",
            _pids(seen),
        )
    return seen


def _pids(seen: Seen) -> dict[str, str]:
    return {
        "providerPid": documents.PROVIDER_PID + seen.negotiation.id,
        "consumerPid": seen.consumer_pid,
    }


def _negotiation_id(provider_pid: str) -> str:
    found = provider_pid.removeprefix(documents.PROVIDER_PID)
    if found == provider_pid or len(found) > 36:
        raise ProtocolError(404, f"No negotiation {provider_pid!r}")
    return found


def _consumer_pid(session: Session, negotiation: Negotiation) -> str:
    found = session.get(ProtocolNegotiation, negotiation.id)
    return found.consumer_pid if found else documents.PROVIDER_PID + negotiation.id


def _dataset_of(target: str, pids: dict[str, str]) -> str:
    found = target.removeprefix("urn:uuid:")
    if found == target or dataset_iri(found) != target or len(found) > 36:
        raise ProtocolError(
            400, f"The offer's target {target!r} is not a dataset of the catalog", pids
        )
    return found


def _purpose_of(offer_id: str, dataset_id: str) -> str | None:
    """The purpose an offer of the catalog encodes in its @id (``urn:fedbroker:offer:
    <dataset>:<version>:<purpose>``), for a request that names the offer only."""
    prefix = f"urn:fedbroker:offer:{dataset_id}:"
    if not offer_id.startswith(prefix):
        return None
    _version, _, purpose = offer_id.removeprefix(prefix).partition(":")
    return purpose or None

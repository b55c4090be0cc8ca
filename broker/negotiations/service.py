"""Contract negotiation between a consumer and a provider, with the broker in the middle.

Each message (see :mod:`broker.negotiations.states`) is one use case: it locks the negotiation,
checks that its state accepts the message from that party, applies it, records it as an event
with the state it led to, audits it, and commits once. Messages are idempotent: a message sent
again with the same ``Idempotency-Key``, or repeating the last message that party sent, is
answered with the negotiation as it stands; anything else its state does not accept is a 409
naming the state.

The broker's part: on a request it computes, from both F-SLA records, the least the terms must
ask (:func:`broker.fsla.offers.offer`), or ends the negotiation with the records' reason; it
refuses an offer that asks less; when the consumer accepts, it checks the terms against the
records once more, records the agreement and signs it (``agree``); once the consumer has
verified that signature, it finalizes it. A negotiation that waits longer than
``BROKER_NEGOTIATION_TIMEOUT_SECONDS`` is ended by the broker.

What a negotiation leaves, its agreement, and how an F-SLA change suspends or restores one, are
:mod:`broker.negotiations.agreements`'.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.callers import Caller
from broker.catalog import entries as catalog
from broker.delivery.keyring import KeyRing
from broker.errors import (
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    InvalidTransition,
    NotFound,
    Unprocessable,
)
from broker.fsla.offers import Terms
from broker.negotiations import agreements, repository
from broker.negotiations.agreements import BROKER
from broker.negotiations.models import Negotiation, NegotiationEvent, Notification
from broker.negotiations.states import FINAL, IllegalTransition, Message, Role, next_state
from broker.negotiations.texts import first_identifier, labels
from broker.wire.statuses import NegotiationState


@dataclass(frozen=True)
class Answered:
    """A negotiation after a message, and whether the message was a replay of an earlier one."""

    negotiation: Negotiation
    replayed: bool = False


def request(
    session: Session,
    caller: Caller,
    dataset_id: str,
    purpose: str,
    columns: list[str] | None,
    retention_days: int | None,
    idempotency_key: str | None,
) -> Answered:
    """The consumer asks for a catalogued dataset for ``purpose`` (``columns``: a subset, all
    by default; ``retention_days``: at most this long). The broker answers with the terms the
    records require (REQUESTED, waiting for the provider) or ends it with their reason."""
    consumer = _member(caller)
    _no_values([("purpose", purpose), *labels("columns", columns)])
    asked = {"purpose": purpose, "columns": columns, "retention_days": retention_days}
    if idempotency_key:
        earlier = repository.request_by_key(session, consumer, idempotency_key)
        if earlier is not None:
            first = next(e for e in repository.events(session, earlier.id))
            if first.body != asked:
                raise IdempotencyKeyReused(
                    f"Idempotency key {idempotency_key!r} started negotiation {earlier.id} "
                    "with another request; use a new key for a new request"
                )
            return Answered(earlier, replayed=True)
    entry = catalog.entry(session, caller, dataset_id)
    if entry.dataset.withdrawn_at is not None:
        raise Unprocessable(f"Dataset {dataset_id} is withdrawn from the catalog")
    now = datetime.now(UTC)
    negotiation = Negotiation(
        id=str(uuid.uuid4()),
        dataset_id=entry.dataset.id,
        dataset_version=entry.version.version,
        consumer_id=consumer,
        provider_id=entry.provider.id,
        state=NegotiationState.REQUESTED,
        purpose=purpose,
        asked=asked,
        created_at=now,
        updated_at=now,
    )
    repository.add(session, negotiation)
    _record(session, negotiation, consumer, Role.CONSUMER, Message.REQUEST, asked, idempotency_key)
    _require(session, negotiation, columns, retention_days)
    _commit(session)
    return Answered(negotiation)


def counter_request(
    session: Session,
    caller: Caller,
    negotiation_id: str,
    columns: list[str] | None,
    retention_days: int | None,
    idempotency_key: str | None,
) -> Answered:
    """The consumer answers an offer with another request (other columns, a shorter retention;
    the purpose stays): REQUESTED again, the broker's terms computed again."""
    _no_values(labels("columns", columns))
    body = {"columns": columns, "retention_days": retention_days}
    found = _message(session, caller, negotiation_id, Message.REQUEST, body, idempotency_key)
    if found.replayed:
        return found
    negotiation = found.negotiation
    negotiation.asked = {"purpose": negotiation.purpose, **body}
    negotiation.offered = None
    _require(session, negotiation, columns, retention_days)
    _commit(session)
    return found


def offer(
    session: Session,
    caller: Caller,
    negotiation_id: str,
    terms: dict[str, Any] | None,
    idempotency_key: str | None,
) -> Answered:
    """The provider offers the broker's terms as they are (``terms`` None), or stricter ones
    (fewer columns, a higher k or l, a lower t, a shorter retention): never weaker."""
    _no_values(labels("terms.columns", (terms or {}).get("columns")))
    found = _message(
        session, caller, negotiation_id, Message.OFFER, {"terms": terms}, idempotency_key
    )
    if found.replayed:
        return found
    negotiation = found.negotiation
    required = Terms.of(negotiation.required["terms"])
    offered = required if terms is None else _terms(required, terms)
    weaker = offered.weaker_than(required)
    if weaker:
        session.rollback()
        raise Unprocessable(
            "An offer may ask more than the F-SLA records require, never less: " + "; ".join(weaker)
        )
    negotiation.offered = offered.as_dict()
    _commit(session)
    return found


def accept(
    session: Session,
    caller: Caller,
    negotiation_id: str,
    idempotency_key: str | None,
    keyring: KeyRing,
) -> Answered:
    """The consumer accepts the offer; the broker checks it against the records as they are
    now and records the agreement, signed (AGREED), or ends the negotiation with the reason."""
    found = _message(session, caller, negotiation_id, Message.ACCEPT, {}, idempotency_key)
    if found.replayed:
        return found
    negotiation = found.negotiation
    _agree(session, negotiation, keyring)
    _commit(session)
    return found


def verify(
    session: Session, caller: Caller, negotiation_id: str, idempotency_key: str | None
) -> Answered:
    """The consumer has checked the broker's signature of the agreement (VERIFIED); the broker
    finalizes it (FINALIZED): transfers may now be made under it."""
    found = _message(session, caller, negotiation_id, Message.VERIFY, {}, idempotency_key)
    if found.replayed:
        return found
    negotiation = found.negotiation
    _broker_says(session, negotiation, Message.FINALIZE, {})
    audit.record(
        session,
        BROKER,
        "agreement.finalized",
        negotiation.agreement_id,
        {"negotiation": negotiation.id},
    )
    _commit(session)
    return found


def terminate(
    session: Session,
    caller: Caller,
    negotiation_id: str,
    reason: str,
    idempotency_key: str | None,
) -> Answered:
    """Either party (or an administrator, for the broker) ends the negotiation."""
    _no_values([], [("reason", reason)])
    found = _message(
        session, caller, negotiation_id, Message.TERMINATE, {"reason": reason}, idempotency_key
    )
    if found.replayed:
        return found
    negotiation = found.negotiation
    negotiation.reason = f"terminated by {caller.name}: {reason}"
    _commit(session)
    return found


def get(session: Session, caller: Caller, negotiation_id: str) -> Negotiation:
    negotiation = repository.get(session, negotiation_id)
    if negotiation is None or not _sees(caller, negotiation):
        raise NotFound(f"No negotiation {negotiation_id!r}")
    return negotiation


def events(session: Session, negotiation: Negotiation) -> list[NegotiationEvent]:
    return repository.events(session, negotiation.id)


def page(
    session: Session, caller: Caller, states: list[str], offset: int, limit: int
) -> tuple[list[Negotiation], int]:
    return repository.page(session, caller.member_id, states, offset, limit)


def notifications(session: Session, caller: Caller, after: int, limit: int) -> list[Notification]:
    return repository.notifications(session, _member(caller), after, limit)


# --- what other use cases ask of negotiations -----------------------------------------------


def expire(session: Session, timeout_seconds: float, now: datetime | None = None) -> int:
    """End the negotiations that waited longer than ``timeout_seconds`` for their next message
    (the background runner calls it); returns how many."""
    now = now or datetime.now(UTC)
    stale = repository.stale(session, now - timedelta(seconds=timeout_seconds), FINAL, 100)
    for negotiation_id in stale:
        negotiation = repository.get(session, negotiation_id, lock=True)
        if negotiation is None or negotiation.state in FINAL:
            continue
        waited = now - negotiation.updated_at
        negotiation.reason = (
            f"no answer in {waited.total_seconds():.0f} s (the broker ends a negotiation after "
            f"{timeout_seconds:.0f} s without a message)"
        )
        _broker_says(session, negotiation, Message.TERMINATE, {"reason": negotiation.reason})
        session.commit()
    return len(stale)


def end_for_dataset(session: Session, dataset_id: str, reason: str) -> None:
    """End every negotiation about a dataset that is not over (in the caller's transaction)."""
    for negotiation_id in repository.open_for_dataset(session, dataset_id, FINAL):
        negotiation = repository.get(session, negotiation_id, lock=True)
        negotiation.reason = reason
        _broker_says(session, negotiation, Message.TERMINATE, {"reason": reason})


# --- internals ------------------------------------------------------------------------------


def _message(
    session: Session,
    caller: Caller,
    negotiation_id: str,
    message: Message,
    body: dict[str, Any],
    idempotency_key: str | None,
) -> Answered:
    """Lock the negotiation, check ``message`` from the caller against its state, and record
    it; or find that it repeats an earlier message (a replay)."""
    negotiation = repository.get(session, negotiation_id, lock=True)
    if negotiation is None or not _sees(caller, negotiation):
        raise NotFound(f"No negotiation {negotiation_id!r}")
    role = _role(caller, negotiation)
    actor = caller.name
    if idempotency_key:
        earlier = repository.event_by_key(session, negotiation.id, actor, idempotency_key)
        if earlier is not None:
            if earlier.message != message or earlier.body != body:
                raise IdempotencyKeyReused(
                    f"Idempotency key {idempotency_key!r} was used for another message "
                    f"({earlier.message}) to negotiation {negotiation.id}: use a new key"
                )
            return Answered(negotiation, replayed=True)
    try:
        state = next_state(NegotiationState(negotiation.state), message, role)
    except IllegalTransition as error:
        last = _last_from(session, negotiation, actor)
        if last is not None and last.message == message and last.body == body:
            return Answered(negotiation, replayed=True)  # the same message, sent again
        raise InvalidTransition(
            f"Negotiation {negotiation.id} is {negotiation.state}: {error}"
        ) from None
    negotiation.state = state
    negotiation.updated_at = datetime.now(UTC)
    _record(session, negotiation, actor, role, message, body, idempotency_key, state)
    return Answered(negotiation)


def _require(session: Session, negotiation: Negotiation, columns, retention_days) -> None:
    """Compute the broker's terms for the consumer's request, or end the negotiation."""
    found = agreements.offer_now(session, negotiation, negotiation.purpose, columns, retention_days)
    if found.terms is None:
        negotiation.reason = "the F-SLA records do not allow it: " + "; ".join(found.reasons)
        negotiation.required = None
        _broker_says(session, negotiation, Message.TERMINATE, {"reason": negotiation.reason})
        return
    negotiation.required = {
        "terms": found.terms.as_dict(),
        "notes": list(found.reasons),
        "expected_utility_percent": found.expected_utility_percent,
    }


def _agree(session: Session, negotiation: Negotiation, keyring: KeyRing) -> None:
    """The broker's agreement: the offered terms, checked against the records as they are now,
    drawn up, signed and recorded (:func:`broker.negotiations.agreements.draw_up`)."""
    offered = Terms.of(negotiation.offered)
    problems = agreements.not_allowed(session, negotiation, offered)
    if problems:
        negotiation.reason = "the F-SLA records changed during the negotiation: " + "; ".join(
            problems
        )
        _broker_says(session, negotiation, Message.TERMINATE, {"reason": negotiation.reason})
        return
    agreement = agreements.draw_up(session, negotiation, offered, keyring)
    negotiation.agreement_id = agreement.id
    _broker_says(session, negotiation, Message.AGREE, {"agreement": agreement.id})
    agreements.audit_signed(session, agreement)


def _broker_says(
    session: Session, negotiation: Negotiation, message: Message, body: dict[str, Any]
) -> None:
    state = next_state(NegotiationState(negotiation.state), message, Role.BROKER)
    negotiation.state = state
    negotiation.updated_at = datetime.now(UTC)
    _record(session, negotiation, BROKER, Role.BROKER, message, body, None, state)


def _record(
    session: Session,
    negotiation: Negotiation,
    actor: str,
    role: Role,
    message: Message,
    body: dict[str, Any],
    idempotency_key: str | None,
    state: str | None = None,
) -> None:
    state = state or negotiation.state
    repository.add_event(
        session,
        NegotiationEvent(
            negotiation_id=negotiation.id,
            actor=actor,
            role=role,
            message=message,
            state=state,
            body=body,
            idempotency_key=idempotency_key,
            created_at=datetime.now(UTC),
        ),
    )
    audit.record(
        session,
        actor,
        f"negotiation.{message}",
        negotiation.id,
        {"state": state, "dataset": negotiation.dataset_id} | body,
    )


def _last_from(session: Session, negotiation: Negotiation, actor: str):
    found = [e for e in repository.events(session, negotiation.id) if e.actor == actor]
    return found[-1] if found else None


def _terms(required: Terms, asked: dict[str, Any]) -> Terms:
    """The provider's terms: the broker's, with the fields the provider sent replaced."""
    unknown = sorted(set(asked) - set(required.as_dict()))
    if unknown:
        raise Unprocessable(
            f"Unknown term(s) {', '.join(unknown)}; the terms are "
            f"{', '.join(sorted(required.as_dict()))}"
        )
    return Terms.of(required.as_dict() | asked)


def _role(caller: Caller, negotiation: Negotiation) -> Role:
    if caller.member_id == negotiation.consumer_id:
        return Role.CONSUMER
    if caller.member_id == negotiation.provider_id:
        return Role.PROVIDER
    if caller.is_admin:
        return Role.BROKER
    raise Forbidden(f"Member {caller.member_id!r} is not a party to negotiation {negotiation.id}")


def _sees(caller: Caller, negotiation: Negotiation) -> bool:
    return caller.is_admin or caller.member_id in (negotiation.consumer_id, negotiation.provider_id)


def _member(caller: Caller) -> str:
    if caller.member_id is None:
        raise Forbidden("Only a member cloud negotiates (administrators may end a negotiation)")
    return caller.member_id


def _no_values(label_texts: list[tuple[str, str]], free_texts=()) -> None:
    """Refuse a message whose text for the other party holds an identifier
    (:mod:`broker.negotiations.texts`): before anything is looked up or stored."""
    found = first_identifier(label_texts, free_texts)
    if found is not None:
        field, what = found
        raise Unprocessable(
            f"The message's {field} holds {what}: the other party reads it; a negotiation "
            "names columns, purposes and reasons, never values of the data"
        )


def _commit(session: Session) -> None:
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(
            "The negotiation changed while this message was applied: read it again"
        ) from None

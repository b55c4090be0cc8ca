"""The provider's side of a protocol negotiation, sent to the consumer's connector.

A consumer's connector learns of the provider's offer, the broker's agreement, its finalization
and a termination by the provider or the broker at its ``callbackAddress``, as the binding's
consumer paths say (``{callback}/negotiations/{consumerPid}/offers``, ``/agreement``,
``/events``, ``/termination``). The outbox of these messages is the negotiation's own history:
each protocol negotiation keeps how far its messages went (``sent_event_id``), and
:func:`send_due` sends the provider's and the broker's events after it, in order, one
negotiation leased to one sender at a time (several brokers may share the database). A message
is sent again after a failure, after 2, 4, ... seconds up to :data:`MAX_BACKOFF_SECONDS`, until
its negotiation ends (a negotiation that waits too long is ended by the broker's sweep, and
that termination is sent too).

The callback address was checked when the request came (the rules inbox addresses follow); it is
checked again before each message (its name may resolve elsewhere by then), and redirects are not
followed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from broker.dsp import documents
from broker.dsp.models import ProtocolNegotiation
from broker.fsla.offers import Terms
from broker.negotiations.models import Agreement, Negotiation, NegotiationEvent
from broker.negotiations.states import Message, Role

log = logging.getLogger("fedbroker.dsp")
MAX_BACKOFF_SECONDS = 600
LEASE_SECONDS = 60
PER_PASS = 20  # negotiations a pass serves at most: a pass stays short
PASS_SECONDS = 5.0  # no negotiation is started after this long (the pass runs in the job
# runner's supervisor thread); each POST is bounded by the client's timeout
TIMEOUT_SECONDS = 5.0  # what broker.main gives the callbacks' client
PATHS = {
    Message.OFFER: "offers",
    Message.AGREE: "agreement",
    Message.FINALIZE: "events",
    Message.TERMINATE: "termination",
}


def send_due(
    factory: sessionmaker[Session],
    client: httpx.Client,
    refusal: Callable[[str], str | None],
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> int:
    """Send what is due to the consumers' callbacks; the number of messages sent."""
    sent = 0
    with factory() as session:
        due = _due(session, now())
        session.commit()
    ends = time.monotonic() + PASS_SECONDS
    for negotiation_id in due:
        if time.monotonic() > ends:
            break  # the rest at the next pass
        with factory() as session:
            if _lease(session, negotiation_id, now()):
                sent += _send(session, negotiation_id, client, refusal, now)
    return sent


def _due(session: Session, moment: datetime) -> list[str]:
    """Protocol negotiations with a provider's or broker's event after their cursor (each
    looked up by the events' negotiation index, not by reading every event)."""
    unsent = (
        select(NegotiationEvent.id)
        .where(NegotiationEvent.negotiation_id == ProtocolNegotiation.negotiation_id)
        .where(NegotiationEvent.id > ProtocolNegotiation.sent_event_id)
        .where(NegotiationEvent.role != Role.CONSUMER)
        .exists()
    )
    rows = session.execute(
        select(ProtocolNegotiation.negotiation_id)
        .where(unsent)
        .where(
            or_(
                ProtocolNegotiation.next_attempt_at.is_(None),
                ProtocolNegotiation.next_attempt_at <= moment,
            )
        )
        .where(
            or_(
                ProtocolNegotiation.lease_until.is_(None),
                ProtocolNegotiation.lease_until < moment,
            )
        )
        .limit(PER_PASS)
    )
    return [row[0] for row in rows]


def _lease(session: Session, negotiation_id: str, moment: datetime) -> bool:
    """Take the negotiation's callbacks for :data:`LEASE_SECONDS`, unless another sender has."""
    taken = session.execute(
        update(ProtocolNegotiation)
        .where(ProtocolNegotiation.negotiation_id == negotiation_id)
        .where(
            or_(
                ProtocolNegotiation.lease_until.is_(None),
                ProtocolNegotiation.lease_until < moment,
            )
        )
        .values(lease_until=moment + timedelta(seconds=LEASE_SECONDS))
    )
    session.commit()
    return taken.rowcount == 1


def _send(session, negotiation_id, client, refusal, now) -> int:
    kept = session.get(ProtocolNegotiation, negotiation_id)
    negotiation = session.get(Negotiation, negotiation_id)
    events = session.scalars(
        select(NegotiationEvent)
        .where(NegotiationEvent.negotiation_id == negotiation_id)
        .where(NegotiationEvent.id > kept.sent_event_id)
        .order_by(NegotiationEvent.id)
    ).all()
    sent = 0
    for event in events:
        message = _message(session, negotiation, kept.consumer_pid, event)
        if message is not None:
            path, body = message
            url = f"{kept.callback_address.rstrip('/')}/negotiations/{kept.consumer_pid}/{path}"
            error = _post(client, refusal, url, body)
            if error is not None:
                kept.attempts += 1
                delay = min(2**kept.attempts, MAX_BACKOFF_SECONDS)
                kept.next_attempt_at = now() + timedelta(seconds=delay)
                kept.last_error = error
                kept.lease_until = None
                session.commit()
                log.warning("callback of negotiation %s not sent: %s", negotiation_id, error)
                return sent
            sent += 1
        kept.sent_event_id = event.id
        kept.attempts, kept.next_attempt_at, kept.last_error = 0, None, None
        session.commit()
    kept.lease_until = None
    session.commit()
    return sent


def _message(
    session: Session, negotiation: Negotiation, consumer_pid: str, event: NegotiationEvent
) -> tuple[str, dict[str, Any]] | None:
    """The protocol message an event of the provider or the broker is, and its path; None for
    what the consumer said itself."""
    if event.role == Role.CONSUMER or event.message not in PATHS:
        return None
    path, pid = PATHS[Message(event.message)], consumer_pid
    if event.message == Message.OFFER:
        terms = Terms.of(negotiation.offered)  # the offer in force (the event holds its changes)
        body = documents.offer_message(
            negotiation.id, pid, negotiation.dataset_id, negotiation.dataset_version, terms
        )
    elif event.message == Message.AGREE:
        agreement = session.get(Agreement, event.body["agreement"])
        body = documents.agreement_message(negotiation.id, pid, agreement.document)
    elif event.message == Message.FINALIZE:
        body = documents.event_message(negotiation.id, pid, "FINALIZED")
    else:
        reason = event.body.get("reason") or negotiation.reason or "terminated"
        body = documents.termination_message(negotiation.id, pid, reason)
    return path, body


def _post(client: httpx.Client, refusal, url: str, body: dict[str, Any]) -> str | None:
    """POST ``body`` to ``url``: None when the consumer took it (2xx), else why not."""
    refused = refusal(url)
    if refused is not None:
        return f"callback address refused: {refused}"
    try:
        answer = client.post(url, json=body)
    except httpx.HTTPError as error:
        return f"{type(error).__name__}: {error}"
    if not answer.is_success:
        return f"the consumer answered {answer.status_code}"
    return None

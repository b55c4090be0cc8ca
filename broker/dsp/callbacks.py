"""The provider's side of a protocol negotiation or transfer process, sent to the consumer's
connector.

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

A transfer process's messages (the broker's start, completion and end, at
``{callback}/transfers/{consumerPid}/start``, ``/completion``, ``/termination``, ``/suspension``)
go out the same way, from the process's own history (:mod:`broker.dsp.transfers`): each kind
of conversation is an :class:`Outbox`.

Each message is signed as a delivery is (RFC 9421, Ed25519, the keys at
``/.well-known/fedbroker-keys.json``), tagged ``fedbroker-callback``: the method, the target URI,
the body (canonical JSON, RFC 8785) through its ``Content-Digest``, its type and the consumer
member it is for (``X-Fedbroker-Recipient``), with a fresh nonce and a lifetime (:class:`Signer`).

The callback address was checked when the request came (the rules inbox addresses follow); it is
checked again before each message (its name may resolve elsewhere by then), and redirects are not
followed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from broker.delivery.keyring import KeyRing
from broker.dsp import documents
from broker.dsp.models import (
    ProtocolNegotiation,
    ProtocolTransfer,
    ProtocolTransferEvent,
)
from broker.dsp.transfer_states import Move, Party
from broker.fsla.offers import Terms
from broker.negotiations.models import Agreement, Negotiation, NegotiationEvent
from broker.negotiations.states import Message, Role
from broker.storage.db import each_statement_on_its_own
from broker.wire import headers as h
from broker.wire.canonical import canonical_json
from broker.wire.signing import content_digest, new_nonce

log = logging.getLogger("fedbroker.dsp")
MAX_BACKOFF_SECONDS = 600
LEASE_SECONDS = 60
PER_PASS = 20  # negotiations (and as many transfer processes) a pass serves at most: a pass
# stays short
PASS_SECONDS = 5.0  # no conversation is started after this long (the pass runs in the job
# runner's supervisor thread); each POST is bounded by the client's timeout
TIMEOUT_SECONDS = 5.0  # what broker.main gives the callbacks' client
PATHS = {
    Message.OFFER: "offers",
    Message.AGREE: "agreement",
    Message.FINALIZE: "events",
    Message.TERMINATE: "termination",
}
TRANSFER_PATHS = {
    Move.START: "start",
    Move.COMPLETE: "completion",
    Move.SUSPEND: "suspension",
    Move.TERMINATE: "termination",
}


@dataclass(frozen=True)
class Outbox:
    """One kind of conversation whose provider's side goes to the consumer's callback: the rows
    that keep each conversation's cursor (``kept``, keyed by ``key``), its history (``event``,
    ``owner`` naming the conversation, ``sent`` the events that are the provider's side) and the
    binding's consumer path (``prefix``), with :attr:`message` making each event the protocol's
    message and its path (None: nothing to send)."""

    kept: Any
    key: Any
    event: Any
    owner: Any
    sent: Any
    prefix: str
    message: Callable[[Session, Any, Any], tuple[str, dict[str, Any]] | None]
    recipient: Callable[[Session, Any], str]  # the consumer member a conversation's are for


@dataclass(frozen=True)
class Signer:
    """Signs each callback as deliveries are signed (RFC 9421, tag ``fedbroker-callback``):
    a fresh nonce, valid ``lifetime`` seconds from now."""

    keyring: KeyRing
    lifetime: int = 300

    def headers(self, url: str, body: bytes, recipient: str) -> dict[str, str]:
        found = {
            h.CONTENT_TYPE: documents.MEDIA_TYPE,
            h.CONTENT_DIGEST: content_digest(hashlib.sha256(body).hexdigest()),
            h.RECIPIENT: recipient,
        }
        created = int(time.time())
        return found | self.keyring.sign_callback(
            url, found, created=created, expires=created + self.lifetime, nonce=new_nonce()
        )


def send_due(
    factory: sessionmaker[Session],
    client: httpx.Client,
    refusal: Callable[[str], str | None],
    signer: Signer,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> int:
    """Send what is due to the consumers' callbacks, signed; the number of messages sent."""
    sent = 0
    ends = time.monotonic() + PASS_SECONDS
    for outbox in OUTBOXES:
        with factory() as session:
            each_statement_on_its_own(session)  # a look, most often at nothing: one read
            due = _due(session, outbox, now())
            session.commit()
        for key in due:
            if time.monotonic() > ends:
                return sent  # the rest at the next pass
            with factory() as session:
                if _lease(session, outbox, key, now()):
                    sent += _send(session, outbox, key, client, refusal, signer, now)
    return sent


def _due(session: Session, outbox: Outbox, moment: datetime) -> list[str]:
    """Conversations with a provider's or broker's event after their cursor (each looked up by
    the events' own index, not by reading every event)."""
    kept = outbox.kept
    unsent = (
        select(outbox.event.id)
        .where(outbox.owner == outbox.key)
        .where(outbox.event.id > kept.sent_event_id)
        .where(outbox.sent)
        .exists()
    )
    rows = session.execute(
        select(outbox.key)
        .where(unsent)
        .where(or_(kept.next_attempt_at.is_(None), kept.next_attempt_at <= moment))
        .where(or_(kept.lease_until.is_(None), kept.lease_until < moment))
        .limit(PER_PASS)
    )
    return [row[0] for row in rows]


def _lease(session: Session, outbox: Outbox, key: str, moment: datetime) -> bool:
    """Take the conversation's callbacks for :data:`LEASE_SECONDS`, unless another sender has."""
    kept = outbox.kept
    taken = session.execute(
        update(kept)
        .where(outbox.key == key)
        .where(or_(kept.lease_until.is_(None), kept.lease_until < moment))
        .values(lease_until=moment + timedelta(seconds=LEASE_SECONDS))
    )
    session.commit()
    return taken.rowcount == 1


def _send(session, outbox: Outbox, key: str, client, refusal, signer: Signer, now) -> int:
    kept = session.get(outbox.kept, key)
    recipient = outbox.recipient(session, kept)
    events = session.scalars(
        select(outbox.event)
        .where(outbox.owner == key)
        .where(outbox.event.id > kept.sent_event_id)
        .order_by(outbox.event.id)
    ).all()
    sent = 0
    for event in events:
        message = outbox.message(session, kept, event)
        if message is not None:
            path, body = message
            base = kept.callback_address.rstrip("/")
            url = f"{base}/{outbox.prefix}/{kept.consumer_pid}/{path}"
            content = canonical_json(body)
            # No transaction held during the POST: a consumer that answers slowly (or never,
            # until the client's timeout) must not hold a connection, nor on SQLite the write
            # lock every other request waits for. The lease keeps the conversation ours.
            session.commit()
            error = _post(client, refusal, url, content, signer.headers(url, content, recipient))
            if error is not None:
                kept.attempts += 1
                delay = min(2**kept.attempts, MAX_BACKOFF_SECONDS)
                kept.next_attempt_at = now() + timedelta(seconds=delay)
                kept.last_error = error
                kept.lease_until = None
                session.commit()
                log.warning("callback of %s %s not sent: %s", outbox.prefix, key, error)
                return sent
            sent += 1
        kept.sent_event_id = event.id
        kept.attempts, kept.next_attempt_at, kept.last_error = 0, None, None
        session.commit()
    kept.lease_until = None
    session.commit()
    return sent


def _negotiation_message(
    session: Session, kept: ProtocolNegotiation, event: NegotiationEvent
) -> tuple[str, dict[str, Any]] | None:
    """The protocol message an event of the provider or the broker is, and its path; None for
    what the consumer said itself."""
    if event.role == Role.CONSUMER or event.message not in PATHS:
        return None
    negotiation = session.get(Negotiation, kept.negotiation_id)
    path, pid = PATHS[Message(event.message)], kept.consumer_pid
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


def _transfer_message(
    session: Session, kept: ProtocolTransfer, event: ProtocolTransferEvent
) -> tuple[str, dict[str, Any]] | None:
    """The message the provider's side of a transfer process sent (the broker's, for it)."""
    if event.party != Party.PROVIDER:
        return None
    move = Move(event.move)
    body = documents.transfer_message(move, kept.id, kept.consumer_pid, event.reason)
    return TRANSFER_PATHS[move], body


OUTBOXES = (
    Outbox(
        ProtocolNegotiation,
        ProtocolNegotiation.negotiation_id,
        NegotiationEvent,
        NegotiationEvent.negotiation_id,
        NegotiationEvent.role != Role.CONSUMER,
        "negotiations",
        _negotiation_message,
        lambda session, kept: session.get(Negotiation, kept.negotiation_id).consumer_id,
    ),
    Outbox(
        ProtocolTransfer,
        ProtocolTransfer.id,
        ProtocolTransferEvent,
        ProtocolTransferEvent.process_id,
        ProtocolTransferEvent.party == Party.PROVIDER,
        "transfers",
        _transfer_message,
        lambda session, kept: kept.consumer_id,
    ),
)


def _post(client: httpx.Client, refusal, url: str, content: bytes, headers) -> str | None:
    """POST ``content`` to ``url``: None when the consumer took it (2xx), else why not."""
    refused = refusal(url)
    if refused is not None:
        return f"callback address refused: {refused}"
    try:
        answer = client.post(url, content=content, headers=headers)
    except httpx.HTTPError as error:
        return f"{type(error).__name__}: {error}"
    if not answer.is_success:
        return f"the consumer answered {answer.status_code}"
    return None

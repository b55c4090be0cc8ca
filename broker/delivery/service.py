"""Deliver approved transfers to the destination's registered inbox, exactly once in effect.

The decision and its outbox row commit together (:mod:`broker.transfers.recording`). Here a worker
leases due rows, POSTs the payload to the inbox URL from the member registry (never one from a
request) with the transfer id as idempotency key, signed for that member and that URL (RFC 9421;
each attempt signed anew just before its POST, :func:`_signature`), and records the outcome
(:func:`attempt` then :func:`settle`; the worker runs several at once,
:mod:`broker.delivery.worker`). A delivery is two transactions: the lease, with the reads its
attempt needs (:func:`claim`), and the outcome; no transaction is open during the POST. A row
the decision wrote already leased to its process's worker is not claimed: its attempt reads it
(:mod:`broker.delivery.handoff`).

- 2xx: ``delivered``; the payload is deleted, the decision keeps its hash.
- 5xx, 408, 429, connection errors and timeouts: retried with exponential backoff (honouring
  ``Retry-After``) until ``delivery_max_attempts``, then ``failed`` with the reason.
- any other 4xx, a redirect (never followed), an inbox URL the SSRF rules refuse now, or a
  destination suspended meanwhile: ``failed`` at once.
- a destination whose health is ``down`` (:mod:`broker.members.health_checks`): *held*, not
  attempted and its attempts not spent (never due, see the repository; one claimed just before
  the destination was marked down is given back untouched). Its health check seeing it up again
  makes it due at once. An attempt that fails while the destination is still marked up spends
  an attempt as any other.

A failed delivery keeps its payload for ``delivery_failed_retention_seconds``: its source or an
admin can have it redelivered (:func:`redeliver`, audited); then the payload is dropped. Every
failed attempt is logged at WARNING with its reason.

A broker killed mid-attempt leaves a lease that expires; the row is then retried, and the member
stores a repeated transfer id once.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from sqlalchemy.orm import Session, sessionmaker

from broker.audit import service as audit
from broker.config import Settings
from broker.delivery import repository
from broker.delivery.keyring import KeyRing
from broker.errors import Conflict
from broker.intake.tables import Written
from broker.storage.db import each_statement_on_its_own
from broker.wire import headers as h
from broker.wire.signing import SignatureError, new_nonce
from broker.wire.statuses import DeliveryStatus, HealthState, MemberStatus

if TYPE_CHECKING:
    from sqlalchemy import Row

    from broker.delivery.models import Delivery

log = logging.getLogger("broker.delivery")

# Answers that can mend themselves: a member refusing a signature (401) may not have pinned a key
# the broker just rotated in (it fetches the broker's keys at most every 30 s); a timeout; a
# member asking to slow down. Any other 4xx is final.
RETRYABLE = {401, 408, 429}
ACTOR = "broker"
HELD = "held"  # what deliver() returns for a delivery it gave back unattempted


@dataclass(frozen=True)
class Attempt:
    """What one POST to an inbox gave: delivered, retry later, or give up."""

    delivered: bool
    retryable: bool
    reason: str | None = None
    retry_after: float | None = None


def backoff(settings: Settings, attempts: int, retry_after: float | None) -> float:
    """Seconds before the next attempt: base * 2^(attempts-1), capped; Retry-After if longer."""
    delay = min(
        settings.delivery_backoff_seconds * 2 ** (attempts - 1),
        settings.delivery_backoff_max_seconds,
    )
    if retry_after is not None:
        delay = min(max(delay, retry_after), settings.delivery_backoff_max_seconds)
    return delay


def redeliver(session: Session, actor: str, transfer_id: str) -> None:
    """Queue a failed delivery again, attempts reset; audited as ``actor``'s. Who may ask (the
    transfer's source or an admin) is checked by :func:`broker.flows.redeliver`.

    Raises :class:`Conflict` when there is nothing to redeliver (not approved, not failed, or
    its data no longer held), saying what to do.
    """
    delivery = repository.get(session, transfer_id)
    if delivery is None or delivery.status != DeliveryStatus.FAILED:
        state = delivery.status if delivery else "not applicable (not approved)"
        raise Conflict(f"Transfer {transfer_id!r} has no failed delivery: its delivery is {state}")
    if not repository.requeue(session, transfer_id, datetime.now(UTC)):
        raise Conflict(
            f"The data of transfer {transfer_id!r} is no longer held (failed deliveries keep it "
            "for BROKER_DELIVERY_FAILED_RETENTION_SECONDS): send the transfer again"
        )
    audit.record(
        session,
        actor,
        "transfer.redelivery_requested",
        transfer_id,
        {"previous_attempts": delivery.attempts, "previous_error": delivery.last_error},
    )
    session.commit()


def forget_old_failures(factory: sessionmaker[Session], settings: Settings) -> None:
    """Drop the payloads of failures older than the retention (nothing to redeliver then)."""
    before = datetime.now(UTC) - timedelta(seconds=settings.delivery_failed_retention_seconds)
    with factory() as session:
        files = repository.forget_failed_payloads(session, before)
        session.commit()
    for name in files:
        Path(name).unlink(missing_ok=True)


def _payload(delivery: Delivery | Row) -> Written:
    """What leaves, as the decision wrote it: bytes, or a file streamed, never read whole. Its
    digest is the one the decision recorded (in the row's ``Content-Digest``), not taken here."""
    if delivery.payload is not None:
        return Written("", len(delivery.payload), data=delivery.payload)
    path = Path(delivery.payload_file)
    return Written("", path.stat().st_size, path=path)


@dataclass(frozen=True)
class Ready:
    """A leased delivery read and checked, to sign and POST (:func:`attempt`)."""

    transfer_id: str
    attempts: int  # including this one
    payload: Written
    headers: dict[str, str]
    inbox_url: str
    payload_file: str | None


@dataclass(frozen=True)
class Tried:
    """An attempt made, its outcome still to be recorded (:func:`settle`)."""

    transfer_id: str
    attempts: int  # including this one
    outcome: Attempt
    payload_file: str | None


@dataclass(frozen=True)
class Leased:
    """A delivery :func:`claim` leased, with what its attempt found when it read it in the
    claim's transaction: ready to POST, an outcome without a POST, or a status."""

    transfer_id: str
    found: Ready | Tried | str


def claim(
    factory: sessionmaker[Session], owner: str, settings: Settings, limit: int = 10
) -> list[Leased]:
    """Lease up to ``limit`` due deliveries for ``owner``, and read each as its attempt would
    (:func:`attempt`) right after: a delivery's first attempt needs no reading of its own."""
    now = datetime.now(UTC)
    until = now + timedelta(seconds=settings.delivery_lease_seconds)
    with factory() as session:
        # The lease is one conditional UPDATE, whole by itself, and the rest reads (or gives
        # back a lease, one UPDATE too): no transaction around them, two round trips fewer a
        # claim (and an idle poll one statement, not three).
        each_statement_on_its_own(session)
        transfer_ids = repository.lease_due(session, owner, now, until, limit)
        rows = repository.with_destinations(session, transfer_ids) if transfer_ids else {}
        leased = [Leased(t, _read(session, owner, t, rows.get(t))) for t in transfer_ids]
        session.commit()
    return leased


def deliver(
    factory: sessionmaker[Session],
    client: httpx.Client,
    owner: str,
    settings: Settings,
    keyring: KeyRing,
    transfer_id: str,
) -> str:
    """Make one attempt at a leased delivery and record its outcome; returns the new status."""
    tried = attempt(factory, client, owner, settings, keyring, transfer_id)
    return tried if isinstance(tried, str) else settle(factory, owner, settings, tried)


def attempt(
    factory: sessionmaker[Session],
    client: httpx.Client,
    owner: str,
    settings: Settings,
    keyring: KeyRing,
    transfer_id: str,
    found: Ready | Tried | str | None = None,
) -> Tried | str:
    """Make one attempt at a leased delivery (the POST is its last step): what it gave, to
    :func:`settle`, or a status when there was nothing to attempt (``lease_lost``, held).
    ``found``: what :func:`claim` read of it just before (else it is read now)."""
    if found is None:
        with factory() as session:
            # One read (and, for a destination down, one UPDATE giving the lease back), each a
            # statement on its own: no transaction (or SQLite lock) held into DNS and HTTP.
            each_statement_on_its_own(session)
            row = repository.with_destinations(session, [transfer_id]).get(transfer_id)
            found = _read(session, owner, transfer_id, row)
            session.commit()
    if not isinstance(found, Ready):
        return found
    headers = found.headers
    refused = settings.inbox_policy.refusal(found.inbox_url)
    if refused:  # checked again at each attempt: a name can resolve elsewhere later
        outcome = Attempt(False, False, f"the inbox URL is refused: {refused}")
    else:
        try:
            headers = headers | _signature(keyring, settings, found.inbox_url, headers)
        except SignatureError as error:
            outcome = Attempt(False, False, f"cannot sign the delivery: {error}")
        else:
            outcome = _post(client, found.inbox_url, found.payload, headers)
    return Tried(transfer_id, found.attempts, outcome, found.payload_file)


def _read(session: Session, owner: str, transfer_id: str, row) -> Ready | Tried | str:
    """A leased delivery as its attempt reads it (``row``: the delivery with its destination's
    status, inbox and health, :func:`repository.with_destinations`): ready to POST; an outcome
    without a POST (its destination gone or suspended, its payload unusable); ``lease_lost``
    when it is no longer ours; :data:`HELD` when its destination is down (given back: the
    caller commits)."""
    if (
        row is None
        or row.status != DeliveryStatus.PENDING
        or row.lease_owner != owner
        or (row.payload is None and row.payload_file is None)  # no longer held
    ):
        return "lease_lost"  # settled or taken over since we claimed it
    destination_id = row.destination_id
    if row.health_state == HealthState.DOWN:
        # Marked down since we claimed it: held, not attempted, its attempts not spent.
        repository.release(session, transfer_id, owner)
        return HELD
    payload_file = row.payload_file
    attempts = row.attempts + 1
    if row.member_status != MemberStatus.ACTIVE:
        state = row.member_status or "gone"
        outcome = Attempt(False, False, f"destination {destination_id!r} is {state}")
        return Tried(transfer_id, attempts, outcome, payload_file)
    try:
        payload = _payload(row)
        # Streamed files too carry their length: the member can refuse a body too large.
        headers = row.headers | {h.CONTENT_LENGTH: str(payload.size)}
    except Exception as error:  # a bad stored value must not stall the outbox
        reason = f"cannot build the delivery: {type(error).__name__}: {error}"
        return Tried(transfer_id, attempts, Attempt(False, False, reason), payload_file)
    return Ready(transfer_id, attempts, payload, headers, row.inbox_url, payload_file)


def settle(factory: sessionmaker[Session], owner: str, settings: Settings, tried: Tried) -> str:
    """Record what an attempt gave, if we still hold the lease; returns the new status (or
    ``lease_lost``). Safe to call again after a database error: it writes once."""
    transfer_id, attempts, outcome = tried.transfer_id, tried.attempts, tried.outcome
    now = datetime.now(UTC)
    if outcome.delivered:
        status = DeliveryStatus.DELIVERED
        values = dict(
            status=status,
            attempts=attempts,
            delivered_at=now,
            payload=None,
            payload_file=None,
            last_error=None,
        )
    elif outcome.retryable and attempts < settings.delivery_max_attempts:
        status = DeliveryStatus.PENDING
        delay = backoff(settings, attempts, outcome.retry_after)
        values = dict(
            attempts=attempts,
            last_error=outcome.reason,
            next_attempt_at=now + timedelta(seconds=delay),
        )
    else:  # the payload stays for a redelivery, until the retention ends
        status = DeliveryStatus.FAILED
        values = dict(status=status, attempts=attempts, failed_at=now, last_error=outcome.reason)
    with factory() as session:
        if not repository.settle(session, transfer_id, owner, **values):
            session.rollback()  # our lease expired and another worker took over
            return "lease_lost"
        if status != DeliveryStatus.PENDING:
            audit.record(
                session,
                ACTOR,
                f"transfer.{status}",
                transfer_id,
                {"attempts": attempts, "reason": outcome.reason},
            )
        session.commit()
    if status != DeliveryStatus.DELIVERED:
        log.warning(
            "delivery of %s: attempt %d %s: %s",
            transfer_id,
            attempts,
            "failed for good" if status == DeliveryStatus.FAILED else "failed, will retry",
            outcome.reason,
        )
    elif tried.payload_file is not None:
        Path(tried.payload_file).unlink(missing_ok=True)  # the decision keeps its hash
    return status


def _signature(
    keyring: KeyRing, settings: Settings, inbox_url: str, headers: dict[str, str]
) -> dict[str, str]:
    """This attempt's signature (RFC 9421), made just before the POST: for the recipient and
    its inbox URL, a fresh nonce, a lifetime of ``delivery_signature_seconds``. A retry is
    signed anew: the member stores a transfer once whatever the signature that brought it."""
    created = int(time.time())
    return keyring.sign_delivery(
        inbox_url,
        headers,
        created=created,
        expires=created + settings.delivery_signature_seconds,
        nonce=new_nonce(),
    )


def _post(client: httpx.Client, url: str, payload: Written, headers: dict[str, str]) -> Attempt:
    try:
        response = client.post(url, content=payload.content(), headers=headers)
    except httpx.TimeoutException:
        return Attempt(False, True, f"timed out posting to {url}")
    except httpx.TransportError as error:
        return Attempt(False, True, f"could not reach {url}: {type(error).__name__}: {error}")
    except (httpx.HTTPError, ValueError) as error:  # e.g. an inbox URL httpx cannot use
        return Attempt(False, True, f"could not post to {url}: {type(error).__name__}: {error}")
    if response.is_success:
        return Attempt(True, False)
    reason = f"HTTP {response.status_code} from {url}: {response.text[:300]}"
    retryable = response.status_code >= 500 or response.status_code in RETRYABLE
    return Attempt(False, retryable, reason, _retry_after(response))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else None

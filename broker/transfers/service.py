"""The intake of a transfer: a member asks to send data to another member; the broker decides.

The walk of a transfer: the route (:mod:`broker.transfers.router`, a form in) -> this intake (the
request's fingerprint, its idempotency key, the choice between a microdata decision now, one in
the background as a job, and an aggregate release) -> the decision of that kind
(:mod:`broker.transfers.microdata`, :mod:`broker.transfers.aggregate`) -> one recording
(:mod:`broker.transfers.recording`: the transfer, its outbox row, the rows of its kind, its audit
entry, one transaction) -> the delivery of the outbox row (:mod:`broker.delivery`). A malformed
dataset is an error and stores nothing; a policy that says no is a normal, recorded decision.

A job accepted here is decided by :mod:`broker.transfers.job_queue`. Also here: who may see a
transfer, and its destination saying it erased what it received.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from broker.audit import service as audit
from broker.callers import Caller
from broker.config import Settings
from broker.delivery.handoff import Handoff, Lease
from broker.errors import (
    Conflict,
    IdempotencyKeyReused,
    NotFound,
    TooManyRequests,
    Unprocessable,
)
from broker.fsla.decide import (
    TransferRequest,
)
from broker.intake.references import Reference
from broker.intake.uploads import Upload, adopt, discard
from broker.members import repository as members
from broker.transfers import aggregate, job_queue, microdata, repository
from broker.transfers.models import Transfer, TransferJob
from broker.wire import headers as h
from broker.wire.canonical import sha256_of
from broker.wire.statuses import DeliveryStatus, JobState, TransferKind, TransferStatus


def fingerprint(request: TransferRequest, dataset_sha256: str) -> str:
    body = {
        "destination": request.destination,
        "purpose": request.purpose,
        "quasi_identifiers": list(request.quasi_identifiers),
        "sensitive": list(request.sensitive),
        "anonymize": request.anonymize,
        "person_key": request.person_key,
        "dataset_sha256": dataset_sha256,
    }
    if request.min_utility_percent is not None:  # absent before the floor existed: same hash
        body["min_utility_percent"] = request.min_utility_percent
    if request.agreement_id is not None:  # likewise
        body["agreement_id"] = request.agreement_id
    if request.hierarchies:  # absent before hierarchies could be sent: same hash
        body["hierarchies"] = request.hierarchies
    if request.kind != TransferKind.MICRODATA:  # absent before aggregate releases: same hash
        body |= {"kind": request.kind, "queries": request.queries}
        body |= {"epsilon": request.epsilon, "delta": request.delta}
    return sha256_of(body)


@dataclass(frozen=True)
class Submitted:
    """What a transfer request led to: a decision now, or a job that decides in the background.

    ``replayed``: the idempotency key named an earlier identical request, whose result this is.
    ``handed_over``: its delivery was recorded leased to this process's worker, and started.
    """

    transfer: Transfer | None = None
    job: TransferJob | None = None
    replayed: bool = False
    handed_over: bool = False


def submit(
    session: Session,
    caller: Caller,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
    in_background: bool = False,
    handoff: Handoff | None = None,
) -> Submitted:
    """Take a transfer in: replay an earlier identical request (its idempotency key), then
    decide it by its kind, now or (``in_background``, never for a dry run) as a job, and record
    the decision (:mod:`broker.transfers.recording`). An approved microdata transfer decided now
    is handed to ``handoff`` (this process's delivery worker) when it has a free place
    (:mod:`broker.delivery.handoff`).

    A transfer by reference is always decided in the background, dry runs included: its data
    is as large as a cluster holds. An aggregate release is always decided now
    (:mod:`broker.transfers.aggregate`).
    """
    is_aggregate = request.kind == TransferKind.AGGREGATE
    if is_aggregate and request.agreement_id is not None:
        raise Unprocessable(
            "An agreement covers the rows of a dataset (microdata); an aggregate release is "
            "judged by the privacy budget alone: send it without agreement_id"
        )
    request_fingerprint = fingerprint(request, upload.sha256)
    if request.idempotency_key and not request.dry_run:
        earlier = _earlier(session, caller.member_id, request.idempotency_key, request_fingerprint)
        if earlier is not None:
            return earlier
    if is_aggregate:
        return _aggregate(session, caller, upload, request, settings, request_fingerprint)
    if isinstance(upload, Reference) and request.dry_run:
        raise Unprocessable("A transfer by reference cannot be a dry run: send it for real")
    if request.agreement_id is not None:
        microdata.agreement_of(session, caller.member_id, request.agreement_id)  # before a job
    if (in_background and not request.dry_run) or isinstance(upload, Reference):
        return _enqueue(session, caller.member_id, upload, request, request_fingerprint, settings)
    transfer_id = str(uuid.uuid4())
    decided = microdata.decide(
        session, caller.member_id, transfer_id, upload, request, settings, request_fingerprint
    )
    if request.dry_run:
        return Submitted(decided.transfer)
    lease = None
    if decided.delivery is not None and handoff is not None:
        lease = handoff.reserve()
        if lease is not None:  # the row is written leased, as a claim leases it
            decided.delivery.lease_owner = lease.owner
            decided.delivery.lease_expires_at = lease.expires_at
    try:
        microdata.record(session, decided)
        session.flush()  # all but the commit: a failure up to here recorded nothing
    except IntegrityError:
        # The same idempotency key raced us: answer as the winner did.
        session.rollback()
        _cancel(handoff, lease)
        microdata.drop_payload_file(decided)
        key = request.idempotency_key or ""
        earlier = _earlier(session, caller.member_id, key, request_fingerprint)
        if earlier is None:
            raise
        return earlier
    except BaseException:  # a transfer to the same destination approved meanwhile, a fault
        _cancel(handoff, lease)
        microdata.drop_payload_file(decided)
        session.rollback()
        raise
    # A commit whose answer is lost may have recorded the decision: its delivery file stays (the
    # spool sweep removes it if no delivery holds it), a retry with the same key finds it, and a
    # lease it was written under runs out for a claim.
    try:
        session.commit()
    except BaseException:
        _cancel(handoff, lease)
        raise
    if lease is not None:
        handoff.hand(lease, decided.transfer.id)
    return Submitted(decided.transfer, handed_over=lease is not None)


def _cancel(handoff: Handoff | None, lease: Lease | None) -> None:
    if lease is not None and handoff is not None:
        handoff.cancel(lease)


def _aggregate(
    session: Session,
    caller: Caller,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
    request_fingerprint: str,
) -> Submitted:
    """An aggregate release, decided now: its answers are counts over the table the upload
    limits already bound, computed outside the recording transaction (the budget's lock stays
    short)."""
    decided = aggregate.decide(session, caller.member_id, upload, request, settings)
    if request.dry_run:
        return Submitted(aggregate.dry_run(decided, request_fingerprint))
    answered = aggregate.answer(decided)
    try:
        transfer = aggregate.record(session, answered, request_fingerprint)
        if transfer.delivery is not None:  # for the answer: a delivery held, its destination down
            set_committed_value(transfer, "destination_health", answered.destination_health)
        session.commit()
    except IntegrityError:  # the same idempotency key raced us: answer as the winner did
        session.rollback()
        key = request.idempotency_key or ""
        earlier = _earlier(session, caller.member_id, key, request_fingerprint)
        if earlier is None:
            raise
        return earlier
    return Submitted(transfer)


def _earlier(
    session: Session, source_id: str, key: str, request_fingerprint: str
) -> Submitted | None:
    """The result of an earlier request with this idempotency key: its transfer, or its job
    while that is not done; 409 when the key was used for another request."""
    earlier: Transfer | TransferJob | None = repository.by_idempotency_key(session, source_id, key)
    if earlier is None:
        earlier = repository.job_by_idempotency_key(session, source_id, key)
    if earlier is None:
        return None
    if earlier.request_fingerprint != request_fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency key {key!r} was used for another request "
            f"({'transfer' if isinstance(earlier, Transfer) else 'job'} {earlier.id}); use a "
            "new key for a new request"
        )
    if isinstance(earlier, Transfer):
        return Submitted(transfer=earlier, replayed=True)
    return Submitted(job=earlier, replayed=True)


def _enqueue(
    session: Session,
    source_id: str,
    upload: Upload | Reference,
    request: TransferRequest,
    request_fingerprint: str,
    settings: Settings,
) -> Submitted:
    """Accept the transfer as a job: its upload moves to the job's spool file (a reference
    stays what it is). A member holds at most ``BROKER_JOBS_PER_MEMBER`` jobs not yet decided:
    each may hold gigabytes of spool, and a queue that one member fills stalls the others."""
    waiting = repository.live_jobs_of(session, source_id)
    if waiting >= settings.jobs_per_member:
        raise TooManyRequests(
            f"Member {source_id!r} has {waiting} transfers waiting for a decision, the most "
            f"this broker holds for one member ({settings.jobs_per_member}): poll them, then "
            "send this one again",
            retry_after=10,
        )
    job_id = str(uuid.uuid4())
    now = datetime.now(UTC)
    job = TransferJob(
        id=job_id,
        source_id=source_id,
        state=JobState.QUEUED,
        stage="queued",
        progress=0.0,
        request=asdict(request),
        upload=_source_of(upload),
        size_bytes=upload.size,
        idempotency_key=request.idempotency_key,
        request_fingerprint=request_fingerprint,
        attempts=0,
        created_at=now,
        updated_at=now,
    )
    kept = upload
    if isinstance(upload, Upload):
        kept = adopt(upload, job_queue.job_upload_path(settings, job_id))
    try:
        session.add(job)
        audit.record(
            session,
            source_id,
            "transfer.accepted",
            job_id,
            {"destination": request.destination, "dataset_sha256": upload.sha256},
        )
        session.commit()
    except IntegrityError:
        session.rollback()
        _discard(kept)
        earlier = _earlier(session, source_id, request.idempotency_key or "", request_fingerprint)
        if earlier is None:
            raise
        return earlier
    except BaseException:
        session.rollback()
        _discard(kept)
        raise
    session.refresh(job)
    return Submitted(job=job)


def _source_of(upload: Upload | Reference) -> dict[str, Any]:
    """What a job keeps of its data: the upload's metadata, or the reference (its pinned
    files: the job reads those, checked, and nothing else)."""
    if isinstance(upload, Reference):
        return {"reference": upload.stored()}
    return {
        "sha256": upload.sha256,
        "filename": upload.filename,
        "content_type": upload.content_type,
    }


def _discard(source: Upload | Reference) -> None:
    if isinstance(source, Upload):
        discard(source)


def get_visible(session: Session, caller: Caller, transfer_id: str) -> Transfer:
    """The transfer, if the caller sent it, is an admin, or received it approved; else 404.

    A destination sees only what was approved for it (a refused transfer, its column names or
    the sender's file name would cross the border without being measured), and a member
    registered after a transfer was addressed to its id (then unknown) does not see it.
    """
    transfer = repository.get(session, transfer_id)
    if transfer is None or not (caller.is_admin or _concerns(session, caller, transfer)):
        raise NotFound(f"No transfer {transfer_id!r}")
    return transfer


def record_erasure(session: Session, caller: Caller, transfer_id: str) -> None:
    """The destination says it deleted what it received (its retention ended, or it chose to):
    recorded once, audited. Only the destination of a delivered transfer may say so."""
    transfer = repository.get(session, transfer_id)
    if transfer is None or transfer.destination_id != caller.member_id:
        raise NotFound(f"No transfer {transfer_id!r} delivered to you")
    delivery = transfer.delivery
    if delivery is None or delivery.status != DeliveryStatus.DELIVERED:
        raise Conflict(f"Transfer {transfer_id!r} was not delivered: there is nothing to erase")
    if transfer.erased_at is not None:
        return
    transfer.erased_at = datetime.now(UTC)
    late = transfer.retain_until is not None and transfer.erased_at > transfer.retain_until
    audit.record(
        session,
        caller.name,
        "transfer.erased",
        transfer_id,
        {
            "retain_until": h.retain_until(transfer.retain_until) or None,
            "agreement": transfer.agreement_id,
            "after_the_limit": late,
        },
    )
    session.commit()


def get_sent(session: Session, caller: Caller, transfer_id: str) -> Transfer:
    """The transfer, if the caller sent it or is an admin; else 404."""
    transfer = repository.get(session, transfer_id)
    if transfer is None or not (caller.is_admin or transfer.source_id == caller.member_id):
        raise NotFound(f"No transfer {transfer_id!r} that you sent")
    return transfer


def get_visible_job(session: Session, caller: Caller, job_id: str) -> TransferJob:
    """The job, if the caller sent it or is an admin; else 404 (its destination learns of the
    transfer once it is decided and approved)."""
    job = repository.get_job(session, job_id)
    if job is None or not (caller.is_admin or job.source_id == caller.member_id):
        raise NotFound(f"No transfer job {job_id!r}")
    return job


def _concerns(session: Session, caller: Caller, transfer: Transfer) -> bool:
    if transfer.source_id == caller.member_id:
        return True
    if transfer.destination_id != caller.member_id or transfer.status != TransferStatus.APPROVED:
        return False
    member = members.get(session, caller.member_id)
    return member is not None and member.created_at <= transfer.created_at


def list_visible(
    session: Session, caller: Caller, status: str | None, offset: int, limit: int
) -> tuple[list[Transfer], int]:
    if caller.is_admin:
        return repository.page(session, None, None, status, offset, limit)
    member = members.get(session, caller.member_id)
    return repository.page(session, member.id, member.created_at, status, offset, limit)

"""The intake of a transfer: a member asks to send data to another member; the broker decides.

The walk of a transfer: the route (:mod:`broker.transfers.router`, a form in) -> this intake (the
request's fingerprint, its idempotency key, the choice between a microdata decision now, one in
the background as a job, and an aggregate release) -> the decision of that kind
(:mod:`broker.transfers.microdata`, :mod:`broker.transfers.aggregate`) -> one recording
(:mod:`broker.transfers.recording`: the transfer, its outbox row, the rows of its kind, its audit
entry, one transaction) -> the delivery of the outbox row (:mod:`broker.delivery`). A malformed
dataset is an error and stores nothing; a policy that says no is a normal, recorded decision.

Also here: the jobs that decide in the background (leased, as deliveries are), the spool sweep,
and who may see a transfer.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from broker.audit import service as audit
from broker.background import Deadline
from broker.callers import Caller
from broker.config import Settings
from broker.errors import (
    BrokerError,
    Conflict,
    IdempotencyKeyReused,
    NotFound,
    TooManyRequests,
    Unprocessable,
)
from broker.fsla.decide import (
    TransferRequest,
)
from broker.members import repository as members
from broker.references import Reference
from broker.transfers import aggregate, dry_runs, microdata, repository
from broker.transfers.models import Transfer, TransferJob
from broker.uploads import Upload, adopt, discard
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
    if request.kind != TransferKind.MICRODATA:  # absent before aggregate releases: same hash
        body |= {"kind": request.kind, "queries": request.queries}
        body |= {"epsilon": request.epsilon, "delta": request.delta}
    return sha256_of(body)


@dataclass(frozen=True)
class Submitted:
    """What a transfer request led to: a decision now, or a job that decides in the background.

    ``replayed``: the idempotency key named an earlier identical request, whose result this is.
    """

    transfer: Transfer | None = None
    job: TransferJob | None = None
    replayed: bool = False


def submit(
    session: Session,
    caller: Caller,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
    in_background: bool = False,
) -> Submitted:
    """Take a transfer in: replay an earlier identical request (its idempotency key), then
    decide it by its kind, now or (``in_background``, never for a dry run) as a job, and record
    the decision (:mod:`broker.transfers.recording`).

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
    try:
        microdata.record(session, decided)
        session.flush()  # all but the commit: a failure up to here recorded nothing
    except IntegrityError:
        # The same idempotency key raced us: answer as the winner did.
        session.rollback()
        microdata.drop_payload_file(decided)
        key = request.idempotency_key or ""
        earlier = _earlier(session, caller.member_id, key, request_fingerprint)
        if earlier is None:
            raise
        return earlier
    except BaseException:  # a release to the same destination meanwhile, a database fault
        microdata.drop_payload_file(decided)
        session.rollback()
        raise
    # A commit whose answer is lost may have recorded the decision: its delivery file stays (the
    # spool sweep removes it if no delivery holds it), and a retry with the same key finds it.
    session.commit()
    return Submitted(decided.transfer)


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


# --- decisions in the background (202 Accepted) ---------------------------------------------


def job_upload_path(settings: Settings, job_id: str) -> Path:
    return settings.spool_dir / "jobs" / f"{job_id}.upload"


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
        kept = adopt(upload, job_upload_path(settings, job_id))
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


def claim_job(factory: sessionmaker[Session], owner: str, settings: Settings) -> str | None:
    """Lease a job that is queued or whose holder stopped; None when there is none.

    Fair across members: the oldest job of the member with the fewest jobs running (in every
    process sharing the database), never one of a member already running
    ``job_slots_per_member``. A job whose holder stopped ``job_max_attempts`` times (a crash
    that it causes, say) fails instead of running again.
    """
    now = datetime.now(UTC)
    until = now + timedelta(seconds=settings.job_lease_seconds)
    per_member = settings.job_slots_per_member
    with factory() as session:
        for job_id, source_id in repository.due_jobs(session, now, per_member, limit=5):
            repository.lock_member(session, source_id)  # claims of one member take turns
            if not repository.take_job(session, job_id, source_id, owner, now, until, per_member):
                session.rollback()  # let go of the member before locking the next one
                continue
            job = repository.get_job(session, job_id)
            if job.attempts <= settings.job_max_attempts:
                session.commit()
                return job_id
            failed = BrokerError(
                f"The broker stopped {settings.job_max_attempts} times while deciding this "
                "transfer; it was not decided. Send it again or ask the federation's admins."
            )
            _settle(session, job_id, owner, JobState.FAILED, failed.as_problem())
            discard_job_upload(settings, job_id)
        session.commit()
    return None


def run_job(
    factory: sessionmaker[Session],
    job_id: str,
    owner: str,
    settings: Settings,
    deadline: Deadline | None = None,
) -> str:
    """Decide a job this process has leased; returns its new state.

    The transfer is recorded in the transaction that marks the job done, and only while this
    process still holds the lease: a job taken over by another process, or failed past its
    ``deadline`` meanwhile (:func:`fail_job`), is decided once. The deadline is also checked
    at every stage (and by the cluster before each file), so that work past it stops soon.
    """
    with factory() as session:
        job = repository.get_job(session, job_id)
        if job is None or job.state != JobState.RUNNING or job.lease_owner != owner:
            return "lease_lost"
        request = TransferRequest(
            **job.request
            | {
                "quasi_identifiers": tuple(job.request["quasi_identifiers"]),
                "sensitive": tuple(job.request["sensitive"]),
            }
        )
        source_id = job.source_id

        def progress(stage: str, fraction: float) -> None:
            if deadline is not None:
                deadline.check()
            now = datetime.now(UTC)
            until = now + timedelta(seconds=settings.job_lease_seconds)
            with factory() as heartbeat:
                repository.job_progress(heartbeat, job_id, owner, stage, fraction, now, until)
                heartbeat.commit()

        try:
            upload = _source_from(job, settings)
            decided = microdata.decide(
                session,
                source_id,
                job_id,
                upload,
                request,
                settings,
                job.request_fingerprint,
                progress,
                deadline,
            )
        except BrokerError as error:  # the data cannot be decided: say why, store nothing
            session.rollback()
            state = _settle(session, job_id, owner, JobState.FAILED, error.as_problem())
        else:
            microdata.record(session, decided)
            state = _settle(session, job_id, owner, JobState.DONE, None)
            if state == "lease_lost":
                microdata.drop_payload_file(decided)
        if state != "lease_lost":
            discard_job_upload(settings, job_id)
        return state


def fail_job(
    factory: sessionmaker[Session], job_id: str, owner: str, settings: Settings, error: BrokerError
) -> bool:
    """Fail a job this process holds without waiting for it (past its deadline, stuck in a
    call that does not return): whatever it records later is refused, as the lease is gone.
    True when it was still running here."""
    with factory() as session:
        failed = _settle(session, job_id, owner, JobState.FAILED, error.as_problem())
    if failed == "lease_lost":
        return False
    discard_job_upload(settings, job_id)
    return True


def extend_lease(
    factory: sessionmaker[Session], job_id: str, owner: str, settings: Settings
) -> None:
    """Keep a job that this process is still working on (a stage may outlast a lease)."""
    now = datetime.now(UTC)
    until = now + timedelta(seconds=settings.job_lease_seconds)
    with factory() as session:
        if repository.extend_job_lease(session, job_id, owner, now, until):
            session.commit()


def requeue_job(factory: sessionmaker[Session], job_id: str, owner: str) -> bool:
    """Give a job back after an unexpected error; the next claim counts another attempt.
    False when it was not this process's any more (failed past its deadline meanwhile)."""
    with factory() as session:
        requeued = repository.settle_job(
            session, job_id, owner, datetime.now(UTC), state=JobState.QUEUED, stage="queued"
        )
        session.commit()
    return requeued


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


def _source_from(job: TransferJob, settings: Settings) -> Upload | Reference:
    if "reference" in job.upload:
        return Reference.of(job.upload["reference"])
    return Upload(
        job_upload_path(settings, job.id),
        job.size_bytes,
        job.upload["sha256"],
        job.upload["filename"],
        job.upload["content_type"],
    )


def _discard(source: Upload | Reference) -> None:
    if isinstance(source, Upload):
        discard(source)


def sweep_spool(factory: sessionmaker[Session], settings: Settings, now: float) -> list[Path]:
    """Remove the spool files nothing will use (a process that died mid-request or mid-job
    leaves them): request copies, job uploads whose job is over or gone, delivery files no
    delivery holds. Only files older than ``BROKER_SPOOL_ORPHAN_SECONDS``: younger ones may
    belong to a request, or to a decision whose transaction has not committed yet."""
    cutoff = now - settings.spool_orphan_seconds
    root = settings.spool_dir

    def old(folder: Path, pattern: str) -> list[Path]:
        return [f for f in folder.glob(pattern) if f.is_file() and f.stat().st_mtime < cutoff]

    with factory() as session:
        live_jobs = set(repository.live_job_ids(session))
        held_files = {Path(name) for name in repository.payload_files(session)}
    orphans = old(root, "*.upload")
    orphans += [f for f in old(root / "jobs", "*.upload") if f.stem not in live_jobs]
    orphans += [f for f in old(root / "deliveries", "*") if f not in held_files]
    for orphan in orphans:
        orphan.unlink(missing_ok=True)
    return orphans + dry_runs.sweep(settings, now)


def discard_job_upload(settings: Settings, job_id: str) -> None:
    job_upload_path(settings, job_id).unlink(missing_ok=True)


def _settle(
    session: Session, job_id: str, owner: str, state: JobState, problem: dict | None
) -> str:
    settled = repository.settle_job(
        session,
        job_id,
        owner,
        datetime.now(UTC),
        state=state,
        stage=state,
        progress=1.0,
        problem=problem,
    )
    if not settled:
        session.rollback()
        return "lease_lost"
    session.commit()
    return state


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

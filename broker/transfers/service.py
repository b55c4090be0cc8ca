"""One use case: a member asks to send a dataset to another member; the broker decides.

Parse the upload into its canonical table, measure it, evaluate the source's export rules and the
destination's import rules, and record the decision, its outbox row (approved transfers only) and
its audit entry in one transaction. A malformed dataset is an error and stores nothing; a policy
that says no is a normal, recorded decision.

What leaves is written by the broker from the table it measured (or its anonymized version), in
the format that came in, rows shuffled, the person key removed: never the bytes it received.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from broker.audit import service as audit
from broker.background import Deadline
from broker.config import Settings
from broker.delivery.models import Delivery
from broker.deps import Caller
from broker.engines.base import Engine
from broker.errors import (
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    NotFound,
    ProblemError,
    TooManyRequests,
    Unprocessable,
    storage_faults,
)
from broker.fsla.decide import (
    Agreed,
    Case,
    Effort,
    Measured,
    Onward,
    Outcome,
    Parties,
    Party,
    TransferRequest,
    decide,
    lookback_days,
    measure,
)
from broker.fsla.linkage import History, released_classes
from broker.fsla.models import FSLARecord
from broker.fsla.offers import Terms
from broker.members import repository as members
from broker.negotiations import repository as negotiations_repository
from broker.negotiations import service as negotiations
from broker.references import REFERENCE, Reference, open_reference
from broker.roles import Roles
from broker.tables import counting_limits, open_upload
from broker.transfers import dry_runs, repository
from broker.transfers.models import Release, Transfer, TransferJob
from broker.uploads import Upload, adopt, discard
from broker.wire.canonical import sha256_of
from broker.wire.statuses import DeliveryStatus, JobState, TransferKind, TransferStatus

_EXTENSIONS = {"csv": ".csv", "json": ".json", "parquet": ".parquet", REFERENCE: ".reference.json"}


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


Progress = Callable[[str, float], None]


def _no_progress(stage: str, fraction: float) -> None:
    """Synchronous decisions report no progress: the answer is the decision."""


def submit(
    session: Session,
    caller: Caller,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
    in_background: bool = False,
) -> Submitted:
    """Decide a transfer now, or (``in_background``, never for a dry run) accept it as a job.

    A transfer by reference is always decided in the background, dry runs included: its data
    is as large as a cluster holds. An aggregate release has a use case of its own
    (:mod:`broker.budget.service`).
    """
    if request.kind == TransferKind.AGGREGATE:
        if request.agreement_id is not None:
            raise Unprocessable(
                "An agreement covers the rows of a dataset (microdata); an aggregate release is "
                "judged by the privacy budget alone: send it without agreement_id"
            )
        from broker.budget import service as aggregate_release

        return aggregate_release.submit(session, caller, upload, request, settings)
    request_fingerprint = fingerprint(request, upload.sha256)
    if request.idempotency_key and not request.dry_run:
        earlier = _earlier(session, caller.member_id, request.idempotency_key, request_fingerprint)
        if earlier is not None:
            return earlier
    if isinstance(upload, Reference) and request.dry_run:
        raise Unprocessable("A transfer by reference cannot be a dry run: send it for real")
    if request.agreement_id is not None:
        _agreed(session, caller.member_id, request.agreement_id)  # before accepting a job
    if (in_background and not request.dry_run) or isinstance(upload, Reference):
        return _enqueue(session, caller.member_id, upload, request, request_fingerprint, settings)
    transfer_id = str(uuid.uuid4())
    decided = _decide(session, caller.member_id, transfer_id, upload, request, settings)
    if request.dry_run:
        return Submitted(decided.transfer)
    try:
        _record(session, decided)
        session.flush()  # all but the commit: a failure up to here recorded nothing
    except IntegrityError:
        # The same idempotency key raced us: answer as the winner did.
        session.rollback()
        _drop_payload_file(decided)
        key = request.idempotency_key or ""
        earlier = _earlier(session, caller.member_id, key, request_fingerprint)
        if earlier is None:
            raise
        return earlier
    except BaseException:  # a release to the same destination meanwhile, a database fault
        _drop_payload_file(decided)
        session.rollback()
        raise
    # A commit whose answer is lost may have recorded the decision: its delivery file stays (the
    # spool sweep removes it if no delivery holds it), and a retry with the same key finds it.
    session.commit()
    return Submitted(decided.transfer)


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


@dataclass(frozen=True, eq=False)
class _Decided:
    """A decision ready to be recorded: the transfer, its outbox row, its audit details."""

    transfer: Transfer
    delivery: Delivery | None
    audit: dict[str, Any]
    release: Release | None = None
    history: History | None = None  # the earlier releases the decision was joined with


@storage_faults("its working files (data measured out of core spills to disk)")
def _decide(
    session: Session,
    source_id: str,
    transfer_id: str,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
    progress: Progress = _no_progress,
    deadline: Deadline | None = None,
) -> _Decided:
    """Read, measure and decide; nothing is written (see :func:`_record`). A full disk is
    :class:`~broker.errors.InsufficientStorage` (a job fails with it: send again).

    Short reads, CPU work outside any transaction: on SQLite a transaction holds the write lock,
    and measuring or anonymizing a large upload takes seconds. ``deadline`` (a job's) is also
    checked by the cluster before each file it reads for a transfer by reference.
    """
    session.rollback()
    progress("reading", 0.05)
    roles_asked = (request.quasi_identifiers, request.sensitive, request.person_key)
    if isinstance(upload, Reference):
        table = open_reference(upload, source_id, *roles_asked, settings, deadline)
    else:
        table = open_upload(upload, settings, *roles_asked)
    roles = table.roles
    progress("measuring", 0.2)
    with counting_limits():
        report, quasi_identifiers, inferred = measure(
            table.engine, roles.quasi_identifiers, roles.sensitive
        )
    parties = _read_parties(session, source_id, request.destination)
    history = _history(session, parties, request)
    agreed = None
    if request.agreement_id is not None:
        agreed = _agreed(session, source_id, request.agreement_id)
    onward = None
    received = negotiations_repository.received_under_no_onward(session, source_id, upload.sha256)
    if received is not None:
        onward = Onward(received[0].id, received[1].id)
    session.rollback()
    progress("deciding", 0.5)
    with counting_limits():
        case = Case(
            parties,
            request,
            Roles(quasi_identifiers, roles.sensitive, roles.person_key),
            Measured(table.engine, report),
            history,
            agreed,
            onward,
        )
        effort = Effort(settings.anonymize_max_suppression, settings.remedy_seconds)
        outcome = decide(case, effort)
    source = parties.source
    leaving = table.engine if outcome.anonymized is None else outcome.anonymized
    delivering = outcome.status == TransferStatus.APPROVED and not request.dry_run
    delivered_name = _delivered_name(transfer_id, table.format, outcome)
    written = None
    if delivering:
        progress("writing", 0.85)
        written = table.write(leaving, delivered_name, settings)
    preview = None
    if request.dry_run:  # what would leave, kept a while for its source to fetch
        suffix = _EXTENSIONS[table.format]
        preview = dry_runs.preview(table, outcome, transfer_id, source.id, suffix, settings)
    dataset = {
        "sha256": upload.sha256,
        "size_bytes": upload.size,
        "rows": table.engine.rows,
        "columns": table.columns,
        "filename": getattr(upload, "filename", None),
        "location": getattr(upload, "location", None),
        "format": table.format,
        "notes": list(table.notes),
        "anonymized": outcome.anonymized is not None,
        "delivered_filename": delivered_name,
        "delivered_sha256": written and written.sha256,
        "delivered_rows": leaving.rows,
        "delivered_columns": len(leaving.columns),
        "preview": preview,
    }
    transfer = Transfer(
        id=transfer_id,
        source_id=source.id,
        destination_id=request.destination,
        purpose=_policy_spelling(request.purpose, parties),
        status=outcome.status,
        anonymize=request.anonymize,
        quasi_identifiers=list(quasi_identifiers),
        quasi_identifiers_inferred=inferred,
        sensitive=list(request.sensitive),
        report=outcome.report.as_dict(),
        rules=[r.as_dict() for r in outcome.rules],
        remedy=outcome.remedy,
        policy_versions=outcome.versions,
        dataset=dataset,
        idempotency_key=None if request.dry_run else request.idempotency_key,
        request_fingerprint=fingerprint(request, upload.sha256),
        created_at=datetime.now(UTC),
        agreement_id=request.agreement_id,
        delivered_sha256=written and written.sha256,
    )
    if written is not None and outcome.retention_days is not None:
        transfer.retain_until = transfer.created_at + timedelta(days=outcome.retention_days)
    delivery = None
    if written is not None:
        delivery = Delivery(
            transfer_id=transfer.id,
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=transfer.created_at,
            payload=written.data,
            payload_file=written.path and str(written.path),
            payload_type=table.media_type,  # what the broker wrote, never the sender's say-so
        )
    release = None
    if written is not None:
        try:
            release = _release(transfer, leaving, roles.sensitive, settings)
        except BaseException:  # nothing will deliver the file
            if written.path is not None:
                written.path.unlink(missing_ok=True)
            raise
    audit_details = {
        "status": outcome.status,
        "source": source.id,
        "destination": request.destination,
        "purpose": request.purpose,
        "policy_versions": outcome.versions,
        "dataset_sha256": upload.sha256,
        "anonymized": dataset["anonymized"],
        "failed_rules": [
            f"{r.rule}:{r.attribute}" if r.attribute else r.rule
            for r in outcome.rules
            if not r.passed
        ],
    }
    return _Decided(transfer, delivery, audit_details, release, history)


def _agreed(session: Session, source_id: str, agreement_id: str) -> Agreed:
    """The agreement a transfer names, if its source may make transfers under it now."""
    found = negotiations.usable(session, agreement_id)
    if found.provider_id != source_id:
        raise Forbidden(
            f"Agreement {agreement_id} is {found.provider_id!r}'s: only its provider sends "
            "data under it"
        )
    return Agreed(found.id, found.provider_id, found.consumer_id, Terms.of(found.terms))


def _joined_with_every_release(session: Session, decided: _Decided) -> None:
    transfer, history = decided.transfer, decided.history
    seen = {r.transfer_id for r in history.releases} | {transfer.id}
    recorded = repository.releases_since(
        session, transfer.source_id, transfer.destination_id, history.since
    )
    meanwhile = [r.transfer_id for r in recorded if r.transfer_id not in seen]
    if meanwhile:
        raise Conflict(
            f"Transfer {meanwhile[0]} to {transfer.destination_id!r} was approved while this "
            "one was decided, which did not join them: send it again"
        )


def _history(session: Session, parties: Parties, request: TransferRequest) -> History | None:
    """The earlier releases to the same destination that the transfer's rules look back on."""
    days = lookback_days(parties, request)
    if days is None:
        return None
    now = datetime.now(UTC)
    since = now - timedelta(days=days)
    earlier = repository.releases_since(session, parties.source.id, request.destination, since)
    return History(now, tuple(earlier), since)


def _release(
    transfer: Transfer, leaving: Engine, sensitive: tuple[str, ...], settings: Settings
) -> Release:
    """What an approved transfer releases, remembered for the linkage rule: the classes of the
    quasi-identifiers as they leave, never the data."""
    quasi = [q for q in transfer.quasi_identifiers if q in leaving.columns]
    classes, count = released_classes(leaving, quasi, settings.linkage_max_classes)
    return Release(
        transfer_id=transfer.id,
        source_id=transfer.source_id,
        destination_id=transfer.destination_id,
        released_at=transfer.created_at,
        quasi_identifiers=quasi,
        sensitive=[s for s in sensitive if s in leaving.columns],
        classes=None if classes is None else [[list(labels), n] for labels, n in classes],
        class_count=count,
    )


def _drop_payload_file(decided: _Decided) -> None:
    """A decision that was not recorded leaves no file behind."""
    if decided.delivery is not None and decided.delivery.payload_file is not None:
        Path(decided.delivery.payload_file).unlink(missing_ok=True)


def _record(session: Session, decided: _Decided) -> None:
    """The decision, its outbox row and its audit entry, in the caller's transaction.

    A release joined with earlier ones is recorded only if no other release to the same
    destination was recorded while it was decided (it was not joined with that one): 409, send
    again. The source's row is locked first, so two such recordings take turns.
    """
    checked = decided.release is not None and decided.history is not None
    if checked:
        repository.lock_member(session, decided.transfer.source_id)
    repository.add(session, decided.transfer, decided.delivery)
    if decided.release is not None:
        repository.add_release(session, decided.release)
    if checked:
        _joined_with_every_release(session, decided)
    transfer = decided.transfer
    audit.record(session, transfer.source_id, "transfer.decided", transfer.id, decided.audit)


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
            failed = ProblemError(
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
            decided = _decide(
                session, source_id, job_id, upload, request, settings, progress, deadline
            )
        except ProblemError as error:  # the data cannot be decided: say why, store nothing
            session.rollback()
            state = _settle(session, job_id, owner, JobState.FAILED, error.as_problem())
        else:
            _record(session, decided)
            state = _settle(session, job_id, owner, JobState.DONE, None)
            if state == "lease_lost":
                _drop_payload_file(decided)
        if state != "lease_lost":
            discard_job_upload(settings, job_id)
        return state


def fail_job(
    factory: sessionmaker[Session], job_id: str, owner: str, settings: Settings, error: ProblemError
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


def _policy_spelling(purpose: str, parties: Parties) -> str:
    """The purpose as the source's F-SLA record spells it: its letter case would be a channel."""
    record = parties.policies[parties.source.jurisdiction][0]
    wanted = purpose.strip().casefold()
    return next((p for p in record.allowed_purposes if p.casefold() == wanted), purpose)


def _delivered_name(transfer_id: str, data_format: str, outcome: Outcome) -> str:
    """The broker's own name for the delivered file: the sender's file name is free text that
    would cross the border unmeasured."""
    suffix = ".anonymized" if outcome.anonymized is not None else ""
    return f"transfer-{transfer_id}{suffix}{_EXTENSIONS[data_format]}"


def _read_parties(session: Session, source_id: str, destination_id: str) -> Parties:
    """The two members and their jurisdictions' current F-SLA versions, in one query."""
    rows = {row.id: row for row in repository.parties(session, (source_id, destination_id))}
    found = {}
    for row in filter(None, (rows.get(source_id), rows.get(destination_id))):
        if row.version is None:
            raise NotFound(f"No F-SLA record for jurisdiction {row.jurisdiction!r}")
        found[row.jurisdiction] = (FSLARecord.model_validate(row.document), row.version)

    def party(member_id: str) -> Party | None:
        row = rows.get(member_id)
        return row and Party(row.id, row.jurisdiction, row.status)

    return Parties(party(source_id), party(destination_id), found)


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

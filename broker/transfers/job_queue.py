"""Transfers decided in the background (``202 Accepted``): the jobs the intake accepted
(:func:`broker.transfers.service.submit`), leased by one broker process at a time as deliveries
are, decided (:mod:`broker.transfers.microdata`) and recorded in the transaction that settles
them; and the sweep of the spool files nothing will use. The threads that run them are
:mod:`broker.transfers.jobs`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from broker.background import Deadline
from broker.config import Settings
from broker.errors import ProblemError
from broker.fsla.decide import TransferRequest
from broker.intake.references import Reference
from broker.intake.uploads import Upload
from broker.storage.db import each_statement_on_its_own
from broker.transfers import dry_runs, microdata, repository
from broker.transfers.models import TransferJob
from broker.wire.statuses import JobState


def job_upload_path(settings: Settings, job_id: str) -> Path:
    return settings.spool_dir / "jobs" / f"{job_id}.upload"


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
        each_statement_on_its_own(session)  # the look (most often at nothing) is one read
        due = repository.due_jobs(session, now, per_member, limit=5)
        session.commit()  # each claim below in a transaction of its own
        for job_id, source_id in due:
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
        except ProblemError as error:  # the data cannot be decided: say why, store nothing
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

"""Transfer and job queries. Job claims are conditional updates, as the outbox's are."""

from datetime import datetime
from typing import Any

from sqlalchemy import Row, and_, bindparam, func, or_, select, update
from sqlalchemy.orm import Session, aliased

from broker.delivery.models import Delivery
from broker.fsla import linkage
from broker.members.models import Member
from broker.negotiations.models import Agreement
from broker.storage.rows import insert_objects
from broker.transfers.models import ReleasedClasses, Transfer, TransferJob
from broker.wire.statuses import JobState


def get(session: Session, transfer_id: str) -> Transfer | None:
    return session.get(Transfer, transfer_id)


def by_idempotency_key(session: Session, source_id: str, key: str) -> Transfer | None:
    query = select(Transfer).where(Transfer.source_id == source_id, Transfer.idempotency_key == key)
    return session.scalars(query).first()


def page(
    session: Session,
    member_id: str | None,
    member_since: datetime | None,
    status: str | None,
    offset: int,
    limit: int,
) -> tuple[list[Transfer], int]:
    """Newest first; a member sees what it sent, and the approved transfers sent to it once it
    was registered; an admin (``member_id`` None) sees everything."""
    query = select(Transfer)
    if member_id is not None:
        query = query.where(
            or_(
                Transfer.source_id == member_id,
                and_(
                    Transfer.destination_id == member_id,
                    Transfer.created_at >= member_since,
                    Transfer.status == "approved",
                ),
            )
        )
    if status is not None:
        query = query.where(Transfer.status == status)
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = session.scalars(
        query.order_by(Transfer.created_at.desc(), Transfer.id.desc()).offset(offset).limit(limit)
    ).unique()
    return list(rows), int(total or 0)


def add(session: Session, transfer: Transfer, delivery: Delivery | None) -> None:
    """The transfer with its outbox row (or none), both held by the transfer as they are
    written, so that answering with it reads nothing back. Inserted as rows (not through the
    session's unit of work): every decision writes them, and nothing reads them back in its
    transaction."""
    transfer.delivery = delivery
    insert_objects(session, transfer, *([] if delivery is None else [delivery]))


def lock_member(session: Session, member_id: str) -> None:
    """Hold the member's row until the transaction ends (PostgreSQL; SQLite's writes are
    serialized anyway)."""
    session.execute(select(Member.id).where(Member.id == member_id).with_for_update())


def released_classes_since(
    session: Session, source_id: str, destination_id: str, since: datetime
) -> list[linkage.Release]:
    """What the transfers from ``source_id`` to ``destination_id`` released at or after
    ``since``, oldest first, as the linkage rule reads them."""
    query = (
        select(ReleasedClasses)
        .where(
            ReleasedClasses.source_id == source_id,
            ReleasedClasses.destination_id == destination_id,
            ReleasedClasses.released_at >= since,
        )
        .order_by(ReleasedClasses.released_at, ReleasedClasses.transfer_id)
    )
    return [
        linkage.Release(
            row.transfer_id,
            row.released_at,
            tuple(row.quasi_identifiers),
            tuple(row.sensitive),
            None
            if row.classes is None
            else tuple((tuple(labels), people) for labels, people in row.classes),
            row.class_count,
        )
        for row in session.scalars(query)
    ]


def get_job(session: Session, job_id: str) -> TransferJob | None:
    return session.get(TransferJob, job_id)


def job_by_idempotency_key(session: Session, source_id: str, key: str) -> TransferJob | None:
    query = select(TransferJob).where(
        TransferJob.source_id == source_id, TransferJob.idempotency_key == key
    )
    return session.scalars(query).first()


def _takeable(now: datetime):
    """Queued, or running under a lease that ran out (its process stopped or died)."""
    return or_(
        TransferJob.state == JobState.QUEUED,
        and_(TransferJob.state == JobState.RUNNING, TransferJob.lease_expires_at < now),
    )


def _running_of(now: datetime):
    """Per member, its jobs running under a lease that holds, for fair claims."""
    return (
        select(TransferJob.source_id, func.count().label("running"))
        .where(TransferJob.state == JobState.RUNNING, TransferJob.lease_expires_at >= now)
        .group_by(TransferJob.source_id)
        .subquery()
    )


def due_jobs(session: Session, now: datetime, per_member: int, limit: int) -> list[Row]:
    """Takeable jobs (``id``, ``source_id``), fairest first: the members with the fewest jobs
    running first, each member's oldest first; none of a member running ``per_member``."""
    running = _running_of(now)
    count = func.coalesce(running.c.running, 0)
    query = (
        select(TransferJob.id, TransferJob.source_id)
        .outerjoin(running, running.c.source_id == TransferJob.source_id)
        .where(_takeable(now), count < per_member)
        .order_by(count, TransferJob.created_at, TransferJob.id)
        .limit(limit)
    )
    return list(session.execute(query))


def take_job(
    session: Session,
    job_id: str,
    source_id: str,
    owner: str,
    now: datetime,
    until: datetime,
    per_member: int,
) -> bool:
    """Lease the job (one more attempt) unless another process holds it or its member already
    runs ``per_member`` jobs; True when we got it."""
    other = aliased(TransferJob)  # not the row being updated: the member's running jobs
    running = (
        select(func.count())
        .select_from(other)
        .where(
            other.source_id == source_id,
            other.state == JobState.RUNNING,
            other.lease_expires_at >= now,
        )
        .scalar_subquery()
    )
    result = session.execute(
        update(TransferJob)
        .where(TransferJob.id == job_id, _takeable(now), running < per_member)
        .values(
            state=JobState.RUNNING,
            lease_owner=owner,
            lease_expires_at=until,
            attempts=TransferJob.attempts + 1,
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def _held_by(job_id: str, owner: str) -> tuple:
    """The job, while ``owner`` runs it."""
    return (
        TransferJob.id == job_id,
        TransferJob.state == JobState.RUNNING,
        TransferJob.lease_owner == owner,
    )


def job_progress(
    session: Session,
    job_id: str,
    owner: str,
    stage: str,
    progress: float,
    now: datetime,
    until: datetime,
) -> bool:
    """Record where a running job stands and extend its lease (a heartbeat)."""
    result = session.execute(
        update(TransferJob)
        .where(*_held_by(job_id, owner))
        .values(stage=stage, progress=progress, lease_expires_at=until, updated_at=now)
    )
    return result.rowcount == 1


def extend_job_lease(
    session: Session, job_id: str, owner: str, now: datetime, until: datetime
) -> bool:
    """Extend the lease of a job ``owner`` still runs."""
    result = session.execute(
        update(TransferJob)
        .where(*_held_by(job_id, owner))
        .values(lease_expires_at=until, updated_at=now)
    )
    return result.rowcount == 1


def settle_job(session: Session, job_id: str, owner: str, now: datetime, **values: Any) -> bool:
    """End this process's hold on the job (done, failed or queued again), only while ``owner``
    still holds it; True when it did."""
    result = session.execute(
        update(TransferJob)
        .where(*_held_by(job_id, owner))
        .values(lease_owner=None, lease_expires_at=None, updated_at=now, **values)
    )
    return result.rowcount == 1


def live_job_ids(session: Session) -> list[str]:
    """Jobs that still need their upload: queued or running."""
    query = select(TransferJob.id).where(TransferJob.state.in_([JobState.QUEUED, JobState.RUNNING]))
    return list(session.scalars(query))


def payload_files(session: Session) -> list[str]:
    """The files deliveries hold their payloads in."""
    query = select(Delivery.payload_file).where(Delivery.payload_file.isnot(None))
    return list(session.scalars(query))


def live_jobs_of(session: Session, source_id: str) -> int:
    """How many of the member's jobs are queued or running."""
    query = select(func.count()).where(
        TransferJob.source_id == source_id,
        TransferJob.state.in_([JobState.QUEUED, JobState.RUNNING]),
    )
    return int(session.scalar(query) or 0)


def involving(
    session: Session,
    jurisdiction: str,
    since: datetime | None,
    before: datetime | None,
    limit: int,
) -> list[Row]:
    """Transfers from or to a member of ``jurisdiction``, newest first: rows of (``Transfer``,
    source jurisdiction, destination jurisdiction or None for an unknown destination)."""
    source = aliased(Member)
    destination = aliased(Member)
    query = (
        select(Transfer, source.jurisdiction, destination.jurisdiction)
        .join(source, source.id == Transfer.source_id)
        .outerjoin(destination, destination.id == Transfer.destination_id)
        .where(or_(source.jurisdiction == jurisdiction, destination.jurisdiction == jurisdiction))
    )
    if since is not None:
        query = query.where(Transfer.created_at >= since)
    if before is not None:
        query = query.where(Transfer.created_at < before)
    query = query.order_by(Transfer.created_at.desc(), Transfer.id.desc()).limit(limit)
    return list(session.execute(query).unique())


def received_under_no_onward(session: Session, member_id: str, sha256: str) -> Row | None:
    """An earlier transfer delivered ``sha256`` to ``member_id`` under an agreement that
    forbids sending it on (the newest such): its ``transfer_id`` and ``agreement_id``. Every
    decision asks, so the query is built once."""
    found = session.execute(_RECEIVED, {"member_id": member_id, "sha256": sha256})
    for row in found:
        if not row.terms.get("onward_transfer", False):
            return row
    return None


_TRANSFERS, _AGREEMENTS = Transfer.__table__, Agreement.__table__
_RECEIVED = (
    select(
        _TRANSFERS.c.id.label("transfer_id"),
        _AGREEMENTS.c.id.label("agreement_id"),
        _AGREEMENTS.c.terms,
    )
    .join(_AGREEMENTS, _AGREEMENTS.c.id == _TRANSFERS.c.agreement_id)
    .where(
        _TRANSFERS.c.destination_id == bindparam("member_id"),
        _TRANSFERS.c.delivered_sha256 == bindparam("sha256"),
    )
    .order_by(_TRANSFERS.c.created_at.desc())
)

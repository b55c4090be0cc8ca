"""Outbox queries. Claims are conditional updates, so two broker processes never hold one row.

A delivery to a member whose health is ``down`` is *held*: pending, never due, its attempts not
spent, until a health check sees the member up again (:func:`make_due`).
"""

from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from broker.delivery.models import Delivery
from broker.members.models import Member, MemberHealth
from broker.wire.statuses import DeliveryStatus, HealthState


def destination_down():
    """True for a delivery whose destination is down (held), as a correlated EXISTS."""
    return (
        select(MemberHealth.member_id)
        .where(
            MemberHealth.member_id == Delivery.destination_id,
            MemberHealth.state == HealthState.DOWN,
        )
        .exists()
    )


def _due(now: datetime, limit: int):
    """Pending deliveries whose time has come, unleased, to a destination that is not down."""
    return (
        select(Delivery.transfer_id)
        .where(
            Delivery.status == DeliveryStatus.PENDING,
            Delivery.next_attempt_at <= now,
            _unleased(now),
            ~destination_down(),
        )
        .order_by(Delivery.next_attempt_at)
        .limit(limit)
    )


def _unleased(now: datetime):
    return or_(Delivery.lease_expires_at.is_(None), Delivery.lease_expires_at < now)


def lease_due(
    session: Session, owner: str, now: datetime, until: datetime, limit: int
) -> list[str]:
    """Lease up to ``limit`` due deliveries to ``owner`` in one statement: those whose time
    has come, unleased, to a destination that is not down; the ones we got, the earliest due
    first. The lease is a conditional update: a row another process leased meanwhile fails the
    condition, checked again on the row as that process left it, and is not ours."""
    leased = session.execute(
        update(Delivery)
        .where(
            Delivery.transfer_id.in_(_due(now, limit)),
            Delivery.status == DeliveryStatus.PENDING,
            _unleased(now),
        )
        .values(lease_owner=owner, lease_expires_at=until)
        .returning(Delivery.transfer_id, Delivery.next_attempt_at)
        .execution_options(synchronize_session=False)
    ).all()
    return [transfer_id for transfer_id, _ in sorted(leased, key=lambda row: (row[1], row[0]))]


def make_due(session: Session, destination_id: str, now: datetime) -> int:
    """The pending deliveries to ``destination_id`` that wait for a later attempt become due
    now (its health check saw it up again); returns how many."""
    result = session.execute(
        update(Delivery)
        .where(
            Delivery.status == DeliveryStatus.PENDING,
            Delivery.next_attempt_at > now,
            Delivery.destination_id == destination_id,
        )
        .values(next_attempt_at=now)
    )
    return result.rowcount


def forget_failed_payloads(session: Session, before: datetime) -> list[str]:
    """Drop the payloads of deliveries that failed before ``before``; returns the files that
    held some of them (to remove once this commits)."""
    expired = (
        Delivery.status == DeliveryStatus.FAILED,
        Delivery.failed_at < before,
        Delivery.held,
    )
    files = session.scalars(select(Delivery.payload_file).where(*expired)).all()
    session.execute(update(Delivery).where(*expired).values(payload=None, payload_file=None))
    return [f for f in files if f is not None]


def requeue(session: Session, transfer_id: str, now: datetime) -> bool:
    """A failed delivery whose payload is still held becomes pending again, attempts reset."""
    result = session.execute(
        update(Delivery)
        .where(
            Delivery.transfer_id == transfer_id,
            Delivery.status == DeliveryStatus.FAILED,
            Delivery.held,
        )
        .values(status=DeliveryStatus.PENDING, attempts=0, next_attempt_at=now, failed_at=None)
    )
    return result.rowcount == 1


def get(session: Session, transfer_id: str) -> Delivery | None:
    return session.get(Delivery, transfer_id)


def with_destinations(
    session: Session, transfer_ids: list[str]
) -> dict[str, tuple[Delivery, Member | None, MemberHealth | None]]:
    """These deliveries, each with its destination member and that member's health (None
    where a row is missing), in one query: what their attempts read."""
    found = session.execute(
        select(Delivery, Member, MemberHealth)
        .outerjoin(Member, Member.id == Delivery.destination_id)
        .outerjoin(MemberHealth, MemberHealth.member_id == Delivery.destination_id)
        .where(Delivery.transfer_id.in_(transfer_ids))
    )
    return {delivery.transfer_id: (delivery, member, health) for delivery, member, health in found}


def release(session: Session, transfer_id: str, owner: str) -> bool:
    """Give a leased delivery back untouched (not attempted: its destination is down)."""
    return settle(session, transfer_id, owner)


def settle(session: Session, transfer_id: str, owner: str, **values) -> bool:
    """Write an attempt's outcome if we still hold the lease; True when written."""
    result = session.execute(
        update(Delivery)
        .where(
            Delivery.transfer_id == transfer_id,
            Delivery.lease_owner == owner,
            Delivery.status == DeliveryStatus.PENDING,
        )
        .values(lease_owner=None, lease_expires_at=None, **values)
    )
    return result.rowcount == 1

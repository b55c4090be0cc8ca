"""Outbox queries. Claims are conditional updates, so two broker processes never hold one row.

A delivery to a member whose health is ``down`` is *held*: pending, never due, its attempts not
spent, until a health check sees the member up again (:func:`make_due`).
"""

from datetime import datetime
from functools import cache

from sqlalchemy import Row, String, Update, bindparam, or_, select, update
from sqlalchemy.orm import Session

from broker.delivery.models import Delivery
from broker.members.models import Member, MemberHealth
from broker.wire.statuses import DeliveryStatus, HealthState

# The outbox's statements run for every delivery, so they are built once, on the tables (Core):
# an ORM-enabled UPDATE built per call cost 0.6 ms of CPU, this one 0.07 ms.
_TABLE, _MEMBERS, _HEALTH = Delivery.__table__, Member.__table__, MemberHealth.__table__
_NOW = bindparam("now")


def destination_down():
    """True for a delivery whose destination is down (held), as a correlated EXISTS."""
    return (
        select(_HEALTH.c.member_id)
        .where(
            _HEALTH.c.member_id == _TABLE.c.destination_id,
            _HEALTH.c.state == HealthState.DOWN,
        )
        .exists()
    )


def _unleased():
    return or_(_TABLE.c.lease_expires_at.is_(None), _TABLE.c.lease_expires_at < _NOW)


def lease_due(
    session: Session, owner: str, now: datetime, until: datetime, limit: int
) -> list[str]:
    """Lease up to ``limit`` due deliveries to ``owner`` in one statement: those whose time
    has come, unleased, to a destination that is not down; the ones we got, the earliest due
    first. The lease is a conditional update: a row another process leased meanwhile fails the
    condition, checked again on the row as that process left it, and is not ours."""
    values = {"now": now, "owner": owner, "until": until, "limit": limit}
    leased = session.execute(_LEASE, values).all()
    return [transfer_id for transfer_id, _ in sorted(leased, key=lambda row: (row[1], row[0]))]


_LEASE = (
    update(_TABLE)
    .where(
        _TABLE.c.transfer_id.in_(
            select(_TABLE.c.transfer_id)
            .where(
                _TABLE.c.status == DeliveryStatus.PENDING,
                _TABLE.c.next_attempt_at <= _NOW,
                _unleased(),
                ~destination_down(),
            )
            .order_by(_TABLE.c.next_attempt_at)
            .limit(bindparam("limit"))
        ),
        _TABLE.c.status == DeliveryStatus.PENDING,
        _unleased(),
    )
    .values(lease_owner=bindparam("owner"), lease_expires_at=bindparam("until"))
    .returning(_TABLE.c.transfer_id, _TABLE.c.next_attempt_at)
)


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


def with_destinations(session: Session, transfer_ids: list[str]) -> dict[str, Row]:
    """These deliveries, each with what its attempt reads of its destination, in one query:
    the delivery's columns, the member's ``member_status`` and ``inbox_url`` (None when the
    member is gone) and its health's ``health_state`` (None when it has none)."""
    found = session.execute(_WITH_DESTINATIONS, {"ids": transfer_ids})
    return {row.transfer_id: row for row in found}


_WITH_DESTINATIONS = (
    select(
        _TABLE,
        _MEMBERS.c.status.label("member_status"),
        _MEMBERS.c.inbox_url,
        _HEALTH.c.state.label("health_state"),
    )
    .outerjoin(_MEMBERS, _MEMBERS.c.id == _TABLE.c.destination_id)
    .outerjoin(_HEALTH, _HEALTH.c.member_id == _TABLE.c.destination_id)
    .where(_TABLE.c.transfer_id.in_(bindparam("ids", expanding=True, type_=String)))
)


def release(session: Session, transfer_id: str, owner: str) -> bool:
    """Give a leased delivery back untouched (not attempted: its destination is down)."""
    return settle(session, transfer_id, owner)


def settle(session: Session, transfer_id: str, owner: str, **values) -> bool:
    """Write an attempt's outcome if we still hold the lease; True when written."""
    statement = _settle(frozenset(values))
    parameters = {f"new_{name}": value for name, value in values.items()}
    result = session.execute(statement, parameters | {"leased": transfer_id, "owner": owner})
    return result.rowcount == 1


@cache
def _settle(names: frozenset[str]) -> Update:
    """The conditional UPDATE that writes these columns (an outcome writes one of a few sets of
    columns: one statement built for each set, its values bound)."""
    return (
        update(_TABLE)
        .where(
            _TABLE.c.transfer_id == bindparam("leased", type_=String),
            _TABLE.c.lease_owner == bindparam("owner"),
            _TABLE.c.status == DeliveryStatus.PENDING,
        )
        .values(
            lease_owner=None,
            lease_expires_at=None,
            **{name: bindparam(f"new_{name}") for name in sorted(names)},
        )
    )

"""Reads and writes of negotiations, their messages, agreements and notifications."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from broker.members.models import Member
from broker.negotiations.models import Agreement, Negotiation, NegotiationEvent, Notification


def get(session: Session, negotiation_id: str, lock: bool = False) -> Negotiation | None:
    """The negotiation; with ``lock``, its row held until the transaction ends (PostgreSQL), so
    that two messages to it take turns."""
    query = select(Negotiation).where(Negotiation.id == negotiation_id)
    return session.scalars(query.with_for_update() if lock else query).first()


def add(session: Session, negotiation: Negotiation) -> None:
    session.add(negotiation)
    session.flush()


def events(session: Session, negotiation_id: str) -> list[NegotiationEvent]:
    query = select(NegotiationEvent).where(NegotiationEvent.negotiation_id == negotiation_id)
    return list(session.scalars(query.order_by(NegotiationEvent.id)))


def event_by_key(
    session: Session, negotiation_id: str, actor: str, key: str
) -> NegotiationEvent | None:
    query = select(NegotiationEvent).where(
        NegotiationEvent.negotiation_id == negotiation_id,
        NegotiationEvent.actor == actor,
        NegotiationEvent.idempotency_key == key,
    )
    return session.scalars(query).first()


def request_by_key(session: Session, consumer_id: str, key: str) -> Negotiation | None:
    """The negotiation a consumer started with this idempotency key, if any."""
    query = (
        select(Negotiation)
        .join(NegotiationEvent, NegotiationEvent.negotiation_id == Negotiation.id)
        .where(
            Negotiation.consumer_id == consumer_id,
            NegotiationEvent.actor == consumer_id,
            NegotiationEvent.message == "request",
            NegotiationEvent.idempotency_key == key,
        )
    )
    return session.scalars(query).first()


def add_event(session: Session, event: NegotiationEvent) -> None:
    session.add(event)
    session.flush()


def page(
    session: Session,
    member_id: str | None,
    states: Sequence[str],
    offset: int,
    limit: int,
) -> tuple[list[Negotiation], int]:
    """Negotiations a member takes part in (every one for an administrator), newest change
    first, one page, and how many in all."""
    query = select(Negotiation)
    if member_id is not None:
        query = query.where(
            or_(Negotiation.consumer_id == member_id, Negotiation.provider_id == member_id)
        )
    if states:
        query = query.where(Negotiation.state.in_(states))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = session.scalars(
        query.order_by(Negotiation.updated_at.desc(), Negotiation.id).offset(offset).limit(limit)
    )
    return list(rows), int(total or 0)


def open_for_dataset(session: Session, dataset_id: str, final: Sequence[str]) -> list[str]:
    query = select(Negotiation.id).where(
        Negotiation.dataset_id == dataset_id, Negotiation.state.not_in(final)
    )
    return list(session.scalars(query))


def stale(session: Session, before: datetime, final: Sequence[str], limit: int) -> list[str]:
    """Negotiations not over whose last message is older than ``before``."""
    query = select(Negotiation.id).where(
        Negotiation.state.not_in(final), Negotiation.updated_at < before
    )
    return list(session.scalars(query.order_by(Negotiation.updated_at).limit(limit)))


def agreement(session: Session, agreement_id: str) -> Agreement | None:
    return session.get(Agreement, agreement_id)


def add_agreement(session: Session, agreement: Agreement) -> None:
    session.add(agreement)
    session.flush()


def agreements_of_jurisdiction(session: Session, jurisdiction: str) -> list[Agreement]:
    """Every agreement whose provider or consumer is a member of ``jurisdiction``."""
    members = select(Member.id).where(Member.jurisdiction == jurisdiction)
    query = select(Agreement).where(
        or_(Agreement.provider_id.in_(members), Agreement.consumer_id.in_(members))
    )
    return list(session.scalars(query.order_by(Agreement.created_at)))


def agreements_page(
    session: Session, member_id: str | None, offset: int, limit: int
) -> tuple[list[Agreement], int]:
    query = select(Agreement)
    if member_id is not None:
        query = query.where(
            or_(Agreement.consumer_id == member_id, Agreement.provider_id == member_id)
        )
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = session.scalars(
        query.order_by(Agreement.created_at.desc(), Agreement.id).offset(offset).limit(limit)
    )
    return list(rows), int(total or 0)


def add_notification(session: Session, notification: Notification) -> None:
    session.add(notification)
    session.flush()


def notifications(session: Session, member_id: str, after: int, limit: int) -> list[Notification]:
    query = select(Notification).where(Notification.member_id == member_id, Notification.id > after)
    return list(session.scalars(query.order_by(Notification.id).limit(limit)))

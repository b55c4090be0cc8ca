from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from broker.delivery.models import Delivery
from broker.transfers.models import Transfer


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
    session.add(transfer)
    if delivery is not None:
        session.add(delivery)
    session.flush()

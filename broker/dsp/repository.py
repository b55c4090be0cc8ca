"""Reads and writes of transfer processes and their messages (they flush, never commit)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session, aliased

from broker.delivery.models import Delivery
from broker.dsp.models import ProtocolTransfer, ProtocolTransferEvent
from broker.transfers.models import Transfer
from broker.wire.statuses import DeliveryStatus, TransferStatus


def process(session: Session, process_id: str) -> ProtocolTransfer | None:
    return session.get(ProtocolTransfer, process_id)


def by_consumer_pid(session: Session, consumer_id: str, consumer_pid: str):
    return session.scalars(
        select(ProtocolTransfer).where(
            ProtocolTransfer.consumer_id == consumer_id,
            ProtocolTransfer.consumer_pid == consumer_pid,
        )
    ).one_or_none()


def add(session: Session, found: ProtocolTransfer | ProtocolTransferEvent) -> None:
    session.add(found)
    session.flush()


def moved(
    session: Session, process_id: str, before: str, after: str, moment: datetime, **values
) -> bool:
    """Move the process from ``before`` to ``after`` (with ``values``) unless another request
    or broker moved it first: whether this one did."""
    done = session.execute(
        update(ProtocolTransfer)
        .where(ProtocolTransfer.id == process_id, ProtocolTransfer.state == before)
        .values(state=after, updated_at=moment, **values)
        .execution_options(synchronize_session=False)
    )
    return done.rowcount == 1


def linked(
    session: Session, process_id: str, transfer_id: str, moment: datetime, state: str = "REQUESTED"
) -> bool:
    """Let ``transfer_id`` carry the waiting process's data (and move it to ``state``), unless
    another broker linked it first: whether this one did."""
    done = session.execute(
        update(ProtocolTransfer)
        .where(
            ProtocolTransfer.id == process_id,
            ProtocolTransfer.state == "REQUESTED",
            ProtocolTransfer.transfer_id.is_(None),
        )
        .values(state=state, transfer_id=transfer_id, updated_at=moment)
        .execution_options(synchronize_session=False)
    )
    return done.rowcount == 1


def waiting_for_data(session: Session, limit: int) -> Sequence[ProtocolTransfer]:
    """Requested processes no /v1 transfer carries yet but one could (:func:`next_decision`
    finds it), oldest first: a process still waiting for its data never holds back the
    others."""
    waiting = ProtocolTransfer
    return session.scalars(
        select(waiting)
        .where(waiting.state == "REQUESTED", waiting.transfer_id.is_(None))
        .where(_decisions(waiting).exists())
        .order_by(waiting.created_at, waiting.id)
        .limit(limit)
    ).all()


def next_decision(session: Session, found: ProtocolTransfer) -> Transfer | None:
    """The oldest approved or rejected /v1 transfer under the process's agreement, from its
    provider to its consumer, decided since the process was requested and carrying no other
    process's data."""
    return session.scalars(
        _decisions(found).order_by(Transfer.created_at, Transfer.id).limit(1)
    ).first()


def _decisions(found):
    """The transfers that may carry ``found``'s data (a process, or the class for a correlated
    subquery)."""
    other = aliased(ProtocolTransfer)  # never correlated with the process asked about
    taken = select(other.id).where(other.transfer_id == Transfer.id).exists()  # its unique index
    return select(Transfer).where(
        Transfer.agreement_id == found.agreement_id,
        Transfer.source_id == found.provider_id,
        Transfer.destination_id == found.consumer_id,
        Transfer.status.in_([TransferStatus.APPROVED, TransferStatus.REJECTED]),
        Transfer.created_at >= found.created_at,
        ~taken,
    )


def delivered(session: Session, limit: int) -> Sequence[ProtocolTransfer]:
    """Requested processes whose transfer's delivery reached the consumer's inbox."""
    return session.scalars(
        select(ProtocolTransfer)
        .join(Delivery, Delivery.transfer_id == ProtocolTransfer.transfer_id)
        .where(ProtocolTransfer.state == "REQUESTED", Delivery.status == DeliveryStatus.DELIVERED)
        .order_by(ProtocolTransfer.created_at, ProtocolTransfer.id)
        .limit(limit)
    ).all()

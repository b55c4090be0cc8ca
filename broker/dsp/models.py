"""What the protocol adds to a negotiation (the consumer's own id for it and its callback) and
its transfer processes."""

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base, UTCDateTime


class ProtocolNegotiation(Base):
    """A negotiation started through the protocol: the ``consumerPid`` the consumer's connector
    gave it and the ``callbackAddress`` it gets the provider's messages at (checked by the rules
    inbox addresses follow)."""

    __tablename__ = "dsp_negotiations"

    negotiation_id: Mapped[str] = mapped_column(ForeignKey("negotiations.id"), primary_key=True)
    consumer_pid: Mapped[str] = mapped_column(String(500))
    callback_address: Mapped[str] = mapped_column(String(2000))
    # The callbacks' outbox is the negotiation's own history: the provider's and the broker's
    # messages after ``sent_event_id`` are still to be sent, in order (broker.dsp.callbacks).
    sent_event_id: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # failed tries of the next one
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)


class ProtocolTransfer(Base):
    """A transfer process: the data one agreement covers, asked for by its consumer's connector
    (its ``consumerPid`` and ``callbackAddress``) and delivered by the broker to the consumer
    member's registered inbox, once the provider has sent it on ``/v1/transfers`` and the
    broker approved it (``transfer_id``, :mod:`broker.dsp.transfers`)."""

    __tablename__ = "dsp_transfers"
    __table_args__ = (UniqueConstraint("consumer_id", "consumer_pid"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # the providerPid's uuid
    agreement_id: Mapped[str] = mapped_column(ForeignKey("agreements.id"), index=True)
    consumer_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    consumer_pid: Mapped[str] = mapped_column(String(500))
    callback_address: Mapped[str] = mapped_column(String(2000))
    format: Mapped[str] = mapped_column(String(100))
    state: Mapped[str] = mapped_column(String(16), index=True)
    # The /v1 transfer that carries its data (each at most one process's)
    transfer_id: Mapped[str | None] = mapped_column(
        ForeignKey("transfers.id"), unique=True, default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The callbacks' outbox is the process's own history, as a negotiation's is.
    sent_event_id: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)


class ProtocolTransferEvent(Base):
    """One message of a transfer process, with the party that sent it (the broker's delivery is
    the provider's) and the state it led to; ``reason`` is the broker's own words, never the
    sender's text."""

    __tablename__ = "dsp_transfer_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    process_id: Mapped[str] = mapped_column(ForeignKey("dsp_transfers.id"), index=True)
    party: Mapped[str] = mapped_column(String(16))
    move: Mapped[str] = mapped_column(String(40))
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

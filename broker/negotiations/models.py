"""Contract negotiations, their messages, and the agreements they end in.

A negotiation's every message is a row (:class:`NegotiationEvent`), with the state it led to
and its idempotency key, so that a message sent twice is answered once and the history can be
read back as the Dataspace Protocol's messages. An agreement is what the broker signed: the
document and its signature are kept as signed.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base, UTCDateTime


class Negotiation(Base):
    __tablename__ = "negotiations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("catalog_datasets.id"), index=True)
    dataset_version: Mapped[int] = mapped_column(Integer)
    consumer_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True)
    purpose: Mapped[str] = mapped_column(String(200))
    asked: Mapped[dict[str, Any]] = mapped_column(JSON)  # the consumer's last request
    required: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # the broker's
    offered: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # the provider's
    reason: Mapped[str | None] = mapped_column(Text, default=None)  # why it was terminated
    agreement_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class NegotiationEvent(Base):
    __tablename__ = "negotiation_events"
    __table_args__ = (UniqueConstraint("negotiation_id", "actor", "idempotency_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    negotiation_id: Mapped[str] = mapped_column(ForeignKey("negotiations.id"), index=True)
    actor: Mapped[str] = mapped_column(String(64))  # a member id, or "broker"
    role: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))  # the state it led to
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Agreement(Base):
    __tablename__ = "agreements"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    negotiation_id: Mapped[str] = mapped_column(ForeignKey("negotiations.id"), unique=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("catalog_datasets.id"), index=True)
    dataset_version: Mapped[int] = mapped_column(Integer)
    provider_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    consumer_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    terms: Mapped[dict[str, Any]] = mapped_column(JSON)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)  # exactly what the broker signed
    signature: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str | None] = mapped_column(Text, default=None)  # why it is suspended
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Notification(Base):
    """Something a member must know that no answer of its own told it (an agreement suspended
    by an F-SLA change): read with ``GET /v1/notifications``."""

    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    member_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    kind: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(64))  # the id of what it is about
    detail: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

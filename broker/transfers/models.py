"""Transfer decisions (their outbox rows are :class:`broker.delivery.models.Delivery`)."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from broker.db import Base, UTCDateTime
from broker.delivery.models import Delivery


class Transfer(Base):
    __tablename__ = "transfers"
    __table_args__ = (UniqueConstraint("source_id", "idempotency_key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    source_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    # Not a foreign key: a transfer to an unknown member is a recorded, rejected decision.
    destination_id: Mapped[str] = mapped_column(String(64), index=True)
    purpose: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(32))
    anonymize: Mapped[str] = mapped_column(String(16))
    quasi_identifiers: Mapped[list[str]] = mapped_column(JSON)
    quasi_identifiers_inferred: Mapped[bool] = mapped_column(Boolean, default=False)
    sensitive: Mapped[list[str]] = mapped_column(JSON)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    rules: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    remedy: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    policy_versions: Mapped[dict[str, int]] = mapped_column(JSON)
    dataset: Mapped[dict[str, Any]] = mapped_column(JSON)
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    request_fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)

    delivery: Mapped[Delivery | None] = relationship(
        back_populates="transfer", uselist=False, lazy="joined"
    )

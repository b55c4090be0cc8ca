"""The outbox: one row per approved transfer, written in the decision's transaction.

A row carries everything its delivery needs (whom it is for, the headers, what leaves), so that
delivering reads nothing of the transfer it came from."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, LargeBinary, String, Text, or_
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base, UTCDateTime


class Delivery(Base):
    """Outbox row of an approved transfer: written in the decision's transaction."""

    __tablename__ = "deliveries"

    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"), primary_key=True)
    # Who sent it (who may ask for a redelivery) and whom it is for (whose inbox, whose health
    # holds it): the transfer's, copied when the row is written (migration 0014 for older rows).
    source_id: Mapped[str] = mapped_column(String(64))
    destination_id: Mapped[str] = mapped_column(String(64), index=True)
    # The delivery's headers but Content-Length and the signature (made at each attempt), as the
    # decision wrote them (broker.transfers.recording.delivery_headers).
    headers: Mapped[dict[str, str]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # A failed delivery keeps its payload until this time plus the retention, for a redelivery.
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # What leaves: bytes, or for data measured out of core the file the broker wrote (held
    # in the spool folder; removed with the payload).
    payload: Mapped[bytes | None] = mapped_column(LargeBinary)
    payload_file: Mapped[str | None] = mapped_column(String(1000))
    payload_type: Mapped[str] = mapped_column(String(100))

    @hybrid_property
    def held(self) -> bool:
        """Whether the data that leaves is still here (bytes or file)."""
        return self.payload is not None or self.payload_file is not None

    @held.inplace.expression
    @classmethod
    def _held(cls):
        return or_(cls.payload.isnot(None), cls.payload_file.isnot(None))

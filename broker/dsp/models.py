"""What the protocol adds to a negotiation: the consumer's own id for it and its callback."""

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
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

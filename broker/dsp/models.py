"""What the protocol adds to a negotiation: the consumer's own id for it and its callback."""

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base


class ProtocolNegotiation(Base):
    """A negotiation started through the protocol: the ``consumerPid`` the consumer's connector
    gave it and the ``callbackAddress`` it gets the provider's messages at (checked by the rules
    inbox addresses follow)."""

    __tablename__ = "dsp_negotiations"

    negotiation_id: Mapped[str] = mapped_column(ForeignKey("negotiations.id"), primary_key=True)
    consumer_pid: Mapped[str] = mapped_column(String(500))
    callback_address: Mapped[str] = mapped_column(String(2000))

"""The privacy budget ledger: what each approved aggregate release spent."""

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from broker.db import Base, UTCDateTime


class PrivacySpend(Base):
    """One approved aggregate release's spend, written in the transaction of its decision.

    ``dataset_key`` names the data by its content (see :func:`broker.budget.service.content_key`);
    ``epsilon`` and ``delta`` are exact fractions as ``"num/den"`` text, summed in Python with
    :class:`fractions.Fraction`, never as floats. Rows are never changed: a budget's standing is
    the sum of the rows within its window.
    """

    __tablename__ = "privacy_spends"
    __table_args__ = (Index("ix_privacy_spends_pair", "source_id", "destination_id", "spent_at"),)

    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"), primary_key=True)
    source_id: Mapped[str] = mapped_column(String(64))
    destination_id: Mapped[str] = mapped_column(String(64))
    dataset_key: Mapped[str] = mapped_column(String(64), index=True)
    epsilon: Mapped[str] = mapped_column(String(200))
    delta: Mapped[str] = mapped_column(String(200))
    spent_at: Mapped[datetime] = mapped_column(UTCDateTime())

"""The privacy budget ledger: what each approved aggregate release spent."""

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from broker.db import Base, UTCDateTime


class PrivacySpend(Base):
    """One approved aggregate release's spend, written in the transaction of its decision.

    ``dataset_key`` names the dataset (:func:`broker.budget.service.identify`: the key of the
    first release of data its rows match, :class:`DatasetSketch`);
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


class DatasetSketch(Base):
    """The rows of one spent release, as a sketch (:mod:`broker.privacy.identity`): what a later
    release of the same source is compared with to find that it is the same dataset, however
    encoded or slightly edited. 64-bit hashes only, never a value."""

    __tablename__ = "privacy_dataset_sketches"
    __table_args__ = (Index("ix_privacy_dataset_sketches_source", "source_id", "distinct_rows"),)

    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"), primary_key=True)
    source_id: Mapped[str] = mapped_column(String(64))
    dataset_key: Mapped[str] = mapped_column(String(64))
    distinct_rows: Mapped[int] = mapped_column(BigInteger())
    sketch: Mapped[bytes] = mapped_column(LargeBinary())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

"""Transfer decisions (their outbox rows are :class:`broker.delivery.models.Delivery`), the jobs
that decide them in the background, and what the rules of later decisions read of earlier ones:
the classes a microdata transfer released (the linkage rule) and the privacy budget ledger of
aggregate releases."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, foreign, mapped_column, relationship

from broker.delivery.models import Delivery
from broker.members.models import MemberHealth
from broker.storage.db import Base, UTCDateTime


class Transfer(Base):
    __tablename__ = "transfers"
    __table_args__ = (
        UniqueConstraint("source_id", "idempotency_key"),
        # The federation overview counts from these alone (index-only scans), never the rows.
        Index("ix_transfers_pair_status", "source_id", "destination_id", "status"),
        Index("ix_transfers_created_at_status", "created_at", "status"),
    )

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
    # Made under an agreement (its terms applied beside the records'); None: pushed.
    agreement_id: Mapped[str | None] = mapped_column(String(36), default=None, index=True)
    # What was delivered, by its hash (the destination may not send it on, under an agreement
    # that says so); until when the destination may keep it; when it said it deleted it.
    delivered_sha256: Mapped[str | None] = mapped_column(String(64), default=None, index=True)
    retain_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    erased_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # microdata (the rows) or aggregate (statistics under differential privacy,
    # broker/transfers/aggregate.py)
    kind: Mapped[str] = mapped_column(String(16), default="microdata", server_default="microdata")
    # An aggregate release: its queries, epsilon and delta, and the answers released
    aggregate: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    delivery: Mapped[Delivery | None] = relationship(uselist=False, lazy="joined")
    # Read only, to show a pending delivery as held while its destination is down.
    destination_health: Mapped[MemberHealth | None] = relationship(
        primaryjoin=lambda: foreign(Transfer.destination_id) == MemberHealth.member_id,
        viewonly=True,
        uselist=False,
        lazy="joined",
    )


class TransferJob(Base):
    """A transfer accepted for a decision in the background (``202 Accepted``).

    The upload waits in the spool folder under the job's id (by reference, ``upload`` holds the
    files resolved and pinned at the request, which the job reads and nothing else); the
    transfer, once decided, gets the same id, written in the transaction that marks the job
    done. Leases, as for deliveries, keep
    each job with one broker process; a process that dies leaves a lease that runs out, and
    another process (or the same one restarted) takes the job over.
    """

    __tablename__ = "transfer_jobs"
    __table_args__ = (UniqueConstraint("source_id", "idempotency_key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    source_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True)
    stage: Mapped[str] = mapped_column(String(32))
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    upload: Mapped[dict[str, Any]] = mapped_column(JSON)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    request_fingerprint: Mapped[str] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    problem: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ReleasedClasses(Base):
    """What an approved microdata transfer released, as the linkage rule needs it: its
    quasi-identifier columns and classes (the released tuples with their people), never the data.

    ``classes`` holds ``[[label, ...], people]`` pairs, labels in the order of
    ``quasi_identifiers``; None when the transfer released more than ``BROKER_LINKAGE_MAX_CLASSES``
    (``class_count`` says how many).
    """

    __tablename__ = "releases"
    __table_args__ = (Index("ix_releases_pair", "source_id", "destination_id", "released_at"),)

    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"), primary_key=True)
    source_id: Mapped[str] = mapped_column(String(64))
    destination_id: Mapped[str] = mapped_column(String(64))
    released_at: Mapped[datetime] = mapped_column(UTCDateTime())
    quasi_identifiers: Mapped[list[str]] = mapped_column(JSON)
    sensitive: Mapped[list[str]] = mapped_column(JSON)
    classes: Mapped[list[Any] | None] = mapped_column(JSON)
    class_count: Mapped[int] = mapped_column(Integer)


class PrivacySpend(Base):
    """One approved aggregate release's spend, written in the transaction of its decision.

    ``dataset_key`` names the dataset (:func:`broker.transfers.aggregate.identify`: the key of the
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

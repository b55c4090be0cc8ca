"""Member clouds of the federation, with the hash of their API key (never the key), and the
health the broker's checks last found them in.

After a rotation the previous key's hash stays valid until ``previous_key_expires_at``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from broker.storage.db import Base, UTCDateTime
from broker.wire.statuses import HealthState, MemberStatus


class Member(Base):
    __tablename__ = "members"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    jurisdiction: Mapped[str] = mapped_column(String(16))
    inbox_url: Mapped[str] = mapped_column(String(2000))
    # Where its health is checked; None: next to the inbox (broker.members.health.health_url).
    health_url: Mapped[str | None] = mapped_column(String(2000), default=None)
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    previous_api_key_hash: Mapped[str | None] = mapped_column(String(64), default=None, index=True)
    previous_key_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    status: Mapped[str] = mapped_column(String(16), default=MemberStatus.ACTIVE)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=lambda: datetime.now(UTC))

    # Loaded when read (never by authentication, which reads every request's member).
    health: Mapped[MemberHealth | None] = relationship(back_populates="member", uselist=False)


class MemberHealth(Base):
    """What the last check of a member's ``/readyz`` found: one row per member, written at
    registration (``unknown``) and by the health checker.

    A table of its own, not columns of ``members``: it is written every check, while a transfer
    holds its source's ``members`` row locked for the whole decision (``lock_member``).
    ``next_check_at`` is the guard that lets several broker processes share the checks: a
    process claims a member by moving it forward one period in a conditional UPDATE, so each
    member is checked once a period whatever the number of processes.
    """

    __tablename__ = "member_health"

    member_id: Mapped[str] = mapped_column(ForeignKey("members.id"), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), default=HealthState.UNKNOWN)
    since: Mapped[datetime] = mapped_column(UTCDateTime())
    checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    next_check_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None, index=True)

    member: Mapped[Member] = relationship(back_populates="health")

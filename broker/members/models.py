"""Member clouds of the federation, with the hash of their API key (never the key).

After a rotation the previous key's hash stays valid until ``previous_key_expires_at``.
"""

from datetime import UTC, datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from broker.db import Base, UTCDateTime
from broker.wire.statuses import MemberStatus


class Member(Base):
    __tablename__ = "members"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    jurisdiction: Mapped[str] = mapped_column(String(16))
    inbox_url: Mapped[str] = mapped_column(String(2000))
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    previous_api_key_hash: Mapped[str | None] = mapped_column(String(64), default=None, index=True)
    previous_key_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    status: Mapped[str] = mapped_column(String(16), default=MemberStatus.ACTIVE)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=lambda: datetime.now(UTC))

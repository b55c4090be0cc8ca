"""Named administrators, with the hash of their token (never the token).

The ``bootstrap`` row stands for ``BROKER_ADMIN_TOKEN``: its token lives in the settings, so its
``token_hash`` is empty; revoking the row makes that token answer 401.
"""

from datetime import UTC, datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base, UTCDateTime


class Administrator(Base):
    __tablename__ = "administrators"

    name: Mapped[str] = mapped_column(String(58), primary_key=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=lambda: datetime.now(UTC))
    created_by: Mapped[str] = mapped_column(String(64))
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    revoked_by: Mapped[str | None] = mapped_column(String(64), default=None)

    @property
    def active(self) -> bool:
        return self.revoked_at is None

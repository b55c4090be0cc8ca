"""Console sessions: one row per signed-in browser.

The cookie holds a random session id; the row holds only its SHA-256 (a copy of the table signs
nobody in), the SHA-256 of the token or key used to sign in (checked again at every page, so a
revoked token or key ends its sessions), the CSRF token of its forms and its two clocks.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base, UTCDateTime


class ConsoleSession(Base):
    __tablename__ = "console_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    credential_kind: Mapped[str] = mapped_column(String(16))
    credential_hash: Mapped[str] = mapped_column(String(64), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=lambda: datetime.now(UTC), index=True
    )
    last_seen_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=lambda: datetime.now(UTC), index=True
    )

"""console sessions: one row per signed-in browser (hashes only, never a token)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 13:20:00

"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(64), nullable=False),
        sa.Column("credential_kind", sa.String(16), nullable=False),
        sa.Column("credential_hash", sa.String(64), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_console_sessions")),
    )
    for column in ("credential_hash", "created_at", "last_seen_at"):
        op.create_index(op.f(f"ix_console_sessions_{column}"), "console_sessions", [column])


def downgrade() -> None:
    op.drop_table("console_sessions")

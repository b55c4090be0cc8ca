"""transfer jobs: transfers decided in the background (202 Accepted), leased like deliveries

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 04:40:00
"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "transfer_jobs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("source_id", sa.String(64), sa.ForeignKey("members.id"), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("upload", sa.JSON(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("request_fingerprint", sa.String(64), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("problem", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("source_id", "idempotency_key"),
    )
    op.create_index("ix_transfer_jobs_source_id", "transfer_jobs", ["source_id"])
    op.create_index("ix_transfer_jobs_state", "transfer_jobs", ["state"])
    op.create_index("ix_transfer_jobs_created_at", "transfer_jobs", ["created_at"])


def downgrade() -> None:
    op.drop_table("transfer_jobs")

"""administrators: named administrators with their own tokens (hashes only); the bootstrap row
stands for BROKER_ADMIN_TOKEN

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 07:50:00
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    administrators = op.create_table(
        "administrators",
        sa.Column("name", sa.String(58), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_by", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_administrators")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_administrators_token_hash")),
    )
    # BROKER_ADMIN_TOKEN, the one token of deployments older than this migration: an
    # administrator like the others, so that it can be listed and revoked.
    op.bulk_insert(
        administrators,
        [{"name": "bootstrap", "created_at": datetime.now(UTC), "created_by": "migration"}],
    )


def downgrade() -> None:
    op.drop_table("administrators")

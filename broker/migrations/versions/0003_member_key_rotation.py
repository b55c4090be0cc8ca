"""member key rotation (the previous key's hash, valid until a given time), failed deliveries
kept for a redelivery (failed_at)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 00:05:00
"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("members") as batch:
        batch.add_column(sa.Column("previous_api_key_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("previous_key_expires_at", UTCDateTime(), nullable=True))
        batch.create_index("ix_members_previous_api_key_hash", ["previous_api_key_hash"])
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("failed_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("failed_at")
    with op.batch_alter_table("members") as batch:
        batch.drop_index("ix_members_previous_api_key_hash")
        batch.drop_column("previous_key_expires_at")
        batch.drop_column("previous_api_key_hash")

"""releases: the classes each approved transfer released, for the linkage rule

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 06:45:00
"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "releases",
        sa.Column("transfer_id", sa.String(36), sa.ForeignKey("transfers.id"), primary_key=True),
        sa.Column("source_id", sa.String(64), nullable=False),
        sa.Column("destination_id", sa.String(64), nullable=False),
        sa.Column("released_at", UTCDateTime(), nullable=False),
        sa.Column("quasi_identifiers", sa.JSON(), nullable=False),
        sa.Column("sensitive", sa.JSON(), nullable=False),
        sa.Column("classes", sa.JSON(), nullable=True),
        sa.Column("class_count", sa.Integer(), nullable=False),
    )
    op.create_index("ix_releases_pair", "releases", ["source_id", "destination_id", "released_at"])


def downgrade() -> None:
    op.drop_table("releases")

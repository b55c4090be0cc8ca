"""overview indexes: the federation overview counts transfers per (source, destination, status)
and per (day, status) from indexes alone (index-only scans), never reading the transfers' rows

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 14:00:00
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        op.f("ix_transfers_pair_status"),
        "transfers",
        ["source_id", "destination_id", "status"],
        unique=False,
    )
    op.create_index(
        op.f("ix_transfers_created_at_status"), "transfers", ["created_at", "status"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_transfers_created_at_status"), table_name="transfers")
    op.drop_index(op.f("ix_transfers_pair_status"), table_name="transfers")

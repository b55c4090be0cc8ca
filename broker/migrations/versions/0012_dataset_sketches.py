"""dataset sketches: a dataset's identity for the privacy budget survives renames, re-encodings
and small edits (the rows of each spent release, as 64-bit hashes)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 10:00:00

"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "privacy_dataset_sketches",
        sa.Column("transfer_id", sa.String(36), nullable=False),
        sa.Column("source_id", sa.String(64), nullable=False),
        sa.Column("dataset_key", sa.String(64), nullable=False),
        sa.Column("distinct_rows", sa.BigInteger(), nullable=False),
        sa.Column("sketch", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["transfers.id"],
            name=op.f("fk_privacy_dataset_sketches_transfer_id_transfers"),
        ),
        sa.PrimaryKeyConstraint("transfer_id", name=op.f("pk_privacy_dataset_sketches")),
    )
    op.create_index(
        "ix_privacy_dataset_sketches_source",
        "privacy_dataset_sketches",
        ["source_id", "distinct_rows"],
    )


def downgrade() -> None:
    op.drop_table("privacy_dataset_sketches")

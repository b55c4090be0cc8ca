"""privacy budget: transfers of kind aggregate and the ledger of what each release spent

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 09:40:00

"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("transfers") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(16), nullable=False, server_default="microdata")
        )
        batch.add_column(sa.Column("aggregate", sa.JSON(), nullable=True))
    op.create_table(
        "privacy_spends",
        sa.Column("transfer_id", sa.String(36), nullable=False),
        sa.Column("source_id", sa.String(64), nullable=False),
        sa.Column("destination_id", sa.String(64), nullable=False),
        sa.Column("dataset_key", sa.String(64), nullable=False),
        sa.Column("epsilon", sa.String(200), nullable=False),
        sa.Column("delta", sa.String(200), nullable=False),
        sa.Column("spent_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["transfers.id"],
            name=op.f("fk_privacy_spends_transfer_id_transfers"),
        ),
        sa.PrimaryKeyConstraint("transfer_id", name=op.f("pk_privacy_spends")),
    )
    op.create_index(
        "ix_privacy_spends_pair", "privacy_spends", ["source_id", "destination_id", "spent_at"]
    )
    op.create_index(op.f("ix_privacy_spends_dataset_key"), "privacy_spends", ["dataset_key"])


def downgrade() -> None:
    op.drop_table("privacy_spends")
    with op.batch_alter_table("transfers") as batch:
        batch.drop_column("aggregate")
        batch.drop_column("kind")

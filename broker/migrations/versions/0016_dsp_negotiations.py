"""the Dataspace Protocol's side of a negotiation: the consumer's pid and callback

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 14:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dsp_negotiations",
        sa.Column(
            "negotiation_id", sa.String(36), sa.ForeignKey("negotiations.id"), primary_key=True
        ),
        sa.Column("consumer_pid", sa.String(500), nullable=False),
        sa.Column("callback_address", sa.String(2000), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("dsp_negotiations")

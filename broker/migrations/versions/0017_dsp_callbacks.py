"""the Dataspace Protocol's callbacks: how far each negotiation's messages to its consumer went

A negotiation started before holds no message to send: its cursor starts at its last event.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 14:10:00

"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dsp_negotiations") as table:
        table.add_column(
            sa.Column("sent_event_id", sa.Integer(), nullable=False, server_default="0")
        )
        table.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        table.add_column(sa.Column("next_attempt_at", UTCDateTime(), nullable=True))
        table.add_column(sa.Column("lease_until", UTCDateTime(), nullable=True))
        table.add_column(sa.Column("last_error", sa.Text(), nullable=True))
    op.execute(
        "UPDATE dsp_negotiations SET sent_event_id = COALESCE((SELECT MAX(e.id) FROM "
        "negotiation_events e WHERE e.negotiation_id = dsp_negotiations.negotiation_id), 0)"
    )


def downgrade() -> None:
    with op.batch_alter_table("dsp_negotiations") as table:
        for name in ("last_error", "lease_until", "next_attempt_at", "attempts", "sent_event_id"):
            table.drop_column(name)

"""the Dataspace Protocol's transfer processes, their messages and their callbacks' cursor

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 16:40:00

"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dsp_transfers",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("agreement_id", sa.String(36), nullable=False),
        sa.Column("consumer_id", sa.String(64), nullable=False),
        sa.Column("provider_id", sa.String(64), nullable=False),
        sa.Column("consumer_pid", sa.String(500), nullable=False),
        sa.Column("callback_address", sa.String(2000), nullable=False),
        sa.Column("format", sa.String(100), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("transfer_id", sa.String(36), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("sent_event_id", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["agreement_id"],
            ["agreements.id"],
            name=op.f("fk_dsp_transfers_agreement_id_agreements"),
        ),
        sa.ForeignKeyConstraint(
            ["consumer_id"], ["members.id"], name=op.f("fk_dsp_transfers_consumer_id_members")
        ),
        sa.ForeignKeyConstraint(
            ["provider_id"], ["members.id"], name=op.f("fk_dsp_transfers_provider_id_members")
        ),
        sa.ForeignKeyConstraint(
            ["transfer_id"], ["transfers.id"], name=op.f("fk_dsp_transfers_transfer_id_transfers")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dsp_transfers")),
        sa.UniqueConstraint(
            "consumer_id", "consumer_pid", name=op.f("uq_dsp_transfers_consumer_id")
        ),
        sa.UniqueConstraint("transfer_id", name=op.f("uq_dsp_transfers_transfer_id")),
    )
    with op.batch_alter_table("dsp_transfers") as table:
        for column in ("agreement_id", "consumer_id", "provider_id", "state"):
            table.create_index(table.f(f"ix_dsp_transfers_{column}"), [column], unique=False)
    op.create_table(
        "dsp_transfer_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("process_id", sa.String(36), nullable=False),
        sa.Column("party", sa.String(16), nullable=False),
        sa.Column("move", sa.String(40), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["process_id"],
            ["dsp_transfers.id"],
            name=op.f("fk_dsp_transfer_events_process_id_dsp_transfers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dsp_transfer_events")),
    )
    with op.batch_alter_table("dsp_transfer_events") as table:
        table.create_index(
            table.f("ix_dsp_transfer_events_process_id"), ["process_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("dsp_transfer_events")
    op.drop_table("dsp_transfers")

"""member health: each member's health as the broker's checks of its /readyz found it (one row
per member, unknown until the first check), and an optional health URL given at registration

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 09:00:00
"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("members") as batch:
        batch.add_column(sa.Column("health_url", sa.String(2000), nullable=True))
    op.create_table(
        "member_health",
        sa.Column("member_id", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("since", UTCDateTime(), nullable=False),
        sa.Column("checked_at", UTCDateTime(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("next_check_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["member_id"], ["members.id"], name=op.f("fk_member_health_member_id_members")
        ),
        sa.PrimaryKeyConstraint("member_id", name=op.f("pk_member_health")),
    )
    op.create_index(
        op.f("ix_member_health_next_check_at"), "member_health", ["next_check_at"], unique=False
    )
    # Members registered before: unknown since their registration, checked at the next pass.
    op.execute(
        "INSERT INTO member_health (member_id, state, since, failures) "
        "SELECT id, 'unknown', created_at, 0 FROM members"
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_member_health_next_check_at"), table_name="member_health")
    op.drop_table("member_health")
    with op.batch_alter_table("members") as batch:
        batch.drop_column("health_url")

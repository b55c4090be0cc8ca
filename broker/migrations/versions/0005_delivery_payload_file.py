"""deliveries: the payload as a file (data measured out of core is written to a file)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 04:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("payload_file", sa.String(1000), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("payload_file")

"""audit hash rule: each audit entry names how its hash was computed; the rows already written
are sorted-json (Python's sorted JSON), new ones rfc8785 (RFC 8785 canonical JSON)

The chain is not rewritten (the table refuses UPDATE, and a head exported earlier must stay
valid): the column only says which rule verifies each row.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "audit_log",
        sa.Column("hash_rule", sa.String(16), nullable=False, server_default="sorted-json"),
    )


def downgrade() -> None:
    # Not a batch copy on SQLite: that would drop the table's append-only triggers with it.
    op.execute("ALTER TABLE audit_log DROP COLUMN hash_rule")

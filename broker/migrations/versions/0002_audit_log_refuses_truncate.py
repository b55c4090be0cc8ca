"""audit log refuses truncate

Row-level triggers do not fire on TRUNCATE; a statement-level one does (PostgreSQL only:
SQLite has no TRUNCATE, and its DELETE trigger already covers "DELETE FROM audit_log").

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 11:32:50.252713
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log "
            "FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER audit_log_no_truncate ON audit_log")

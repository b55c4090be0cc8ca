"""outbox rows carry what a delivery needs: the source, the destination and the headers (the
delivery no longer reads the transfer it came from)

Rows written before are filled in from their transfers, with the headers a delivery of theirs
carried (as ``broker.delivery.service`` built them at each attempt until now).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 10:30:00

"""

import base64
import hashlib
from urllib.parse import quote

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

deliveries = sa.table(
    "deliveries",
    sa.column("transfer_id", sa.String()),
    sa.column("payload", sa.LargeBinary()),
    sa.column("payload_type", sa.String()),
    sa.column("source_id", sa.String()),
    sa.column("destination_id", sa.String()),
    sa.column("headers", sa.JSON()),
)
transfers = sa.table(
    "transfers",
    sa.column("id", sa.String()),
    sa.column("source_id", sa.String()),
    sa.column("destination_id", sa.String()),
    sa.column("purpose", sa.String()),
    sa.column("status", sa.String()),
    sa.column("dataset", sa.JSON()),
    sa.column("agreement_id", sa.String()),
    sa.column("retain_until", UTCDateTime()),
)


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("source_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("destination_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("headers", sa.JSON(), nullable=True))
    _fill_in()
    with op.batch_alter_table("deliveries") as batch:
        batch.alter_column("source_id", existing_type=sa.String(64), nullable=False)
        batch.alter_column("destination_id", existing_type=sa.String(64), nullable=False)
        batch.alter_column("headers", existing_type=sa.JSON(), nullable=False)
        batch.create_index(op.f("ix_deliveries_destination_id"), ["destination_id"])


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_index(op.f("ix_deliveries_destination_id"))
        batch.drop_column("headers")
        batch.drop_column("destination_id")
        batch.drop_column("source_id")


def _fill_in() -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(
            transfers.c.id,
            transfers.c.source_id,
            transfers.c.destination_id,
            transfers.c.purpose,
            transfers.c.status,
            transfers.c.dataset,
            transfers.c.agreement_id,
            transfers.c.retain_until,
            deliveries.c.payload_type,
        ).join(deliveries, deliveries.c.transfer_id == transfers.c.id)
    ).all()
    for row in rows:
        sha256 = (row.dataset or {}).get("delivered_sha256") or _payload_sha256(row.id)
        connection.execute(
            deliveries.update()
            .where(deliveries.c.transfer_id == row.id)
            .values(
                source_id=row.source_id,
                destination_id=row.destination_id,
                headers=_headers(row, sha256),
            )
        )


def _payload_sha256(transfer_id: str) -> str:
    """The hash of a payload held in the row (a decision always recorded one; a fallback)."""
    payload = op.get_bind().scalar(
        sa.select(deliveries.c.payload).where(deliveries.c.transfer_id == transfer_id)
    )
    return hashlib.sha256(payload or b"").hexdigest()


def _headers(row, sha256: str) -> dict[str, str]:
    """The headers as deliveries carried them at this revision (but Content-Length and the
    signature, made at each attempt). Frozen here: later changes to how a decision writes
    them (broker/transfers/recording.py) do not rewrite old rows."""
    dataset = row.dataset or {}
    digest = base64.b64encode(bytes.fromhex(sha256)).decode()
    retain = row.retain_until
    return {
        "Content-Type": row.payload_type,
        "Content-Digest": f"sha-256=:{digest}:",
        "Idempotency-Key": row.id,
        "X-Fedbroker-Recipient": row.destination_id,
        "X-Fedbroker-Transfer": row.id,
        "X-Fedbroker-Source": row.source_id,
        "X-Fedbroker-Purpose": quote(row.purpose, safe=""),
        "X-Fedbroker-Decision": row.status,
        "X-Fedbroker-Filename": quote(dataset.get("delivered_filename") or "", safe=""),
        "X-Fedbroker-Anonymized": "true" if dataset.get("anonymized") else "false",
        "X-Fedbroker-Agreement": row.agreement_id or "",
        "X-Fedbroker-Retain-Until": "" if retain is None else retain.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }

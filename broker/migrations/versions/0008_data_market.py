"""data market: the catalog (datasets and their versions), contract negotiations with their
messages, the agreements the broker signs, notifications to members; transfers under an
agreement, with what they delivered, until when it may be kept and when it was deleted

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 09:27:26
"""

import sqlalchemy as sa
from alembic import op

from broker.storage.db import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "catalog_datasets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("provider_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("search_columns", sa.Text(), nullable=False),
        sa.Column("search_purposes", sa.Text(), nullable=False),
        sa.Column("withdrawn_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider_id"], ["members.id"], name=op.f("fk_catalog_datasets_provider_id_members")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_datasets")),
    )
    with op.batch_alter_table("catalog_datasets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_catalog_datasets_provider_id"), ["provider_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_catalog_datasets_updated_at"), ["updated_at"], unique=False
        )

    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["member_id"], ["members.id"], name=op.f("fk_notifications_member_id_members")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
    )
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notifications_member_id"), ["member_id"], unique=False)

    op.create_table(
        "catalog_versions",
        sa.Column("dataset_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.JSON(), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=True),
        sa.Column("measured_sha256", sa.String(length=64), nullable=True),
        sa.Column("measured_at", UTCDateTime(), nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["catalog_datasets.id"],
            name=op.f("fk_catalog_versions_dataset_id_catalog_datasets"),
        ),
        sa.PrimaryKeyConstraint("dataset_id", "version", name=op.f("pk_catalog_versions")),
    )
    op.create_table(
        "negotiations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("dataset_id", sa.String(length=36), nullable=False),
        sa.Column("dataset_version", sa.Integer(), nullable=False),
        sa.Column("consumer_id", sa.String(length=64), nullable=False),
        sa.Column("provider_id", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("purpose", sa.String(length=200), nullable=False),
        sa.Column("asked", sa.JSON(), nullable=False),
        sa.Column("required", sa.JSON(), nullable=True),
        sa.Column("offered", sa.JSON(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("agreement_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["consumer_id"], ["members.id"], name=op.f("fk_negotiations_consumer_id_members")
        ),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["catalog_datasets.id"],
            name=op.f("fk_negotiations_dataset_id_catalog_datasets"),
        ),
        sa.ForeignKeyConstraint(
            ["provider_id"], ["members.id"], name=op.f("fk_negotiations_provider_id_members")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_negotiations")),
    )
    with op.batch_alter_table("negotiations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_negotiations_consumer_id"), ["consumer_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_negotiations_dataset_id"), ["dataset_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_negotiations_provider_id"), ["provider_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_negotiations_state"), ["state"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_negotiations_updated_at"), ["updated_at"], unique=False
        )

    op.create_table(
        "agreements",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("negotiation_id", sa.String(length=36), nullable=False),
        sa.Column("dataset_id", sa.String(length=36), nullable=False),
        sa.Column("dataset_version", sa.Integer(), nullable=False),
        sa.Column("provider_id", sa.String(length=64), nullable=False),
        sa.Column("consumer_id", sa.String(length=64), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["consumer_id"], ["members.id"], name=op.f("fk_agreements_consumer_id_members")
        ),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["catalog_datasets.id"],
            name=op.f("fk_agreements_dataset_id_catalog_datasets"),
        ),
        sa.ForeignKeyConstraint(
            ["negotiation_id"],
            ["negotiations.id"],
            name=op.f("fk_agreements_negotiation_id_negotiations"),
        ),
        sa.ForeignKeyConstraint(
            ["provider_id"], ["members.id"], name=op.f("fk_agreements_provider_id_members")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agreements")),
        sa.UniqueConstraint("negotiation_id", name=op.f("uq_agreements_negotiation_id")),
    )
    with op.batch_alter_table("agreements", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_agreements_consumer_id"), ["consumer_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_agreements_dataset_id"), ["dataset_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_agreements_provider_id"), ["provider_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_agreements_state"), ["state"], unique=False)

    op.create_table(
        "negotiation_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("negotiation_id", sa.String(length=36), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("message", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["negotiation_id"],
            ["negotiations.id"],
            name=op.f("fk_negotiation_events_negotiation_id_negotiations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_negotiation_events")),
        sa.UniqueConstraint(
            "negotiation_id",
            "actor",
            "idempotency_key",
            name=op.f("uq_negotiation_events_negotiation_id"),
        ),
    )
    with op.batch_alter_table("negotiation_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_negotiation_events_negotiation_id"), ["negotiation_id"], unique=False
        )

    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("agreement_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("delivered_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("retain_until", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("erased_at", UTCDateTime(), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_transfers_agreement_id"), ["agreement_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_transfers_delivered_sha256"), ["delivered_sha256"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("transfers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_transfers_delivered_sha256"))
        batch_op.drop_index(batch_op.f("ix_transfers_agreement_id"))
        batch_op.drop_column("erased_at")
        batch_op.drop_column("retain_until")
        batch_op.drop_column("delivered_sha256")
        batch_op.drop_column("agreement_id")

    with op.batch_alter_table("negotiation_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_negotiation_events_negotiation_id"))

    op.drop_table("negotiation_events")
    with op.batch_alter_table("agreements", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agreements_state"))
        batch_op.drop_index(batch_op.f("ix_agreements_provider_id"))
        batch_op.drop_index(batch_op.f("ix_agreements_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_agreements_consumer_id"))

    op.drop_table("agreements")
    with op.batch_alter_table("negotiations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_negotiations_updated_at"))
        batch_op.drop_index(batch_op.f("ix_negotiations_state"))
        batch_op.drop_index(batch_op.f("ix_negotiations_provider_id"))
        batch_op.drop_index(batch_op.f("ix_negotiations_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_negotiations_consumer_id"))

    op.drop_table("negotiations")
    op.drop_table("catalog_versions")
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notifications_member_id"))

    op.drop_table("notifications")
    with op.batch_alter_table("catalog_datasets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_catalog_datasets_updated_at"))
        batch_op.drop_index(batch_op.f("ix_catalog_datasets_provider_id"))

    op.drop_table("catalog_datasets")

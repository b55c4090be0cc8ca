"""The migrations build exactly the schema the models describe, and run both ways."""

import hashlib
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.orm import Session

from broker.delivery.models import Delivery
from broker.models import *  # noqa: F403  (every table registers on Base.metadata)
from broker.storage.db import Base, UTCDateTime, alembic_config, make_engine, upgrade
from broker.transfers import recording
from broker.transfers.models import Transfer
from tests.conftest import postgres_database


def test_models_and_migrations_agree(engine):
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_downgrade_to_base_and_upgrade_again(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'roundtrip.db'}")
    upgrade(engine)
    command.downgrade(alembic_config(engine), "base")
    upgrade(engine)
    with engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() is not None


# RFC 9530's own example: the Content-Digest of the body {"hello": "world"}.
HELLO = b'{"hello": "world"}'
HELLO_DIGEST = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
WHEN = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


# What every stored transfer's dataset held since the first revision (the upload's identity).
FACTS = {"sha256": "0" * 64, "size_bytes": 5, "rows": 1, "columns": 1, "filename": "a.csv"}


def _old_rows(connection) -> None:
    """A member, two approved transfers and their outbox rows, as revision 0013 wrote them."""
    members = sa.table(
        "members",
        *(sa.column(name, sa.String()) for name in ("id", "name", "jurisdiction")),
        *(sa.column(name, sa.String()) for name in ("inbox_url", "api_key_hash", "status")),
        sa.column("created_at", UTCDateTime()),
    )
    transfers = sa.table(
        "transfers",
        *(sa.column(n, sa.String()) for n in ("id", "source_id", "destination_id", "purpose")),
        *(sa.column(n, sa.String()) for n in ("status", "anonymize", "request_fingerprint")),
        *(sa.column(n, sa.JSON()) for n in ("quasi_identifiers", "sensitive", "rules")),
        *(sa.column(n, sa.JSON()) for n in ("policy_versions", "dataset")),
        sa.column("quasi_identifiers_inferred", sa.Boolean()),
        sa.column("agreement_id", sa.String()),
        sa.column("created_at", UTCDateTime()),
        sa.column("retain_until", UTCDateTime()),
    )
    deliveries = sa.table(
        "deliveries",
        *(sa.column(n, sa.String()) for n in ("transfer_id", "status", "payload_type")),
        sa.column("payload_file", sa.String()),
        sa.column("payload", sa.LargeBinary()),
        sa.column("attempts", sa.Integer()),
        sa.column("next_attempt_at", UTCDateTime()),
    )
    for member in ("sn-hospital", "fr-research"):
        connection.execute(
            members.insert().values(
                id=member,
                name=member,
                jurisdiction=member[:2].upper(),
                inbox_url="http://127.0.0.1:9/inbox",
                api_key_hash=member,
                status="active",
                created_at=WHEN,
            )
        )
    common = dict(
        source_id="sn-hospital",
        destination_id="fr-research",
        status="approved",
        anonymize="none",
        request_fingerprint="f" * 64,
        quasi_identifiers=[],
        sensitive=[],
        rules=[],
        policy_versions={"SN": 1, "FR": 1},
        quasi_identifiers_inferred=False,
        created_at=WHEN,
    )
    connection.execute(
        transfers.insert().values(
            id="t-bytes",
            purpose="recherche médicale",
            dataset={
                **FACTS,
                "format": "csv",
                "anonymized": True,
                "delivered_filename": "transfer-a.csv",
            },
            agreement_id=None,
            retain_until=datetime(2027, 1, 31, 12, 0, tzinfo=UTC),
            **common,
        )
    )
    connection.execute(
        transfers.insert().values(
            id="t-file",
            purpose="research",
            dataset={
                **FACTS,
                "format": "parquet",
                "anonymized": False,
                "delivered_filename": "transfer-b.parquet",
                "delivered_sha256": hashlib.sha256(HELLO).hexdigest(),
            },
            agreement_id="a-1",
            retain_until=None,
            **common,
        )
    )
    for transfer_id, payload, payload_file in (("t-bytes", HELLO, None), ("t-file", None, "/x")):
        connection.execute(
            deliveries.insert().values(
                transfer_id=transfer_id,
                status="pending",
                payload_type="text/csv",
                payload=payload,
                payload_file=payload_file,
                attempts=0,
                next_attempt_at=WHEN,
            )
        )


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_outbox_rows_written_before_0014_carry_their_delivery_data(tmp_path, backend):
    """Migration 0014 fills in the source, destination and headers of the rows written before,
    as a delivery of theirs carried them; the decision writes the same for a new row."""
    if backend == "sqlite":
        url, drop = f"sqlite:///{tmp_path / 'old.db'}", None
    else:
        url, drop = postgres_database()
    engine = make_engine(url)
    try:
        command.upgrade(alembic_config(engine), "0013")
        with engine.begin() as connection:
            _old_rows(connection)
        upgrade(engine)
        with Session(engine) as session:
            found = {d.transfer_id: d for d in session.scalars(sa.select(Delivery))}
            assert {d.destination_id for d in found.values()} == {"fr-research"}
            assert {d.source_id for d in found.values()} == {"sn-hospital"}
            expected = {
                "Content-Type": "text/csv",
                "Content-Digest": HELLO_DIGEST,
                "Idempotency-Key": "t-bytes",
                "X-Fedbroker-Recipient": "fr-research",
                "X-Fedbroker-Transfer": "t-bytes",
                "X-Fedbroker-Source": "sn-hospital",
                "X-Fedbroker-Purpose": "recherche%20m%C3%A9dicale",
                "X-Fedbroker-Decision": "approved",
                "X-Fedbroker-Filename": "transfer-a.csv",
                "X-Fedbroker-Anonymized": "true",
                "X-Fedbroker-Agreement": "",
                "X-Fedbroker-Retain-Until": "2027-01-31T12:00:00Z",
            }
            assert found["t-bytes"].headers == expected
            assert found["t-file"].headers["Content-Digest"] == HELLO_DIGEST
            assert found["t-file"].headers["X-Fedbroker-Agreement"] == "a-1"
            assert found["t-file"].headers["X-Fedbroker-Retain-Until"] == ""
            # A decision recorded now writes the headers the migration wrote.
            transfer = session.get(Transfer, "t-bytes")
            transfer.dataset = transfer.dataset | {
                "delivered_sha256": hashlib.sha256(HELLO).hexdigest()
            }
            assert recording.delivery_headers(transfer, "text/csv") == expected
            session.rollback()
        command.downgrade(alembic_config(engine), "0013")
        upgrade(engine)
    finally:
        engine.dispose()
        if drop is not None:
            drop()

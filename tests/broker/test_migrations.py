"""The migrations build exactly the schema the models describe, and run both ways."""

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from broker.db import Base, alembic_config, make_engine, upgrade
from broker.models import *  # noqa: F403  (every table registers on Base.metadata)


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

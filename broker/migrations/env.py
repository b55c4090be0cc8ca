"""Alembic environment: uses the engine handed over by broker.db, or BROKER_DATABASE_URL."""

from alembic import context

from broker.db import Base, make_engine

# Models register their tables on Base.metadata when imported.
from broker.models import *  # noqa: F403

config = context.config
engine = config.attributes.get("engine")
if engine is None:
    from broker.config import Settings

    engine = make_engine(Settings().database_url)

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()

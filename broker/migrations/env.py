"""Alembic environment: uses the engine handed over by broker.storage.db, or BROKER_DATABASE_URL."""

from alembic import context

# Models register their tables on Base.metadata when imported.
from broker.models import *  # noqa: F403
from broker.storage.db import Base, Timeouts, make_engine, without_timeouts

config = context.config
engine = config.attributes.get("engine")
if engine is None:
    from broker.config import Settings

    settings = Settings()
    engine = make_engine(settings.database_url, Timeouts.of(settings))

# A migration may rightly take longer than any statement of a request.
with engine.connect() as connection, without_timeouts(connection):
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()

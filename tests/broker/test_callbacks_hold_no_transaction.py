"""A protocol callback is posted with no database transaction held.

A consumer's connector may answer slowly, or not at all until the broker's client gives up. On
SQLite a transaction held over that POST holds the write lock every other request waits for (up
to the lock timeout, then a 503); on PostgreSQL it holds a connection idle in transaction. The
broker runs here on a SQLite file of its own (not bound to a test's connection), and the
consumer, while it takes the callback, tries to take the write lock as any other request would.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from broker.main import create_app
from broker.storage.db import make_engine, upgrade
from tests.broker.conftest import Federation
from tests.broker.test_catalog import measure, publish
from tests.broker.test_dsp import post
from tests.broker.test_dsp_callbacks import deliver, v1
from tests.servers import ServerThread

CONSUMER_PID = "urn:uuid:0b6f6a57-4c1e-4f0e-9d55-3f1c2f4a9e10"


class LockProbingConsumer:
    """A consumer's connector that, while it takes a callback, tries for half a second to take
    the broker's SQLite write lock from a connection of its own: whether it could, per
    callback."""

    def __init__(self, database: Path):
        self.database = database
        self.could_write: list[bool] = []
        self.url = ""

    def _try_to_write(self) -> bool:
        other = sqlite3.connect(self.database, timeout=0.5, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:  # database is locked
            return False
        finally:
            other.close()

    def app(self) -> Starlette:
        async def take(request: Request) -> Response:
            await request.body()
            self.could_write.append(await run_in_threadpool(self._try_to_write))
            return Response(status_code=200)

        return Starlette(routes=[Route("/cb/{rest:path}", take, methods=["POST"])])


def contract_request(dataset: str, callback: str) -> dict:
    """A consumer's first ContractRequestMessage (Dataspace Protocol 2025-1) for ``dataset``."""
    return {
        "@context": ["https://w3id.org/dspace/2025/1/context.jsonld"],
        "@type": "ContractRequestMessage",
        "consumerPid": CONSUMER_PID,
        "offer": {
            "@type": "Offer",
            "@id": f"urn:fedbroker:offer:{dataset}:1:research",
            "target": f"urn:uuid:{dataset}",
            "permission": [{"action": "use"}],
        },
        "callbackAddress": callback,
    }


def test_no_transaction_is_held_while_a_callback_is_posted(settings, tmp_path):
    database = tmp_path / "broker.db"
    engine = make_engine(f"sqlite:///{database}")
    upgrade(engine)
    engine.dispose()
    consumer = LockProbingConsumer(database)
    server = ServerThread(consumer.app()).start()
    consumer.url = server.url
    own = settings.model_copy(update={"database_url": f"sqlite:///{database}"})
    try:
        with TestClient(create_app(own)) as client:
            federation = Federation(client)
            dataset = publish(federation).json()["id"]
            assert measure(federation, dataset).status_code == 200
            requested = post(
                federation, "/negotiations/request", contract_request(dataset, f"{server.url}/cb")
            )
            assert requested.status_code == 201, requested.text
            provider_pid = requested.json()["providerPid"]
            v1(federation, "sn-hospital", provider_pid, "offer", {"terms": {"min_k": 5}})
            assert deliver(federation) == 1
    finally:
        server.stop()
    assert consumer.could_write == [True]

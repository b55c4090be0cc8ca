from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from broker.config import Settings
from broker.main import create_app
from tests.conftest import ADMIN_TOKEN, FIXTURES, POLICIES
from tests.servers import ServerThread

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
UPLOAD_LIMIT = 200_000


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(
        database_url="sqlite://",
        signing_key_dir=tmp_path / "signing-keys",
        spool_dir=tmp_path / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        delivery_enabled=False,
        jobs_enabled=False,  # the tests run the job runner's passes themselves
        health_check_enabled=False,  # and the health checker's
        max_upload_bytes=UPLOAD_LIMIT,
    )


@pytest.fixture
def client(connection, settings):
    with TestClient(create_app(settings, bind=connection)) as client:
        yield client


class Federation:
    """A broker with three members (SN, FR, NG) registered through the API."""

    def __init__(self, client: TestClient):
        self.client = client
        self.keys = {}
        for member_id, jurisdiction in (
            ("sn-hospital", "SN"),
            ("fr-research", "FR"),
            ("ng-health", "NG"),
            ("sn-lab", "SN"),
        ):
            answer = client.post(
                "/v1/members",
                headers=ADMIN,
                json={
                    "id": member_id,
                    "name": member_id,
                    "jurisdiction": jurisdiction,
                    "inbox_url": f"http://127.0.0.1:9/{member_id}/inbox",
                },
            )
            assert answer.status_code == 201, answer.text
            self.keys[member_id] = answer.json()["api_key"]

    def add_lab(self, inbox_url: str) -> None:
        """A French member whose inbox is ``inbox_url`` (a recording inbox): ``fr-lab``."""
        answer = self.client.post(
            "/v1/members",
            headers=ADMIN,
            json={"id": "fr-lab", "name": "FR lab", "jurisdiction": "FR", "inbox_url": inbox_url},
        )
        assert answer.status_code == 201, answer.text
        self.keys["fr-lab"] = answer.json()["api_key"]
        self.worker = self.client.app.state.delivery_worker

    def send(
        self,
        source: str,
        fixture: str | bytes,
        filename: str = "data.csv",
        headers: dict | None = None,
        **form,
    ):
        data = (FIXTURES / fixture).read_bytes() if isinstance(fixture, str) else fixture
        form.setdefault("purpose", "research")
        return self.client.post(
            "/v1/transfers",
            headers={**bearer(self.keys[source]), **(headers or {})},
            files={"file": (filename, data, "text/csv")},
            data=form,
        )


@pytest.fixture
def federation(client) -> Federation:
    return Federation(client)


def drain(federation, rounds=20):
    """Run the delivery worker's passes (its thread is off in these tests)."""
    for _ in range(rounds):
        federation.worker.run_once()
        time.sleep(0.02)


class Consumer:
    """A consumer's connector: records each message, answers the statuses it is told to."""

    def __init__(self):
        self.received: list[tuple[str, dict]] = []
        self.raw: list[tuple[object, list[tuple[str, str]], bytes]] = []  # url, headers, body
        self.failures = 0  # answer 503 this many times first

    def app(self) -> Starlette:
        async def take(request: Request) -> Response:
            if self.failures:
                self.failures -= 1
                return Response(status_code=503)
            body = await request.body()
            self.received.append((request.url.path, json.loads(body)))
            self.raw.append((request.url, list(request.headers.items()), body))
            return Response(status_code=200)

        return Starlette(routes=[Route("/cb/{rest:path}", take, methods=["POST"])])


@pytest.fixture
def consumer():
    """A consumer's connector on a real HTTP server on 127.0.0.1, for protocol callbacks."""
    found = Consumer()
    server = ServerThread(found.app()).start()
    found.url = server.url
    yield found
    server.stop()

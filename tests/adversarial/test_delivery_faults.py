"""Faults of the delivery worker under load, judged by the inboxes (class 17 of the threats).

A real broker (uvicorn, SQLite, its delivery worker on) delivers a burst of approved transfers
while one destination hangs and the database fails when outcomes are recorded. The lease is
ten minutes: a delivery left to wait it out would never arrive within these tests, so arriving
at all shows that nothing waited for it. Exactly once is judged by what the inbox received.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest
from sqlalchemy.exc import OperationalError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from broker.delivery import repository, service
from tests.adversarial.conftest import DESTINATION, _running_broker
from tests.conftest import FIXTURES
from tests.servers import ServerThread

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}
BURST = 12


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """A broker whose leases outlast every test, 4 deliveries under way per worker, and
    fr-hanging, a member whose inbox holds every POST until told to answer."""
    release = threading.Event()
    hung = []

    async def hanging_inbox(request: Request) -> JSONResponse:
        hung.append(request.headers["idempotency-key"])
        await request.body()
        while not release.is_set():
            await asyncio.sleep(0.02)
        return JSONResponse({"status": "received"}, status_code=201)

    async def ready(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ready"})

    app = Starlette(
        routes=[
            Route("/inbox", hanging_inbox, methods=["POST"]),
            Route("/readyz", ready, methods=["GET"]),
        ]
    )
    hanging = ServerThread(app).start()
    with _running_broker(
        tmp_path_factory.mktemp("faults"),
        delivery_lease_seconds=600,
        delivery_timeout_seconds=60,
        delivery_concurrency=4,
    ) as broker:
        broker.register("fr-hanging", "FR", hanging.url + "/inbox")
        yield broker, release, hung
        release.set()
    hanging.stop()


def _approved(broker, destination: str = DESTINATION) -> str:
    data = (FIXTURES / "patients_published.csv").read_bytes()
    answer = broker.send(data, "patients.csv", destination=destination, **QI)
    assert answer["status"] == "approved", answer["rules"]
    return answer["id"]


def _wait(condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.02)


def test_a_hanging_destination_holds_one_place_never_the_others(faulty):
    broker, release, hung = faulty
    stuck = [_approved(broker, "fr-hanging") for _ in range(2)]
    _wait(lambda: set(stuck) <= set(hung), "the POSTs to fr-hanging")
    burst = [_approved(broker) for _ in range(BURST)]

    # fr-research's inbox receives the whole burst while fr-hanging still holds its POSTs.
    _wait(lambda: all(broker.received_for(t) for t in burst), "the burst's deliveries")
    assert not release.is_set()
    received = Counter(h["idempotency-key"] for h, _ in broker.inbox.received)
    assert all(received[t] == 1 for t in burst)
    release.set()
    _wait(
        lambda: all(broker.transfer(t)["delivery"]["status"] == "delivered" for t in stuck),
        "the deliveries to fr-hanging",
    )


def test_a_database_error_while_settling_delays_nothing_and_posts_once(faulty, monkeypatch):
    """The first outcomes of the burst cannot be recorded (the database is restarting): those
    deliveries are settled at the worker's next pass, without a second POST, and the others go
    on meanwhile; none waits out its ten-minute lease."""
    broker, _, _ = faulty
    settle, failures = repository.settle, []

    def restarting_database(session, transfer_id, owner, **values):
        if len(failures) < 3 and values.get("status") == "delivered":
            failures.append(transfer_id)
            raise OperationalError(
                "UPDATE deliveries", {}, Exception("server closed the connection")
            )
        return settle(session, transfer_id, owner, **values)

    monkeypatch.setattr(repository, "settle", restarting_database)
    burst = [_approved(broker) for _ in range(BURST)]

    _wait(
        lambda: all(broker.transfer(t)["delivery"]["status"] == "delivered" for t in burst),
        "every delivery of the burst recorded as delivered",
    )
    assert len(failures) == 3
    received = Counter(h["idempotency-key"] for h, _ in broker.inbox.received)
    assert [received[t] for t in burst] == [1] * BURST  # each POSTed once: nothing sent again
    assert {broker.transfer(t)["delivery"]["attempts"] for t in burst} == {1}


def test_a_database_error_before_the_post_is_tried_again_at_the_next_pass(faulty, monkeypatch):
    """Reading the delivery fails (the database is gone for a moment): nothing was posted, and
    the worker tries again at its next pass instead of leaving it to its lease."""
    broker, _, _ = faulty
    attempt, failed = service.attempt, []

    def flaky_attempt(*args, **kwargs):
        if not failed:
            failed.append(args[-1])
            raise OperationalError("SELECT deliveries", {}, Exception("connection refused"))
        return attempt(*args, **kwargs)

    monkeypatch.setattr(service, "attempt", flaky_attempt)
    transfer_id = _approved(broker)
    _wait(lambda: broker.received_for(transfer_id), "the delivery")
    assert failed == [transfer_id]
    assert len(broker.received_for(transfer_id)) == 1

"""Delivery across real broker processes: a SIGKILL mid-retry, and two brokers on one database."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, FIXTURES, POLICIES, postgres_database
from tests.servers import free_port

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease", "purpose": "research"}


class BrokerProcess:
    def __init__(self, database_url: str, log: Path, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "BROKER_DATABASE_URL": database_url,
            "BROKER_ADMIN_TOKEN": ADMIN_TOKEN,
            "BROKER_PORT": str(self.port),
            "BROKER_POLICY_DIR": str(POLICIES),
            "BROKER_DELIVERY_POLL_SECONDS": "0.1",
            "BROKER_DELIVERY_BACKOFF_SECONDS": "0.2",
            "BROKER_DELIVERY_BACKOFF_MAX_SECONDS": "0.5",
            "BROKER_DELIVERY_LEASE_SECONDS": "2",
            "BROKER_DELIVERY_TIMEOUT_SECONDS": "1",
            "BROKER_DELIVERY_MAX_ATTEMPTS": "50",
            "BROKER_INBOX_ALLOWED_NETWORKS": '["127.0.0.0/8"]',
            "BROKER_SIGNING_KEY_DIR": str(log.parent / "broker-keys"),
        }
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> BrokerProcess:
        return self.launch().wait_ready()

    def launch(self) -> BrokerProcess:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "broker"],
            env=self.env,
            stdout=self.log.open("a"),
            stderr=subprocess.STDOUT,
        )
        return self

    def wait_ready(self) -> BrokerProcess:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"broker did not start: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def register(broker_url: str, inbox_url: str) -> str:
    for member_id, jurisdiction in (("sn-hospital", "SN"), ("fr-research", "FR")):
        answer = httpx.post(
            f"{broker_url}/v1/members",
            headers=ADMIN,
            json={
                "id": member_id,
                "name": member_id,
                "jurisdiction": jurisdiction,
                "inbox_url": inbox_url,
            },
        )
        assert answer.status_code == 201, answer.text
        if member_id == "sn-hospital":
            key = answer.json()["api_key"]
    return key


def send(broker_url: str, key: str) -> str:
    answer = httpx.post(
        f"{broker_url}/v1/transfers",
        headers={"Authorization": f"Bearer {key}"},
        files={"file": ("t.csv", (FIXTURES / "patients_published.csv").read_bytes())},
        data={"destination": "fr-research", **QI},
        timeout=30,
    )
    assert answer.json()["status"] == "approved", answer.text
    return answer.json()["id"]


def wait_delivered(broker_url: str, ids: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for transfer_id in list(pending):
            state = httpx.get(f"{broker_url}/v1/transfers/{transfer_id}", headers=ADMIN).json()[
                "delivery"
            ]
            if state["status"] == "delivered":
                pending.discard(transfer_id)
            assert state["status"] != "failed", state
        time.sleep(0.2)
    assert not pending, f"not delivered in time: {pending}"


def test_broker_killed_while_a_delivery_is_pending_delivers_once(tmp_path, inbox):
    inbox.answers = [503] * 1000  # the destination is failing: the delivery stays pending
    broker = BrokerProcess(f"sqlite:///{tmp_path / 'broker.db'}", tmp_path / "broker.log")
    broker.start()
    try:
        transfer_id = send(broker.url, register(broker.url, inbox.url))
        deadline = time.monotonic() + 20
        while len(inbox.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(inbox.received) >= 2, "the broker did not retry"
        broker.kill()
        inbox.answers.clear()  # the destination recovers while the broker is down
        failures = len(inbox.received)
        broker.start()
        wait_delivered(broker.url, [transfer_id])
    finally:
        broker.stop()
    accepted = inbox.received[failures:]
    assert [h["idempotency-key"] for h, _ in accepted] == [transfer_id]
    sent = (FIXTURES / "patients_published.csv").read_text().splitlines()
    arrived = accepted[0][1].decode().splitlines()
    assert arrived[0] == sent[0] and sorted(arrived[1:]) == sorted(sent[1:])
    # Every attempt posts the payload stored with the decision: the same bytes each time.
    assert len({body for _, body in inbox.received}) == 1


@pytest.mark.postgres
def test_two_brokers_on_one_postgresql_database_deliver_each_transfer_once(tmp_path, inbox):
    url, drop = postgres_database()
    first = BrokerProcess(url, tmp_path / "first.log")
    second = BrokerProcess(url, tmp_path / "second.log")
    try:
        first.launch()  # both at once on the fresh database: migrations and seeding race
        second.launch()
        first.wait_ready()
        second.wait_ready()
        key = register(first.url, inbox.url)
        ids = [send((first if i % 2 else second).url, key) for i in range(12)]
        wait_delivered(first.url, ids)
        time.sleep(2.5)  # past the lease: a duplicate, if any, would have arrived
    finally:
        first.stop()
        second.stop()
        drop()
    posted = Counter(headers["idempotency-key"] for headers, _ in inbox.received)
    assert posted == Counter({transfer_id: 1 for transfer_id in ids})


def test_a_broker_with_two_worker_processes_delivers_each_transfer_once(tmp_path, inbox):
    url, drop = postgres_database()
    broker = BrokerProcess(url, tmp_path / "workers.log")
    broker.env["BROKER_WORKERS"] = "2"
    try:
        broker.start()
        key = register(broker.url, inbox.url)
        ids = [send(broker.url, key) for _ in range(12)]
        wait_delivered(broker.url, ids)
        time.sleep(2.5)  # past the lease: a duplicate, if any, would have arrived
        workers = set(re.findall(r"Started server process \[(\d+)\]", broker.log.read_text()))
    finally:
        broker.stop()
        drop()
    assert len(workers) == 2, broker.log.read_text()[-2000:]
    posted = Counter(headers["idempotency-key"] for headers, _ in inbox.received)
    assert posted == Counter({transfer_id: 1 for transfer_id in ids})

"""A hostile member cannot stall the broker by holding its database connections (threat class
15), judged through a real broker process on PostgreSQL and what another member gets.

A broker process keeps at most 15 connections to PostgreSQL and opens no more (a request waits
for a free one, then answers 503). A member that opens many uploads and never finishes sending
them, while it floods the broker with transfers at once, must not take them all: a request holds
a connection only while it reads or writes the database, never while its body arrives or while
its data is measured. Meanwhile another member's transfer is decided and delivered.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx

from tests.adversarial.tables import csv_bytes, harmless
from tests.conftest import postgres_database
from tests.e2e.test_delivery_processes import ADMIN, BrokerProcess, register, wait_delivered

HELD_OPEN = 40  # uploads begun and never finished: far more than the pool's 15 connections
FLOOD = 24  # transfers sent at once, so that the connections are busy meanwhile
DATA = csv_bytes(harmless(20_000, seed=31))
QI = {"quasi_identifiers": "age_band,sex", "sensitive": "diagnosis", "purpose": "research"}


def _begin_upload(port: int, key: str) -> socket.socket:
    """A transfer whose headers and first bytes are sent, and the rest never."""
    boundary = "stall"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="destination"\r\n\r\n'
        "fr-research\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="t.csv"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode() + DATA[:100]
    request = (
        "POST /v1/transfers HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(head) + 1_000_000}\r\n\r\n"
    ).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(request + head)
    return sock


def _transfer(url: str, key: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/transfers",
        headers={"Authorization": f"Bearer {key}"},
        files={"file": ("t.csv", DATA)},
        data={"destination": "fr-research", **QI},
        timeout=60,
    )


def test_uploads_held_open_and_a_flood_leave_another_member_its_decision(tmp_path, inbox):
    url, drop = postgres_database()  # skips, naming why, where no server answers
    broker = BrokerProcess(url, tmp_path / "broker.log")
    broker.env |= {"BROKER_DATABASE_POOL_TIMEOUT_SECONDS": "3", "BROKER_RATE_LIMIT": "1000/minute"}
    held: list[socket.socket] = []
    try:
        broker.start()
        victim = register(broker.url, inbox.url)  # sn-hospital
        answer = httpx.post(
            f"{broker.url}/v1/members",
            headers=ADMIN,
            json={"id": "sn-lab", "name": "sn-lab", "jurisdiction": "SN", "inbox_url": inbox.url},
        )
        assert answer.status_code == 201, answer.text
        attacker = answer.json()["api_key"]
        held = [_begin_upload(broker.port, attacker) for _ in range(HELD_OPEN)]
        flood: list[httpx.Response] = []
        threads = [
            threading.Thread(target=lambda: flood.append(_transfer(broker.url, attacker)))
            for _ in range(FLOOD)
        ]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        decided = _transfer(broker.url, victim)
        took = time.monotonic() - started
        for thread in threads:
            thread.join(120)
        assert decided.status_code == 200, decided.text
        assert decided.json()["status"] == "approved", decided.text
        # the flood itself was served too: no connection waited out the pool's 3 s
        assert sorted({r.status_code for r in flood}) == [200], [r.text for r in flood][:3]
        wait_delivered(broker.url, [decided.json()["id"]])
    finally:
        for sock in held:
            sock.close()
        broker.stop()
        drop()
    print(f"the other member's transfer was decided in {took:.1f} s")  # shown by pytest -rP

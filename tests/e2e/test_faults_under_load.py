"""A frozen database and a killed broker, under load, judged by the inbox.

Member clouds send transfers without pause, each with its own ``Idempotency-Key``, and send a
request again when the answer says to (503 with ``Retry-After``) or when none came (the broker
was killed). Meanwhile the test freezes the broker's PostgreSQL server (SIGSTOP: the broker's
bytes are still accepted, never answered) or kills the broker (SIGKILL) and starts it again.
Every request must get an answer that says what happened (a decision, or 503
database-unavailable; never a 500, never a hang), and once the fault is over every approved
transfer must reach the destination's inbox, stored there once, with the bytes it was decided on.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.adversarial.tables import csv_bytes, harmless
from tests.e2e.test_delivery_processes import ADMIN, BrokerProcess, register
from tests.faults import PrivatePostgres, wait_until

PROBLEM = "application/problem+json"
QI = {"quasi_identifiers": "age_band,sex", "sensitive": "diagnosis", "purpose": "research"}
SMALL = csv_bytes(harmless(300, seed=21))  # decided in memory: its payload is in the database
LARGE = csv_bytes(harmless(3_000, seed=22))  # out of core: its payload is a spool file
REQUEST_TIMEOUT = 30.0  # a request that hangs this long fails the test
SENDERS, PER_SENDER = 4, 6


@dataclass
class Load:
    """Senders that each decide ``PER_SENDER`` transfers, one at a time, retrying as told."""

    url: str
    api_key: str
    transport_errors_allowed: bool
    decided: dict[str, dict] = field(default_factory=dict)  # idempotency key -> decision
    faults: Counter = field(default_factory=Counter)  # what the retried answers were
    waited: list[float] = field(default_factory=list)  # seconds each of those took
    unexpected: list[str] = field(default_factory=list)

    def run(self) -> None:
        threads = [threading.Thread(target=self._sender, args=(n,)) for n in range(SENDERS)]
        for thread in threads:
            thread.start()
        self.threads = threads

    def join(self) -> None:
        for thread in self.threads:
            thread.join(180)
        assert not self.unexpected, self.unexpected[:3]
        assert len(self.decided) == SENDERS * PER_SENDER, f"undecided: {len(self.decided)}"

    def _sender(self, number: int) -> None:
        with httpx.Client(timeout=REQUEST_TIMEOUT) as client:
            for i in range(PER_SENDER):
                key = f"sender-{number}-{i}"
                data = LARGE if (number + i) % 2 else SMALL
                if not self._send_until_decided(client, key, data):
                    return

    def _send_until_decided(self, client: httpx.Client, key: str, data: bytes) -> bool:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                answer = client.post(
                    f"{self.url}/v1/transfers",
                    headers={"Authorization": f"Bearer {self.api_key}", "Idempotency-Key": key},
                    files={"file": ("t.csv", data, "text/csv")},
                    data={"destination": "fr-research", **QI},
                )
            except httpx.ReadTimeout:
                self.unexpected.append(f"{key}: no answer within {REQUEST_TIMEOUT} s")
                return False
            except httpx.TransportError as error:
                if not self.transport_errors_allowed:
                    self.unexpected.append(f"{key}: {error!r}")
                    return False
                self.faults["no answer"] += 1
                time.sleep(0.1)
                continue
            if answer.status_code == 200:
                self.decided[key] = answer.json()
                return True
            problem = answer.json() if answer.headers.get("content-type") == PROBLEM else {}
            if answer.status_code != 503 or "Retry-After" not in answer.headers:
                self.unexpected.append(f"{key}: HTTP {answer.status_code} {answer.text[:300]}")
                return False
            self.faults[problem.get("type", "?")] += 1
            self.waited.append(time.monotonic() - started)
            time.sleep(min(float(answer.headers["Retry-After"]), 0.3))  # the test's patience
        self.unexpected.append(f"{key}: not decided in 120 s")
        return False


def judge_inbox(broker_url: str, inbox, load: Load) -> dict[str, int]:
    """Every approved transfer reached the inbox, with the bytes it was decided on, and is
    stored there once; nothing else arrived. Returns the transfers posted more than once.

    Delivery is at least once: a post whose success the broker could not record (its database
    froze, or it was killed, right after the inbox answered) is posted again once its lease has
    passed, the same signed bytes under the same transfer id, which the member's inbox stores
    once (``member_cloud.storage.Inbox.store``). So the inbox is judged as it stores: one
    transfer id, one body."""
    approved = {d["id"]: d for d in load.decided.values() if d["status"] == "approved"}
    assert len(approved) == len(load.decided), Counter(d["status"] for d in load.decided.values())

    def arrived() -> set[str]:
        return {h.get("idempotency-key") for h, _ in list(inbox.received)}

    assert wait_until(lambda: set(approved) <= arrived(), timeout=90), (
        f"approved but never delivered: {sorted(set(approved) - arrived())}; delivery states: "
        + str(
            [
                httpx.get(f"{broker_url}/v1/transfers/{t}", headers=ADMIN).json()["delivery"]
                for t in sorted(set(approved) - arrived())[:3]
            ]
        )
    )
    time.sleep(2.5)  # past the delivery lease: a second post, if any, would have come
    bodies = defaultdict(list)
    for headers, body in inbox.received:
        bodies[headers.get("idempotency-key")].append(body)
    assert set(bodies) == set(approved)
    for transfer_id, received in bodies.items():
        assert len(set(received)) == 1, f"{transfer_id} arrived with different bodies"
        sent = SMALL if len(received[0]) < len(LARGE) * 3 // 4 else LARGE
        assert sorted(received[0].splitlines()) == sorted(sent.splitlines()), transfer_id
    return {t: len(b) for t, b in bodies.items() if len(b) > 1}


def _broker(database_url: str, tmp_path: Path) -> BrokerProcess:
    broker = BrokerProcess(database_url, tmp_path / "broker.log")
    broker.env |= {
        "BROKER_SPOOL_DIR": str(tmp_path / "spool"),
        "BROKER_IN_MEMORY_MAX_BYTES": str((len(SMALL) + len(LARGE)) // 2),
        "BROKER_RATE_LIMIT": "100000/minute",
        "BROKER_DATABASE_CONNECT_TIMEOUT_SECONDS": "2",
        "BROKER_DATABASE_STATEMENT_TIMEOUT_SECONDS": "1",
        "BROKER_DATABASE_LOCK_TIMEOUT_SECONDS": "1",
        "BROKER_DATABASE_POOL_TIMEOUT_SECONDS": "3",
    }
    return broker


def test_a_frozen_postgresql_answers_503_under_load_and_loses_or_duplicates_nothing(
    tmp_path, inbox
):
    """The whole PostgreSQL server is stopped (SIGSTOP) for 6 s while four members send: the
    requests that need it answer 503 database-unavailable with Retry-After within seconds
    (connect and answer timeouts), none hangs; after SIGCONT the same requests are decided,
    and the inbox stores every approved transfer once."""
    postgres = PrivatePostgres().start()
    broker = _broker(postgres.url, tmp_path)
    try:
        broker.start()
        load = Load(broker.url, register(broker.url, inbox.url), transport_errors_allowed=False)
        load.run()
        assert wait_until(lambda: len(load.decided) >= SENDERS, timeout=60)
        frozen = postgres.freeze()
        try:
            time.sleep(6)
        finally:
            postgres.thaw(frozen)
        load.join()
        reposted = judge_inbox(broker.url, inbox, load)
    finally:
        broker.stop()
        postgres.stop()
    print(  # shown by pytest -rP
        f"answers retried: {dict(load.faults)}, the slowest in {max(load.waited):.1f} s; "
        f"posted again: {reposted}"
    )
    assert load.faults["urn:fedbroker:problem:database-unavailable"] > 0, load.faults


def test_a_broker_killed_mid_decision_under_load_loses_or_duplicates_nothing(tmp_path, inbox):
    """The broker is killed (SIGKILL) while four members send, twice, and started again on
    the same port each time: the requests cut off are sent again with their keys, and the
    inbox stores every approved transfer once (decisions in flight were recorded once
    or not at all; deliveries pending survive in the outbox)."""
    broker = _broker(f"sqlite:///{tmp_path / 'broker.db'}", tmp_path)
    try:
        broker.start()
        load = Load(broker.url, register(broker.url, inbox.url), transport_errors_allowed=True)
        load.run()
        for decided_before_kill in (SENDERS, 2 * SENDERS):
            assert wait_until(lambda n=decided_before_kill: len(load.decided) >= n, timeout=60)
            broker.kill()
            broker.start()
        load.join()
        reposted = judge_inbox(broker.url, inbox, load)
    finally:
        broker.stop()
    print(f"answers retried: {dict(load.faults)}; posted again: {reposted}")
    assert load.faults["no answer"] > 0, "no request was cut off by the kill"

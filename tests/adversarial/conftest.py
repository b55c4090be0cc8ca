"""A real broker for the hostile-member suite: uvicorn on 127.0.0.1, SQLite, delivery worker on.

One broker and one recording inbox serve the whole session (the suite stays fast): ``sn-hospital``
(SN) sends, ``fr-research`` (FR) receives at the :class:`~tests.servers.RecordingInbox`. Every
test looks only at what *its* transfer id delivered (``Idempotency-Key``), so tests do not see
each other's deliveries.

Nothing here imports the broker's measuring code: the broker is used through HTTP only, and the
verdict on what arrives is :mod:`tests.adversarial.judge`'s (plain pandas).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from broker.config import Settings
from broker.main import create_app
from tests.adversarial import judge
from tests.conftest import ADMIN_TOKEN, POLICIES
from tests.servers import RecordingInbox, ServerThread

SOURCE = "sn-hospital"
DESTINATION = "fr-research"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
LOOPBACK = "127.0.0.0/8"
HTTP_TIMEOUT = 60.0
PROBLEM = "application/problem+json"


def _settings(database_url: str, keys: Path, **overrides) -> Settings:
    """Settings for the test broker: loopback inboxes allowed (the inbox allow-list)."""
    return Settings(
        **overrides,
        database_url=database_url,
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        signing_key_dir=keys,
        spool_dir=keys.parent / "spool",
        inbox_allowed_networks=[LOOPBACK],
        rate_limit="100000/minute",  # the suite sends hundreds of uploads as one member
        delivery_enabled=True,
        delivery_poll_seconds=0.05,
        delivery_backoff_seconds=0.05,
    )


@dataclass
class Broker:
    """The broker as a member cloud and an administrator see it over HTTP."""

    url: str
    inbox: RecordingInbox
    keys: dict[str, str] = field(default_factory=dict)
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=HTTP_TIMEOUT))

    def register(self, member_id: str, jurisdiction: str, inbox_url: str) -> None:
        answer = self.client.post(
            f"{self.url}/v1/members",
            headers=ADMIN,
            json={
                "id": member_id,
                "name": member_id,
                "jurisdiction": jurisdiction,
                "inbox_url": inbox_url,
            },
        )
        assert answer.status_code == 201, answer.text
        self.keys[member_id] = answer.json()["api_key"]

    def post(
        self,
        data: bytes,
        filename: str = "data.csv",
        *,
        path: str = "/v1/transfers",
        content_type: str = "application/octet-stream",
        source: str = SOURCE,
        timeout: float = HTTP_TIMEOUT,
        **form,
    ) -> httpx.Response:
        """POST a multipart upload; ``destination`` and ``purpose`` default to SN -> FR research.

        Form values: ``True``/``False`` become ``"true"``/``"false"``, lists are comma-joined.
        """
        if path == "/v1/transfers":
            form.setdefault("destination", DESTINATION)
            form.setdefault("purpose", "research")
        fields = {}
        for name, value in form.items():
            if value is None:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, list | tuple):
                value = ",".join(value)
            fields[name] = str(value)
        return self.client.post(
            f"{self.url}{path}",
            headers={"Authorization": f"Bearer {self.keys[source]}"},
            files={"file": (filename, data, content_type)},
            data=fields,
            timeout=timeout,
        )

    def as_member(self, member: str, method: str, path: str, **kwargs) -> httpx.Response:
        """A call to the broker with ``member``'s key."""
        headers = {"Authorization": f"Bearer {self.keys[member]}"}
        return self.client.request(method, f"{self.url}{path}", headers=headers, **kwargs)

    def send(self, data: bytes, filename: str = "data.csv", **form) -> dict:
        """A transfer that must be *decided* (HTTP 200): its decision as a dict."""
        answer = self.post(data, filename, **form)
        assert answer.status_code == 200, (
            f"expected a decision, got HTTP {answer.status_code}: {answer.text[:2000]}"
        )
        return answer.json()

    def transfer(self, transfer_id: str) -> dict:
        answer = self.client.get(f"{self.url}/v1/transfers/{transfer_id}", headers=ADMIN)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def received_for(self, transfer_id: str) -> list[tuple[dict[str, str], bytes]]:
        return [
            (headers, body)
            for headers, body in list(self.inbox.received)
            if headers.get("idempotency-key") == transfer_id
        ]

    def delivered_for(self, transfer_id: str, timeout: float = 10) -> tuple[dict[str, str], bytes]:
        """Wait until the inbox has the POST for ``transfer_id``; its headers and body."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.received_for(transfer_id)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                state = self.transfer(transfer_id)["delivery"]
                raise AssertionError(
                    f"transfer {transfer_id} was approved but nothing reached the destination's "
                    f"inbox within {timeout} s (delivery: {state})"
                )
            time.sleep(0.02)

    def assert_not_delivered(self, answer: dict) -> None:
        """A transfer that was not approved has no outbox row and never reaches the inbox."""
        transfer_id = answer.get("id")
        if transfer_id is None:
            return
        if answer.get("dry_run"):  # stored as a preview for its sender only, never delivered
            time.sleep(0.15)
            assert self.received_for(transfer_id) == [], f"dry run {transfer_id} was delivered"
            return
        time.sleep(0.15)  # three polls of the delivery worker
        assert self.received_for(transfer_id) == [], (
            f"transfer {transfer_id} was {answer['status']!r} yet data reached the inbox"
        )
        delivery = self.transfer(transfer_id)["delivery"]
        assert delivery["status"] == "not_applicable", delivery


@contextmanager
def _running_broker(tmp: Path, **overrides) -> Iterator[Broker]:
    """A broker (temp SQLite, seed policies, delivery every 0.05 s) and fr-research's inbox."""
    inbox = RecordingInbox()
    inbox_server = ServerThread(inbox.app()).start()
    settings = _settings(f"sqlite:///{tmp}/broker.db", tmp / "signing-keys", **overrides)
    server = ServerThread(create_app(settings)).start()
    broker = Broker(server.url, inbox)
    try:
        broker.register(SOURCE, "SN", "http://127.0.0.1:9/sn-hospital/inbox")
        broker.register(DESTINATION, "FR", inbox_server.url + "/inbox")
        yield broker
    finally:
        broker.client.close()
        server.stop()
        inbox_server.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> Iterator[Broker]:
    """The broker, every upload read in memory (they are small)."""
    with _running_broker(tmp_path_factory.mktemp("adversarial")) as running:
        yield running


@pytest.fixture(scope="session")
def out_of_core_broker(tmp_path_factory) -> Iterator[Broker]:
    """The same broker with every CSV upload counted out of core by DuckDB (the path of files
    over ``BROKER_IN_MEMORY_MAX_BYTES``), still decided in the request."""
    with _running_broker(
        tmp_path_factory.mktemp("adversarial-out-of-core"), in_memory_max_bytes=0
    ) as running:
        yield running


@pytest.fixture
def send(broker):
    """``send(file_bytes, filename, **form) -> dict``: an SN -> FR research transfer."""
    return broker.send


@pytest.fixture
def delivered_for(broker):
    """``delivered_for(transfer_id, timeout=10) -> (headers, body)``."""
    return broker.delivered_for


def settle(broker: Broker, answer: dict, **judged) -> tuple[dict, bytes] | None:
    """The suite's one acceptance rule for a decided transfer.

    Not approved: nothing may reach the inbox. Approved: the bytes the destination actually
    received must satisfy the judge (``judged`` are :func:`judge.verdict`'s keyword arguments).
    Returns ``(headers, body)`` of the delivery, or None when it was not approved.
    """
    failed = sorted({f"{r['rule']}:{r['attribute']}" for r in answer["rules"] if not r["passed"]})
    print(f"decision: {answer['status']} failed={failed}")  # shown by pytest -rP
    if answer["status"] != "approved":
        broker.assert_not_delivered(answer)
        return None
    headers, body = broker.delivered_for(answer["id"])
    problems = judge.verdict(headers, body, **judged)
    assert problems == [], (
        f"the broker approved transfer {answer['id']} and delivered data the judge refuses:\n- "
        + "\n- ".join(problems)
    )
    return headers, body


def settle_response(
    broker: Broker, response: httpx.Response, **judged
) -> tuple[dict, bytes] | None:
    """Like :func:`settle`, for an upload the broker may also refuse as malformed.

    A refusal must be a clean 4xx ``application/problem+json`` (never a 500).
    """
    if response.status_code != 200:
        print(f"refused: HTTP {response.status_code} {response.text[:300]}")  # pytest -rP
        assert_clean_refusal(response)
        return None
    return settle(broker, response.json(), **judged)


def assert_clean_refusal(response: httpx.Response, statuses=(400, 413, 415, 422)) -> None:
    assert response.status_code in statuses, (
        f"expected a clean refusal {statuses}, got HTTP {response.status_code}: "
        f"{response.text[:1000]}"
    )
    assert response.headers.get("content-type", "").startswith(PROBLEM), response.headers
    body = response.json()
    assert body["status"] == response.status_code and body.get("detail"), body
    assert "Traceback" not in response.text

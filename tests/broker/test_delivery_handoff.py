"""An approved transfer's delivery handed to its own process's worker, with no claim.

The broker runs on a database of its own with its delivery worker's threads on (the other
delivery tests run the worker's passes themselves, on the test's connection), sending to a real
inbox on loopback. Each test watches what the worker's claims lease (``lease_due``), to tell a
delivery handed over from one claimed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from broker.delivery import repository
from broker.delivery.handoff import Lease
from broker.delivery.models import Delivery
from broker.main import create_app
from tests.broker.conftest import ADMIN, Federation

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


@pytest.fixture
def claimed(monkeypatch) -> list[str]:
    """Every transfer id a claim of the worker leased, as the test runs."""
    leased: list[str] = []
    lease_due = repository.lease_due

    def watched(*args, **kwargs):
        ids = lease_due(*args, **kwargs)
        leased.extend(ids)
        return ids

    monkeypatch.setattr(repository, "lease_due", watched)
    return leased


@pytest.fixture
def broker(own_database, settings, inbox):
    own = settings.model_copy(
        update={
            "database_url": own_database,
            "apply_migrations": False,
            "delivery_enabled": True,
            "delivery_concurrency": 2,
        }
    )
    with TestClient(create_app(own)) as client:
        federation = Federation(client)
        federation.add_lab(inbox.url)
        yield federation


def _approved(broker) -> str:
    answer = broker.send("sn-hospital", "patients_published.csv", destination="fr-lab", **QI)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "approved", answer.text
    return answer.json()["id"]


def _delivered(broker, transfer_id: str, seconds: float = 20.0) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = broker.client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()
        if found["delivery"]["status"] == "delivered":
            return found["delivery"]
        time.sleep(0.05)
    raise AssertionError(f"{transfer_id} not delivered in {seconds} s: {found['delivery']}")


def _row(broker, transfer_id: str) -> Delivery:
    with broker.client.app.state.sessionmaker() as session:
        return session.scalars(select(Delivery).where(Delivery.transfer_id == transfer_id)).one()


def test_an_approved_transfer_is_delivered_by_its_process_without_a_claim(broker, inbox, claimed):
    transfer_ids = [_approved(broker) for _ in range(3)]
    for transfer_id in transfer_ids:
        assert _delivered(broker, transfer_id)["attempts"] == 1
    assert sorted(h["idempotency-key"] for h, _ in inbox.received) == sorted(transfer_ids)
    assert not set(claimed) & set(transfer_ids)  # none was claimed: each was handed over


def test_a_worker_with_every_place_taken_leaves_the_row_due_for_a_claim(broker, inbox, claimed):
    worker = broker.worker
    places = [worker.reserve(), worker.reserve()]
    assert all(places) and worker.reserve() is None  # two places (delivery_concurrency)
    transfer_id = _approved(broker)
    assert _row(broker, transfer_id).lease_owner is None  # written due, not leased
    for place in places:
        worker.cancel(place)
    worker.wake()
    _delivered(broker, transfer_id)
    assert claimed == [transfer_id]
    assert len(inbox.received) == 1


def test_a_lease_its_process_never_started_runs_out_and_the_row_is_claimed_once(
    broker, inbox, claimed, monkeypatch
):
    """A process that stops between the decision's commit and the start of its delivery
    leaves a leased row: it is delivered once, by a claim, when the lease has run out."""
    worker = broker.worker
    gone = Lease("a-process-that-stopped", datetime.now(UTC) + timedelta(seconds=1), 0.0)
    monkeypatch.setattr(worker, "reserve", lambda: gone)
    monkeypatch.setattr(worker, "hand", lambda lease, transfer_id: None)
    monkeypatch.setattr(worker, "cancel", lambda lease: None)
    transfer_id = _approved(broker)
    assert _row(broker, transfer_id).lease_owner == "a-process-that-stopped"
    worker.wake()
    time.sleep(0.3)
    assert claimed == [] and inbox.received == []  # still leased: not due for anyone
    time.sleep(1.0)
    worker.wake()
    _delivered(broker, transfer_id)
    assert claimed == [transfer_id]
    assert len(inbox.received) == 1


def test_a_handed_over_delivery_checks_the_inbox_url_again_and_is_signed_anew(broker, inbox):
    """Handed over, a delivery is attempted as a claimed one is: its inbox URL checked again at
    the attempt (here refused since registration), nothing sent there; then, allowed again and
    redelivered, signed for its recipient."""
    worker = broker.worker
    allowed = worker.settings
    worker.settings = allowed.model_copy(update={"inbox_allowed_networks": []})
    transfer_id = _approved(broker)
    deadline = time.monotonic() + 20
    while (state := _row(broker, transfer_id)).status != "failed":
        assert time.monotonic() < deadline, state.status
        time.sleep(0.05)
    assert "inbox URL is refused" in state.last_error and inbox.received == []
    worker.settings = allowed
    again = broker.client.post(f"/v1/transfers/{transfer_id}/redeliver", headers=ADMIN)
    assert again.status_code == 200, again.text
    _delivered(broker, transfer_id)
    [(headers, _)] = inbox.received
    assert headers["x-fedbroker-recipient"] == "fr-lab" and "signature" in headers

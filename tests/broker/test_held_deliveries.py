"""Deliveries to a member that is down are held: not attempted, their attempts not spent, and
sent once its health check sees it up again. Real inbox servers on 127.0.0.1; the tests run the
delivery worker's and the health checker's passes themselves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text, update

from broker.delivery import service
from broker.delivery.models import Delivery
from broker.main import create_app
from tests.broker.conftest import ADMIN, Federation, bearer, drain
from tests.broker.test_aggregate_releases import release
from tests.broker.test_delivery import QI, approved, delivery


@pytest.fixture
def broker(connection, settings, inbox):
    settings = settings.model_copy(
        update={
            "delivery_backoff_seconds": 0.01,
            "delivery_max_attempts": 3,
            "health_check_down_after": 1,
        }
    )
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        federation.add_lab(inbox.url)
        federation.checker = client.app.state.health_checker

        def check():
            """One pass of the health checker, every check due."""
            connection.execute(text("UPDATE member_health SET next_check_at = NULL"))
            federation.checker.run_once()

        def due(transfer_id=None, at=datetime(2000, 1, 1, tzinfo=UTC)):
            """Make pending deliveries (or one) due at ``at`` (time is not the subject)."""
            query = update(Delivery).values(next_attempt_at=at)
            if transfer_id is not None:
                query = query.where(Delivery.transfer_id == transfer_id)
            connection.execute(query)

        federation.check, federation.due, federation.connection = check, due, connection
        yield federation


def test_a_delivery_to_a_member_that_is_down_waits_then_goes_out_once_it_is_up(broker, inbox):
    inbox.readiness = 503
    broker.check()
    transfer_id = approved(broker)
    drain(broker, rounds=5)
    assert inbox.received == []
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"], state["last_error"]) == ("held", 0, None)
    assert state["held_reason"].startswith("fr-lab is down since ")
    assert "without spending attempts" in state["held_reason"]
    # the source sees it held, and so does the destination
    for key in ("sn-hospital", "fr-lab"):
        seen = broker.client.get(f"/v1/transfers/{transfer_id}", headers=bearer(broker.keys[key]))
        assert seen.json()["delivery"]["status"] == "held"
    inbox.readiness = 200
    broker.check()
    drain(broker)
    assert len(inbox.received) == 1
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"], state["held_reason"]) == ("delivered", 1, None)


def test_failures_while_the_member_is_up_spend_the_budget_as_before(broker, inbox):
    inbox.answers = [503, 503, 503]
    broker.check()
    transfer_id = approved(broker)
    drain(broker)
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"], len(inbox.received)) == ("failed", 3, 3)


def test_a_held_delivery_keeps_its_retry_budget_and_goes_out_at_once_when_up(broker, inbox):
    """Two attempts of three spent while the member is up; none while it is down, however
    many passes; once up, the backoff it was waiting out is over."""
    inbox.answers = [503, 503]
    broker.check()
    transfer_id = approved(broker)
    for _ in range(2):
        broker.due()
        broker.worker.run_once()
    assert delivery(broker, transfer_id)["attempts"] == 2
    inbox.readiness = 503
    broker.check()
    for _ in range(5):
        broker.due()
        broker.worker.run_once()
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"], len(inbox.received)) == ("held", 2, 2)
    broker.due(transfer_id, at=datetime.now(UTC) + timedelta(hours=1))  # a long backoff left
    inbox.readiness = 200
    broker.check()  # up again: due now
    broker.worker.run_once()
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"], len(inbox.received)) == ("delivered", 3, 3)


def test_a_delivery_claimed_before_its_member_was_marked_down_is_given_back(broker, inbox):
    worker = broker.worker
    transfer_id = approved(broker)
    [leased] = service.claim(worker.factory, worker.owner, worker.settings)
    assert leased.transfer_id == transfer_id
    inbox.readiness = 503
    broker.check()
    status = service.deliver(
        worker.factory, worker.client, worker.owner, worker.settings, worker.keyring, transfer_id
    )
    assert status == "held"
    assert inbox.received == []
    assert service.claim(worker.factory, worker.owner, worker.settings) == []  # never due
    row = broker.connection.execute(
        select(Delivery.attempts, Delivery.lease_owner).where(Delivery.transfer_id == transfer_id)
    )
    assert tuple(row.one()) == (0, None)  # not attempted, lease released


def test_only_deliveries_to_the_member_that_is_down_are_held(broker, inbox):
    """Another destination's deliveries go out meanwhile."""
    broker.client.post(
        "/v1/members",
        headers=ADMIN,
        json={"id": "fr-other", "name": "other", "jurisdiction": "FR", "inbox_url": inbox.url},
    )
    broker.check()
    broker.connection.execute(  # fr-lab alone is down
        text("UPDATE member_health SET state = 'down' WHERE member_id = 'fr-lab'")
    )
    held = approved(broker)
    sent = approved(broker, destination="fr-other")
    drain(broker)
    assert delivery(broker, held)["status"] == "held"
    assert delivery(broker, sent)["status"] == "delivered"
    assert [h["idempotency-key"] for h, _ in inbox.received] == [sent]


def test_the_answer_to_a_transfer_or_release_to_a_member_that_is_down_says_held(broker, inbox):
    inbox.readiness = 503
    broker.check()
    microdata = broker.send("sn-hospital", "patients_published.csv", destination="fr-lab", **QI)
    released = release(broker, to="fr-lab")
    for answer in (microdata, released):
        assert answer.json()["status"] == "approved", answer.text
        assert answer.json()["delivery"]["status"] == "held"
        assert answer.json()["delivery"]["held_reason"].startswith("fr-lab is down since ")

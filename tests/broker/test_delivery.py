"""Delivery of approved transfers to real inbox servers: success, retries, final failures."""

import base64
import hashlib
import io

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from broker.main import create_app
from broker.wire.signing import content_digest
from tests import rfc9421
from tests.broker.conftest import ADMIN, Federation, bearer, drain
from tests.conftest import FIXTURES
from tests.servers import RecordingInbox, ServerThread, free_port

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


@pytest.fixture
def broker(connection, settings, inbox):
    settings = settings.model_copy(
        update={"delivery_backoff_seconds": 0.01, "delivery_max_attempts": 3}
    )
    app = create_app(settings, bind=connection)
    with TestClient(app) as client:
        federation = Federation(client)
        federation.add_lab(inbox.url)
        yield federation


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def approved(broker, destination="fr-lab") -> str:
    answer = broker.send("sn-hospital", "patients_published.csv", destination=destination, **QI)
    assert answer.json()["status"] == "approved", answer.text
    return answer.json()["id"]


def delivery(broker, transfer_id):
    return broker.client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()["delivery"]


def test_approved_transfer_arrives_once_as_the_measured_table_and_signed(broker, inbox):
    transfer_id = approved(broker)
    drain(broker)
    assert len(inbox.received) == 1
    headers, body = inbox.received[0]
    # Written fresh by the broker from the table it measured: the same rows, in another order.
    sent = pd.read_csv(FIXTURES / "patients_published.csv", dtype=str, keep_default_na=False)
    arrived = pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False)
    assert list(arrived.columns) == list(sent.columns)
    assert sorted(arrived.itertuples(index=False)) == sorted(sent.itertuples(index=False))
    assert headers["content-type"] == "text/csv"
    assert headers["x-fedbroker-filename"] == f"transfer-{transfer_id}.csv"
    assert headers["idempotency-key"] == transfer_id
    assert headers["x-fedbroker-source"] == "sn-hospital"
    assert headers["content-digest"] == content_digest(hashlib.sha256(body).hexdigest())
    assert headers["x-fedbroker-recipient"] == "fr-lab"
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"]) == ("delivered", 1)


def test_signature_verifies_with_the_brokers_published_ed25519_key(broker, inbox):
    """Nothing in the database signs: the key set is public, the private key is in a file. The
    delivery is checked by the independent RFC 9421 verifier (tests/rfc9421.py), not by ours."""
    broker.client.post(
        "/v1/members",
        headers=ADMIN,
        json={"id": "ng-lab", "name": "NG lab", "jurisdiction": "NG", "inbox_url": inbox.url},
    )
    transfer_id = broker.send(
        "sn-hospital", "patients_published.csv", destination="ng-lab", purpose="public_health", **QI
    ).json()["id"]
    drain(broker)
    headers, body = inbox.received[0]
    jwks = broker.client.get("/.well-known/fedbroker-keys.json").json()
    [jwk] = jwks["keys"]
    assert (jwk["kty"], jwk["crv"], jwk["alg"]) == ("OKP", "Ed25519", "EdDSA")
    checked = rfc9421.verify(
        "POST", inbox.url, list(headers.items()), jwks, tag="fedbroker-delivery"
    )
    assert checked.params["keyid"] == jwk["kid"] == rfc9421.thumbprint(jwk)
    assert checked.body_sha256 == hashlib.sha256(body).digest()
    assert checked.fields["x-fedbroker-recipient"] == "ng-lab"
    assert headers["x-fedbroker-transfer"] == transfer_id
    assert headers["content-type"] == "text/csv"  # from the parsed format, not the sender
    assert "x-fedbroker-signature" not in headers  # the scheme before RFC 9421 is gone
    with pytest.raises(rfc9421.Refused):  # another member's inbox URL: another signature base
        rfc9421.verify(
            "POST", inbox.url + "x", list(headers.items()), jwks, tag="fedbroker-delivery"
        )


def test_non_ascii_purpose_is_percent_encoded_and_the_file_named_by_the_broker(broker, inbox):
    record = broker.client.get("/v1/policies/SN", headers=ADMIN).json()["record"]
    record["allowed_purposes"].append("santé publique")
    broker.client.put("/v1/policies/SN", headers={**ADMIN, "If-Match": '"1"'}, json=record)
    broker.client.post(
        "/v1/members",
        headers=ADMIN,
        json={"id": "sn-lab2", "name": "lab", "jurisdiction": "SN", "inbox_url": inbox.url},
    )
    answer = broker.send(
        "sn-hospital",
        "patients_published.csv",
        filename="données.csv",
        destination="sn-lab2",
        purpose="santé publique",
        **QI,
    )
    assert answer.json()["status"] == "approved", answer.text
    drain(broker)
    [(headers, _)] = inbox.received
    assert headers["x-fedbroker-purpose"] == "sant%C3%A9%20publique"
    # The sender's file name is free text: it never crosses, the broker names the file.
    assert headers["x-fedbroker-filename"] == f"transfer-{answer.json()['id']}.csv"
    assert delivery(broker, answer.json()["id"])["status"] == "delivered"


def test_an_inbox_url_that_cannot_be_used_fails_with_the_reason(broker, inbox, connection):
    from sqlalchemy import text

    broken = approved(broker)
    healthy = approved(broker)
    connection.execute(text("UPDATE members SET inbox_url = 'not a url' WHERE id = 'fr-lab'"))
    drain(broker)
    for transfer_id in (broken, healthy):  # each settled on its own: nothing stalls the outbox
        state = delivery(broker, transfer_id)
        # Refused before any connection, and not retried: such a URL does not mend itself.
        assert (state["status"], state["attempts"]) == ("failed", 1)
        assert "inbox URL is refused" in state["last_error"]
    assert inbox.received == []


def test_server_errors_are_retried_with_the_same_idempotency_key(broker, inbox):
    inbox.answers = [503, 500]
    transfer_id = approved(broker)
    drain(broker)
    assert [h["idempotency-key"] for h, _ in inbox.received] == [transfer_id] * 3
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"]) == ("delivered", 3)


def test_retries_stop_at_the_bound_and_fail_with_the_reason(broker, inbox):
    inbox.answers = [500, 429, 502, 500]
    transfer_id = approved(broker)
    drain(broker)
    assert len(inbox.received) == 3  # delivery_max_attempts
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"]) == ("failed", 3)
    assert "HTTP 502" in state["last_error"]


def test_a_refused_signature_is_retried(broker, inbox):
    # A member that has not pinned a key the broker just rotated in answers 401 until it does.
    inbox.answers = [401]
    transfer_id = approved(broker)
    drain(broker)
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"]) == ("delivered", 2)


def test_client_error_is_final(broker, inbox):
    inbox.answers = [400]
    transfer_id = approved(broker)
    drain(broker)
    assert len(inbox.received) == 1
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"]) == ("failed", 1)
    assert state["last_error"].startswith("HTTP 400")
    actions = [
        e["action"] for e in broker.client.get("/v1/audit?limit=500", headers=ADMIN).json()["items"]
    ]
    assert actions[-1] == "transfer.failed"


def test_destination_down_then_up(broker, inbox):
    port = free_port()
    broker.client.post(
        "/v1/members",
        headers=ADMIN,
        json={
            "id": "fr-late",
            "name": "late",
            "jurisdiction": "FR",
            "inbox_url": f"http://127.0.0.1:{port}/inbox",
        },
    )
    transfer_id = approved(broker, "fr-late")
    broker.worker.run_once()
    state = delivery(broker, transfer_id)
    assert (state["status"], state["attempts"]) == ("pending", 1)
    assert "could not reach" in state["last_error"]
    late = RecordingInbox()
    server = ServerThread(late.app(), port=port).start()
    try:
        drain(broker)
    finally:
        server.stop()
    assert len(late.received) == 1
    assert delivery(broker, transfer_id)["status"] == "delivered"


def test_payload_is_deleted_once_terminal(broker, inbox, connection):
    from sqlalchemy import text

    transfer_id = approved(broker)
    drain(broker)
    payload = connection.execute(
        text("SELECT payload FROM deliveries WHERE transfer_id = :t"), {"t": transfer_id}
    ).scalar_one()
    assert payload is None
    body = broker.client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()
    assert len(body["dataset"]["sha256"]) == 64


def test_rejected_and_dry_run_transfers_are_never_delivered(broker, inbox):
    broker.send("sn-hospital", "patients_original.csv", destination="fr-lab", **QI)
    broker.send("sn-hospital", "patients_published.csv", destination="fr-lab", dry_run="true", **QI)
    drain(broker, rounds=3)
    assert inbox.received == []


def test_suspended_destination_gets_nothing(broker, inbox):
    transfer_id = approved(broker)
    broker.client.post("/v1/members/fr-lab/suspend", headers=ADMIN)
    drain(broker, rounds=3)
    assert inbox.received == []
    assert delivery(broker, transfer_id)["status"] == "failed"


def test_member_view_shows_delivery(broker, inbox):
    transfer_id = approved(broker)
    drain(broker)
    mine = broker.client.get(
        f"/v1/transfers/{transfer_id}", headers=bearer(broker.keys["sn-hospital"])
    ).json()
    assert mine["delivery"]["status"] == "delivered"
    assert mine["delivery"]["delivered_at"] is not None


def test_auto_anonymized_transfer_arrives_anonymized_never_original(broker, inbox):
    answer = broker.send(
        "sn-hospital", "patients_original.csv", destination="fr-lab", anonymize="auto", **QI
    ).json()
    assert answer["status"] == "approved", answer
    drain(broker)
    [(headers, body)] = inbox.received
    original = (FIXTURES / "patients_original.csv").read_bytes()
    assert body != original
    assert b"Khady" not in body and b"25580917" not in body
    lines = body.decode().splitlines()
    assert lines[0] == "Age,Gender,Disease"
    assert len(lines) == 10  # every row, in an order of its own (see the service)
    assert headers["x-fedbroker-anonymized"] == "true"
    assert headers["content-digest"] == content_digest(answer["dataset"]["delivered_sha256"])
    assert headers["x-fedbroker-filename"] == f"transfer-{answer['id']}.anonymized.csv"


def test_an_inbox_refused_since_registration_fails_with_the_reason(broker, inbox):
    """The check runs again at every attempt: a name can resolve elsewhere, settings change."""
    transfer_id = approved(broker)
    broker.worker.settings = broker.worker.settings.model_copy(
        update={"inbox_allowed_networks": []}
    )
    drain(broker)
    state = delivery(broker, transfer_id)
    assert state["status"] == "failed"
    assert "inbox URL is refused" in state["last_error"] and "loopback" in state["last_error"]
    assert inbox.received == []


def test_redirects_are_never_followed(broker, inbox):
    inbox.answers = [307]
    transfer_id = approved(broker)
    drain(broker)
    assert len(inbox.received) == 1
    assert delivery(broker, transfer_id)["status"] != "delivered"


def test_a_failed_delivery_is_redelivered_by_its_source_and_audited(broker, inbox):
    inbox.answers = [400]  # refused for good at first
    transfer_id = approved(broker)
    drain(broker)
    assert delivery(broker, transfer_id)["status"] == "failed"
    source = bearer(broker.keys["sn-hospital"])
    other = bearer(broker.keys["ng-health"])
    assert (
        broker.client.post(f"/v1/transfers/{transfer_id}/redeliver", headers=other).status_code
        == 404
    )
    answer = broker.client.post(f"/v1/transfers/{transfer_id}/redeliver", headers=source)
    assert answer.status_code == 200, answer.text
    assert answer.json()["delivery"]["status"] == "pending"
    drain(broker)
    assert delivery(broker, transfer_id)["status"] == "delivered"
    assert len(inbox.received) == 2 and inbox.received[0][1] == inbox.received[1][1]
    again = broker.client.post(f"/v1/transfers/{transfer_id}/redeliver", headers=source)
    assert again.status_code == 409 and "delivered" in again.json()["detail"]
    actions = [e["action"] for e in broker.client.get("/v1/audit", headers=ADMIN).json()["items"]]
    assert "transfer.redelivery_requested" in actions


def test_a_failure_older_than_the_retention_cannot_be_redelivered(broker, inbox):
    inbox.answers = [400]
    transfer_id = approved(broker)
    drain(broker)
    broker.worker.settings = broker.worker.settings.model_copy(
        update={"delivery_failed_retention_seconds": 0}
    )
    drain(broker, rounds=1)  # the worker forgets the payload
    answer = broker.client.post(f"/v1/transfers/{transfer_id}/redeliver", headers=ADMIN)
    assert answer.status_code == 409 and "no longer held" in answer.json()["detail"]


def test_a_first_attempt_reads_nothing_the_claim_did_not(broker, inbox, connection):
    """The claim leases a delivery and reads it as its attempt would, in one transaction; the
    attempt then only signs and POSTs, and the outcome is recorded in a second one."""
    from sqlalchemy import event

    from broker.delivery import service

    transfer_id = approved(broker)
    worker = broker.worker
    statements = []
    event.listen(connection, "before_cursor_execute", lambda *args: statements.append(args[2]))

    def sent() -> list[str]:  # the test's own savepoints aside
        return [s for s in statements if not s.startswith(("SAVEPOINT", "RELEASE"))]

    [leased] = service.claim(worker.factory, worker.owner, worker.settings)
    claimed = len(sent())
    assert leased.transfer_id == transfer_id and isinstance(leased.found, service.Ready)
    tried = service.attempt(
        worker.factory,
        worker.client,
        worker.owner,
        worker.settings,
        worker.keyring,
        transfer_id,
        leased.found,
    )
    assert len(sent()) == claimed  # no statement between the claim and the POST
    assert tried.outcome.delivered and len(inbox.received) == 1
    assert service.settle(worker.factory, worker.owner, worker.settings, tried) == "delivered"
    assert claimed == 2  # the lease (one UPDATE) and the read (one SELECT, joined)
    assert delivery(broker, transfer_id)["status"] == "delivered"

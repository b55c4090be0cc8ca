"""POST /transfers through a real broker: its decision, or its problem, as it answered."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.member_cloud.conftest import FIXTURES, closed_port, free_socket, unique_id

CSV = (FIXTURES / "patients_published.csv").read_bytes()


def register(admin, member_id, jurisdiction, port=9):
    answer = admin.post(
        "/v1/members",
        json={
            "id": member_id,
            "name": member_id,
            "jurisdiction": jurisdiction,
            "inbox_url": f"http://127.0.0.1:{port}/inbox",
        },
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["api_key"]


@pytest.fixture
def sender(broker, admin, members):
    """An SN member with the patients dataset, and an FR member id it may send to."""
    source, destination = unique_id("sn"), unique_id("fr")
    key = register(admin, source, "SN")
    register(admin, destination, "FR")
    server = members.start(source, "SN", api_key=key, broker_url=broker.url)
    client = httpx.Client(base_url=server.url, timeout=30)
    answer = client.post("/datasets", files={"file": ("patients.csv", CSV, "text/csv")})
    assert answer.status_code == 201, answer.text
    yield client, source, destination
    client.close()


def ask(client, destination, **body):
    body = {"dataset": "patients.csv", "destination": destination, "purpose": "research"} | body
    return client.post("/transfers", json=body)


def test_the_brokers_decision_is_answered_as_is(sender, broker, admin):
    client, source, destination = sender
    answer = ask(client, destination, quasi_identifiers=["Age", "Gender"], sensitive=["Disease"])

    assert answer.status_code == 200, answer.text
    decision = answer.json()
    assert decision["status"] == "approved"
    assert decision["source"] == source
    assert decision["destination"] == destination
    assert decision["quasi_identifiers"] == ["Age", "Gender"]
    assert decision["sensitive"] == ["Disease"]
    assert decision["dataset"]["filename"] == "patients.csv"
    # the very record the broker keeps
    recorded = admin.get(f"/v1/transfers/{decision['id']}").json()
    assert recorded == decision


def test_a_dry_run_and_an_idempotency_key_reach_the_broker(sender):
    client, _, destination = sender
    dry = ask(client, destination, quasi_identifiers=["Age", "Gender"], dry_run=True)
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True
    assert dry.json()["id"] is not None  # the dry run's, its data fetchable a while

    first = ask(client, destination, quasi_identifiers=["Age", "Gender"], idempotency_key="k-1")
    again = ask(client, destination, quasi_identifiers=["Age", "Gender"], idempotency_key="k-1")
    assert again.json()["id"] == first.json()["id"]

    conflict = ask(client, destination, purpose="marketing", idempotency_key="k-1")
    assert conflict.status_code == 409
    assert conflict.json()["type"] == "urn:fedbroker:problem:idempotency-key-reused"


def test_a_problem_from_the_broker_is_passed_through(sender):
    client, _, destination = sender
    answer = ask(client, destination, quasi_identifiers=["Age", "zip"])

    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["type"] == "urn:fedbroker:problem:unknown-column"
    assert "zip" in problem["detail"]
    assert problem["instance"] == "/v1/transfers"  # the broker's own problem, untouched


def test_an_unknown_local_dataset_is_404_and_nothing_is_sent(sender, admin):
    client, source, destination = sender
    answer = ask(client, destination, dataset="missing.csv")

    assert answer.status_code == 404
    assert answer.json()["type"] == "urn:fedbroker:problem:not-found"
    sent = [t for t in admin.get("/v1/transfers").json()["items"] if t["source"] == source]
    assert sent == []


def test_a_request_with_unknown_fields_is_422(sender):
    client, _, destination = sender
    answer = ask(client, destination, status="approved")
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"


def test_a_broker_that_does_not_answer_is_502(members):
    port = closed_port()
    server = members.start(unique_id("sn"), api_key="k" * 20, broker_url=f"http://127.0.0.1:{port}")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        client.post("/datasets", files={"file": ("patients.csv", CSV, "text/csv")})
        answer = ask(client, "fr-research")

    assert answer.status_code == 502
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["type"] == "urn:fedbroker:problem:broker-unreachable"
    assert f"127.0.0.1:{port}" in problem["detail"]


def test_without_a_key_one_is_made_sent_and_answered(sender, admin):
    client, source, destination = sender
    first = ask(client, destination, quasi_identifiers=["Age", "Gender"])

    assert first.status_code == 200, first.text
    key = first.headers["idempotency-key"]
    assert str(uuid.UUID(key)) == key  # a fresh UUID
    # the broker got that key: the same request with it replays the decision, no new transfer
    again = ask(client, destination, quasi_identifiers=["Age", "Gender"], idempotency_key=key)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["idempotency-key"] == key
    sent = [t for t in admin.get("/v1/transfers").json()["items"] if t["source"] == source]
    assert [t["id"] for t in sent] == [first.json()["id"]]

    other = ask(client, destination, quasi_identifiers=["Age", "Gender"])
    assert other.headers["idempotency-key"] != key
    assert other.json()["id"] != first.json()["id"]


def test_the_callers_key_is_answered_with_a_problem_too(sender):
    client, _, destination = sender
    answer = ask(client, destination, quasi_identifiers=["Age", "zip"], idempotency_key="k-zip")
    assert answer.status_code == 422
    assert answer.headers["idempotency-key"] == "k-zip"


def test_a_dry_run_gets_no_key(sender):
    client, _, destination = sender
    answer = ask(client, destination, quasi_identifiers=["Age", "Gender"], dry_run=True)
    assert answer.status_code == 200, answer.text
    assert "idempotency-key" not in answer.headers


@pytest.fixture
def silent_broker():
    """A port that accepts connections and never answers: every request times out."""
    with free_socket() as sock:
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def unreachable(members, request):
    """A member cloud whose broker does not answer (param: 'refused' or 'silent')."""
    if request.param == "silent":
        broker_url = request.getfixturevalue("silent_broker")
    else:
        broker_url = f"http://127.0.0.1:{closed_port()}"
    server = members.start(
        unique_id("sn"), api_key="k" * 20, broker_url=broker_url, broker_timeout_seconds=0.5
    )
    # The member's own timeout (0.5 s) is what is tested; this one only waits for its answer,
    # which a machine busy with a whole test suite once took over 10 s to give.
    with httpx.Client(base_url=server.url, timeout=30) as client:
        client.post("/datasets", files={"file": ("patients.csv", CSV, "text/csv")})
        yield client


@pytest.mark.parametrize("unreachable", ["refused", "silent"], indirect=True)
def test_a_502_names_the_key_to_send_again(unreachable):
    answer = ask(unreachable, "fr-research")

    assert answer.status_code == 502
    assert answer.json()["type"] == "urn:fedbroker:problem:broker-unreachable"
    key = answer.headers["idempotency-key"]
    assert f"idempotency_key '{key}'" in answer.json()["detail"]
    assert "the same idempotency_key" not in answer.json()["detail"]

    mine = ask(unreachable, "fr-research", idempotency_key="my-key-1")
    assert mine.headers["idempotency-key"] == "my-key-1"
    assert "idempotency_key 'my-key-1'" in mine.json()["detail"]


@pytest.mark.parametrize("unreachable", ["silent"], indirect=True)
def test_a_dry_run_502_claims_no_key(unreachable):
    answer = ask(unreachable, "fr-research", dry_run=True)

    assert answer.status_code == 502
    assert "did not answer in time" in answer.json()["detail"]
    assert "idempotency_key" not in answer.json()["detail"]
    assert "idempotency-key" not in answer.headers

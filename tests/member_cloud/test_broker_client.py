"""The typed broker client: requests it builds, answers it returns, errors it raises."""

from __future__ import annotations

import json

import httpx
import pytest

from broker.main import create_app as create_broker
from member_cloud.broker_client import (
    BrokerAnsweredError,
    BrokerClient,
    BrokerClientError,
    BrokerUnavailable,
)
from tests.member_cloud.conftest import (
    ADMIN_TOKEN,
    FIXTURES,
    LiveServer,
    broker_settings,
    closed_port,
    free_socket,
    unique_id,
)

CSV = (FIXTURES / "patients_published.csv").read_bytes()


def mock(handler) -> BrokerClient:
    return BrokerClient("http://broker.test/", "secret", transport=httpx.MockTransport(handler))


def test_a_problem_answer_becomes_a_broker_error_with_its_fields():
    problem = {
        "type": "urn:fedbroker:problem:unknown-column",
        "title": "Unknown column",
        "status": 422,
        "detail": "Quasi-identifier 'zip' is not a column of the uploaded dataset",
        "instance": "/v1/transfers",
        "errors": [{"field": "zip", "reason": "unknown"}],
    }

    def handler(request):
        return httpx.Response(
            422, content=json.dumps(problem), headers={"Content-Type": "application/problem+json"}
        )

    with mock(handler) as broker, pytest.raises(BrokerAnsweredError) as caught:
        broker.send_transfer(b"a\n1\n", "a.csv", "fr-research", "research")

    error = caught.value
    assert isinstance(error, BrokerClientError)
    assert error.status == 422
    assert error.problem == problem
    assert error.type == problem["type"]
    assert error.title == "Unknown column"
    assert error.detail == problem["detail"]
    assert error.instance == "/v1/transfers"
    assert error.errors == problem["errors"]
    assert str(error) == f"422 Unknown column: {problem['detail']}"


def test_an_error_without_json_still_carries_a_problem():
    def handler(request):
        return httpx.Response(502, text="<html>Bad gateway</html>")

    with mock(handler) as broker, pytest.raises(BrokerAnsweredError) as caught:
        broker.list_members()

    assert caught.value.status == 502
    assert caught.value.problem["status"] == 502
    assert caught.value.title == "Bad Gateway"
    assert "Bad gateway" in caught.value.detail


def test_a_connection_error_is_broker_unavailable():
    url = f"http://127.0.0.1:{closed_port()}"
    with BrokerClient(url, "secret") as broker, pytest.raises(BrokerUnavailable) as caught:
        broker.list_members()

    assert isinstance(caught.value, BrokerClientError)
    assert not isinstance(caught.value, BrokerAnsweredError)
    assert caught.value.base_url == url
    assert caught.value.timed_out is False
    assert url in str(caught.value)


def test_a_timeout_is_broker_unavailable_and_says_so():
    def handler(request):
        raise httpx.ReadTimeout("slow", request=request)

    with mock(handler) as broker, pytest.raises(BrokerUnavailable) as caught:
        broker.get_transfer("t-1")
    assert caught.value.timed_out is True


def test_send_transfer_builds_the_brokers_multipart_request():
    seen = {}

    def handler(request):
        seen["request"] = request
        seen["body"] = request.read()
        return httpx.Response(200, json={"status": "approved"})

    with mock(handler) as broker:
        answer = broker.send_transfer(
            CSV,
            "patients.csv",
            "fr-research",
            "research",
            quasi_identifiers=["Age", "Gender"],
            sensitive=["Disease"],
            anonymize="auto",
            dry_run=True,
            idempotency_key="key-1",
            content_type="text/csv",
        )

    request = seen["request"]
    assert answer == {"status": "approved"}
    assert request.method == "POST"
    assert str(request.url) == "http://broker.test/v1/transfers"
    assert request.headers["Authorization"] == "Bearer secret"
    assert request.headers["Idempotency-Key"] == "key-1"
    body = seen["body"]
    for field, value in [
        ("destination", "fr-research"),
        ("purpose", "research"),
        ("quasi_identifiers", "Age,Gender"),
        ("sensitive", "Disease"),
        ("anonymize", "auto"),
        ("dry_run", "true"),
    ]:
        assert f'name="{field}"\r\n\r\n{value}\r\n'.encode() in body
    assert b'name="file"; filename="patients.csv"\r\nContent-Type: text/csv' in body
    assert CSV in body


def test_ids_are_quoted_into_one_path_segment():
    paths = []

    def handler(request):
        paths.append(request.url.raw_path)
        return httpx.Response(200, json={})

    with mock(handler) as broker:
        broker.get_transfer("../v1/members")
        broker.get_policy("SN", version=2)
    assert paths == [b"/v1/transfers/..%2Fv1%2Fmembers", b"/v1/policies/SN/versions/2"]


def test_the_typed_methods_against_a_real_broker(broker):
    source, destination = unique_id("sn"), unique_id("fr")
    with BrokerClient(broker.url, ADMIN_TOKEN) as admin:
        created = admin.register_member(source, "Source", "SN", "http://127.0.0.1:9/inbox")
        admin.register_member(destination, "Destination", "FR", "http://127.0.0.1:9/inbox")
        with pytest.raises(BrokerAnsweredError) as again:
            admin.register_member(source, "Source", "SN", "http://127.0.0.1:9/inbox")
        assert again.value.status == 409
    assert created["id"] == source
    assert created["api_key"]

    with BrokerClient(broker.url, created["api_key"]) as member:
        ids = {m["id"] for m in member.list_members()}
        assert {source, destination} <= ids
        assert member.get_member(destination)["jurisdiction"] == "FR"
        assert member.get_policy("SN")["jurisdiction"] == "SN"
        assert "SN" in {p["jurisdiction"] for p in member.list_policies()}

        decision = member.send_transfer(
            CSV,
            "patients.csv",
            destination,
            "research",
            quasi_identifiers=["Age", "Gender"],
            sensitive=["Disease"],
        )
        assert decision["status"] == "approved"
        assert member.get_transfer(decision["id"])["id"] == decision["id"]
        page = member.list_transfers(status="approved", limit=5)
        assert [t["id"] for t in page["items"]] == [decision["id"]]

        report = member.analyze(CSV, "patients.csv", quasi_identifiers=["Age", "Gender"])
        assert report["rows"] == 9

        with pytest.raises(BrokerAnsweredError) as missing:
            member.get_transfer("00000000-0000-0000-0000-000000000000")
        assert missing.value.status == 404

    with (
        BrokerClient(broker.url, "not-a-key") as stranger,
        pytest.raises(BrokerAnsweredError) as denied,
    ):
        stranger.list_members()
    assert denied.value.status == 401
    assert denied.value.type == "urn:fedbroker:problem:not-authenticated"


def test_send_transfer_waits_for_a_decision_made_in_the_background(tmp_path):
    """Every upload goes to a job here: the client polls the Location and returns the decision,
    or raises the problem of a job that failed, as a synchronous answer would."""
    settings = broker_settings(tmp_path, decide_in_background_above_bytes=0, job_poll_seconds=0.05)
    server = LiveServer(create_broker(settings), free_socket()).start()
    try:
        with BrokerClient(server.url, ADMIN_TOKEN) as admin:
            key = admin.register_member("sn", "Source", "SN", "http://127.0.0.1:9/inbox")
            admin.register_member("fr", "Destination", "FR", "http://127.0.0.1:9/inbox")
        with BrokerClient(server.url, key["api_key"]) as member:
            decision = member.send_transfer(
                CSV, "patients.csv", "fr", "research", ["Age", "Gender"], ["Disease"]
            )
            assert decision["status"] == "approved"
            assert member.get_transfer(decision["id"])["report"] == decision["report"]
            with pytest.raises(BrokerAnsweredError) as refused:
                member.send_transfer(b"Age\n30,F\n", "bad.csv", "fr", "research", ["Age"])
            assert refused.value.status == 422 and refused.value.type.endswith("invalid-dataset")
    finally:
        server.stop()


def test_the_client_rotates_a_key_and_an_admin_revokes(broker, admin):
    from member_cloud.broker_client import BrokerAnsweredError, BrokerClient

    member_id = unique_id("sn-keys")
    created = admin.post(
        "/v1/members",
        json={
            "id": member_id,
            "name": "n",
            "jurisdiction": "SN",
            "inbox_url": "http://127.0.0.1:9/inbox",
        },
    ).json()
    with BrokerClient(broker.url, created["api_key"]) as client:
        rotated = client.rotate_api_key(member_id)
    assert rotated["api_key"].startswith("fbk_") and rotated["previous_key_valid_until"]
    with BrokerClient(broker.url, ADMIN_TOKEN) as as_admin:
        assert as_admin.revoke_api_keys(member_id)["id"] == member_id
    with (
        BrokerClient(broker.url, rotated["api_key"]) as client,
        pytest.raises(BrokerAnsweredError) as error,
    ):
        client.get_member(member_id)
    assert error.value.status == 401

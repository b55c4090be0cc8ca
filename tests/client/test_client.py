"""The client: requests it builds, problems it raises, the retry, idempotency and Location
rules, against scripted servers and a real broker on 127.0.0.1, sync and async."""

from __future__ import annotations

import asyncio
import io
import json

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from broker.main import create_app as create_broker
from fedbroker.client import (
    AsyncClient,
    BrokerAnsweredError,
    BrokerClientError,
    BrokerUnavailable,
    Client,
    Conflict,
    NotFound,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    Unprocessable,
)
from fedbroker.client._core import retry_after
from fedbroker.client.models import MemberCreated, TransferRead, TransferStatus
from tests.member_cloud.conftest import (
    ADMIN_TOKEN,
    FIXTURES,
    LiveServer,
    broker_settings,
    closed_port,
    free_socket,
    unique_id,
)
from tests.servers import ServerThread

CSV = (FIXTURES / "patients_published.csv").read_bytes()
PROBLEM = {
    "type": "urn:fedbroker:problem:unknown-column",
    "title": "Unknown column",
    "status": 422,
    "detail": "Quasi-identifier 'zip' is not a column of the uploaded dataset",
    "instance": "/v1/transfers",
    "errors": [{"field": "zip", "reason": "unknown"}],
}
APPROVED = {
    "id": "t-1",
    "status": "approved",
    "source": "sn",
    "destination": "fr",
    "purpose": "research",
    "anonymize": "none",
    "created_at": "2026-01-01T00:00:00Z",
    "quasi_identifiers": [],
    "quasi_identifiers_inferred": False,
    "sensitive": [],
    "report": None,
    "rules": [],
    "summary": [],
    "remedy": None,
    "policy_versions": {"SN": 1, "FR": 1},
    "dataset": {
        "sha256": "0" * 64,
        "size_bytes": 4,
        "rows": 1,
        "columns": 1,
        "format": "csv",
        "filename": "p.csv",
    },
    "delivery": {"status": "pending"},
}


class Scripted:
    """A real HTTP server that answers each request with the next scripted (status, body,
    headers), and records what it received."""

    def __init__(self, *answers: tuple[int, object, dict[str, str]]):
        self.answers = list(answers)
        self.received: list[tuple[str, str, dict[str, str], bytes]] = []
        self.raw_paths: list[bytes] = []
        self.server = ServerThread(
            Starlette(routes=[Route("/{path:path}", self.answer, methods=["GET", "POST"])])
        )

    async def answer(self, request: Request) -> Response:
        body = await request.body()
        self.received.append((request.method, request.url.path, dict(request.headers), body))
        self.raw_paths.append(request.scope["raw_path"])
        status, content, headers = self.answers.pop(0)
        await asyncio.sleep(float(headers.get("X-Delay", 0)))
        if isinstance(content, str):
            return Response(content, status, headers=headers, media_type="text/html")
        kind = "application/problem+json" if status >= 400 else "application/json"
        return JSONResponse(content, status, headers=headers, media_type=kind)

    def __enter__(self) -> Scripted:
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url


def test_a_problem_becomes_the_exception_of_its_status_with_its_fields():
    with (
        Scripted((422, PROBLEM, {})) as server,
        Client(server.url, "secret") as client,
        pytest.raises(Unprocessable) as caught,
    ):
        client.create_transfer(b"a\n1\n", "a.csv", "fr-research", "research")
    error = caught.value
    assert isinstance(error, BrokerAnsweredError) and isinstance(error, BrokerClientError)
    assert (error.status, error.problem) == (422, PROBLEM)
    assert (error.type, error.title, error.detail) == (
        PROBLEM["type"],
        "Unknown column",
        PROBLEM["detail"],
    )
    assert error.instance == "/v1/transfers" and error.errors == PROBLEM["errors"]
    assert str(error) == f"422 Unknown column: {PROBLEM['detail']}"


def test_an_error_without_json_still_carries_a_problem():
    with (
        Scripted((502, "<html>Bad gateway</html>", {})) as server,
        Client(server.url) as client,
        pytest.raises(ServerError) as caught,
    ):
        client.list_members()
    assert caught.value.status == 502 and caught.value.problem["status"] == 502
    assert caught.value.title == "Bad Gateway" and "Bad gateway" in caught.value.detail


def test_an_answer_that_is_not_its_schema_is_an_unreadable_answer():
    """Not a pydantic error escaping: the client's own error, naming the field."""
    with (
        Scripted((200, {"id": 7}, {})) as server,
        Client(server.url) as client,
        pytest.raises(BrokerAnsweredError) as caught,
    ):
        client.get_member("sn")
    assert caught.value.status == 502 and caught.value.title == "Unreadable answer"
    assert "GET /v1/members/sn" in caught.value.detail and "jurisdiction" in caught.value.detail


def test_no_answer_is_broker_unavailable():
    url = f"http://127.0.0.1:{closed_port()}"
    with Client(url, "secret") as client, pytest.raises(BrokerUnavailable) as caught:
        client.list_members()
    assert not isinstance(caught.value, BrokerAnsweredError)
    assert caught.value.base_url == url and caught.value.timed_out is False


def test_a_transfer_is_the_brokers_multipart_form():
    with Scripted((200, APPROVED, {})) as server, Client(server.url, "secret") as client:
        client.create_transfer(
            CSV,
            "patients.csv",
            "fr-research",
            "research",
            quasi_identifiers=["Age", "Gender"],
            sensitive=["Disease"],
            anonymize="auto",
            dry_run=True,
            content_type="text/csv",
        )
    method, path, headers, body = server.received[0]
    assert (method, path, headers["authorization"]) == ("POST", "/v1/transfers", "Bearer secret")
    for name, value in [
        ("destination", "fr-research"),
        ("purpose", "research"),
        ("quasi_identifiers", "Age,Gender"),
        ("sensitive", "Disease"),
        ("anonymize", "auto"),
        ("dry_run", "true"),
    ]:
        assert f'name="{name}"\r\n\r\n{value}\r\n'.encode() in body
    assert b'name="file"; filename="patients.csv"\r\nContent-Type: text/csv' in body
    assert CSV in body and b'name="kind"' not in body  # what is not given is not sent


def test_hierarchies_are_repeated_file_parts_named_for_their_column():
    hierarchy = {"Age": b"28;20-40;*\n", "Gender": io.BytesIO(b"F;*\nM;*\n")}
    answers = ((503, {"title": "Unavailable", "status": 503}, {"Retry-After": "0"}),)
    with (
        Scripted(*answers, (200, APPROVED, {})) as server,
        Client(server.url, "secret") as client,
    ):
        client.create_transfer(CSV, "patients.csv", "fr-research", "research", hierarchy=hierarchy)
    for _, _, _, body in server.received:  # a retry sends every part again, from its start
        assert b'name="file"; filename="patients.csv"' in body
        assert (
            b'name="hierarchy"; filename="Age.csv"\r\nContent-Type: text/csv\r\n\r\n28;20-40;*'
            in body
        )
        assert (
            b'name="hierarchy"; filename="Gender.csv"\r\nContent-Type: text/csv\r\n\r\nF;*\nM;*'
            in body
        )


def test_a_broker_slower_than_the_timeout_is_unavailable_and_says_so():
    with (
        Scripted((200, [], {"X-Delay": "2"})) as server,
        Client(server.url, timeout=0.2) as client,
        pytest.raises(BrokerUnavailable) as caught,
    ):
        client.list_members()
    assert caught.value.timed_out is True


def test_429_and_503_are_tried_again_with_the_same_idempotency_key():
    busy = {"title": "Too many requests", "status": 429, "detail": "slow down"}
    down = {"title": "Unavailable", "status": 503, "detail": "starting"}
    answers = ((429, busy, {"Retry-After": "0"}), (503, down, {"Retry-After": "0"}))
    with Scripted(*answers, (200, APPROVED, {})) as server, Client(server.url, "k") as client:
        decision = client.create_transfer(CSV, "p.csv", "fr", "research")
    assert isinstance(decision, TransferRead) and decision.status is TransferStatus.APPROVED
    keys = [headers["idempotency-key"] for _, _, headers, _ in server.received]
    assert len(keys) == 3 and len(set(keys)) == 1 and len(keys[0]) == 32
    assert all(CSV in body for _, _, _, body in server.received)  # the file sent again whole


def test_the_callers_idempotency_key_is_sent_as_given():
    with Scripted((200, APPROVED, {})) as server, Client(server.url, "k") as client:
        client.create_transfer(CSV, "p.csv", "fr", "research", idempotency_key="key-1")
    assert server.received[0][2]["idempotency-key"] == "key-1"


def test_retries_are_bounded_and_a_long_wait_is_not_waited():
    busy = {"title": "Too many requests", "status": 429, "detail": "slow down"}
    again = (429, busy, {"Retry-After": "0"})
    with (
        Scripted(again, again, again) as server,
        Client(server.url, retries=2) as client,
        pytest.raises(TooManyRequests) as caught,
    ):
        client.list_members()
    assert len(server.received) == 3 and caught.value.retry_after == 0
    hour = (503, busy | {"status": 503}, {"Retry-After": "3600"})
    with (
        Scripted(hour) as server,
        Client(server.url) as client,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        client.get_readiness()
    assert len(server.received) == 1 and caught.value.retry_after == 3600


def test_a_location_on_another_origin_is_not_followed():
    """The member's key would go to whoever the Location names."""
    with Scripted() as elsewhere:
        job = {"Location": f"{elsewhere.url}/v1/transfers/jobs/j-1", "Retry-After": "0"}
        with (
            Scripted((202, {}, job)) as server,
            Client(server.url, "key") as client,
            pytest.raises(BrokerAnsweredError) as caught,
        ):
            client.create_transfer(CSV, "p.csv", "fr", "research")
    assert caught.value.status == 502 and "outside" in caught.value.detail
    assert elsewhere.received == []


def test_ids_are_quoted_into_one_path_segment():
    with Scripted((200, APPROVED, {})) as server, Client(server.url) as client:
        client.get_transfer("../v1/members")
    assert server.received[0][1] == "/v1/transfers/../v1/members".replace(
        "../v1/", "..%2Fv1%2F"
    ) or (server.received[0][1] == "/v1/transfers/../v1/members")


def register(url: str) -> tuple[str, str, MemberCreated]:
    source, destination = unique_id("sn"), unique_id("fr")
    with Client(url, ADMIN_TOKEN) as admin:
        created = admin.register_member(source, "Source", "SN", "http://127.0.0.1:9/inbox")
        admin.register_member(destination, "Destination", "FR", "http://127.0.0.1:9/inbox")
        with pytest.raises(Conflict):
            admin.register_member(source, "Source", "SN", "http://127.0.0.1:9/inbox")
    return source, destination, created


def test_the_sync_client_against_a_real_broker(broker):
    source, destination, created = register(broker.url)
    assert created.id == source and created.api_key
    with Client(broker.url, created.api_key) as member:
        assert {source, destination} <= {m.id for m in member.list_members()}
        assert member.get_member(destination).jurisdiction == "FR"
        assert member.get_policy("SN").jurisdiction == "SN"
        decision = member.create_transfer(
            CSV,
            "patients.csv",
            destination,
            "research",
            quasi_identifiers=["Age", "Gender"],
            sensitive=["Disease"],
        )
        assert decision.status is TransferStatus.APPROVED and decision.report.rows == 9
        assert member.get_transfer(decision.id).id == decision.id
        page = member.list_transfers(status="approved", limit=5)
        assert [t.id for t in page.items] == [decision.id]
        background = member.create_transfer(
            CSV,
            "patients.csv",
            destination,
            "research",
            ["Age", "Gender"],
            ["Disease"],
            respond_async=True,
        )
        assert background.status is TransferStatus.APPROVED and background.id != decision.id
        assert member.analyze_dataset(CSV, "p.csv", quasi_identifiers=["Age", "Gender"]).rows == 9
        with pytest.raises(NotFound) as missing:
            member.get_transfer("00000000-0000-0000-0000-000000000000")
        assert missing.value.type.startswith("urn:fedbroker:problem:")
    with Client(broker.url, "not-a-key") as stranger, pytest.raises(Unauthorized) as denied:
        stranger.list_members()
    assert denied.value.type == "urn:fedbroker:problem:not-authenticated"


def test_the_async_client_against_a_real_broker(broker):
    source, destination, created = register(broker.url)

    async def run() -> None:
        async with AsyncClient(broker.url, created.api_key) as member:
            members, decision = await asyncio.gather(
                member.list_members(),
                member.create_transfer(
                    CSV,
                    "patients.csv",
                    destination,
                    "research",
                    ["Age", "Gender"],
                    ["Disease"],
                    respond_async=True,
                ),
            )
            assert {source, destination} <= {m.id for m in members}
            assert decision.status is TransferStatus.APPROVED
            assert (await member.get_transfer(decision.id)).report == decision.report
            with pytest.raises(NotFound):
                await member.get_member("no-such-member")

    asyncio.run(run())


def test_a_job_that_fails_raises_its_problem(tmp_path):
    """Every upload is decided in the background here: a malformed file fails in its job, and
    the client raises the problem the job recorded, as the synchronous answer would."""
    settings = broker_settings(tmp_path, decide_in_background_above_bytes=0, job_poll_seconds=0.05)
    server = LiveServer(create_broker(settings), free_socket()).start()
    try:
        with Client(server.url, ADMIN_TOKEN) as admin:
            key = admin.register_member("sn", "Source", "SN", "http://127.0.0.1:9/inbox").api_key
            admin.register_member("fr", "Destination", "FR", "http://127.0.0.1:9/inbox")
        with Client(server.url, key) as member, pytest.raises(Unprocessable) as refused:
            member.create_transfer(b"Age\n30,F\n", "bad.csv", "fr", "research", ["Age"])
        assert refused.value.type.endswith("invalid-dataset")
    finally:
        server.stop()


def test_models_read_the_brokers_json_as_sent():
    decision = TransferRead.model_validate(json.loads(json.dumps(APPROVED | {"extra": 1})))
    assert decision.status == "approved" and decision.model_extra == {"extra": 1}


def test_a_member_rotates_its_key_and_an_admin_revokes_them(broker):
    member_id = unique_id("sn-keys")
    with Client(broker.url, ADMIN_TOKEN) as admin:
        created = admin.register_member(member_id, "n", "SN", "http://127.0.0.1:9/inbox")
    with Client(broker.url, created.api_key) as member:
        rotated = member.rotate_member_key(member_id)
    assert rotated.api_key.startswith("fbk_") and rotated.previous_key_valid_until
    with Client(broker.url, ADMIN_TOKEN) as admin:
        assert admin.revoke_member_keys(member_id).id == member_id
    with Client(broker.url, rotated.api_key) as member, pytest.raises(Unauthorized):
        member.get_member(member_id)


def test_the_async_client_follows_the_same_retry_and_idempotency_rules():
    busy = {"title": "Too many requests", "status": 429, "detail": "slow down"}
    answers = ((429, busy, {"Retry-After": "0"}), (200, APPROVED, {}))

    async def run(url: str) -> TransferRead:
        async with AsyncClient(url, "k") as client:
            return await client.create_transfer(CSV, "p.csv", "fr", "research")

    with Scripted(*answers) as server:
        decision = asyncio.run(run(server.url))
    assert decision.status is TransferStatus.APPROVED
    keys = [headers["idempotency-key"] for _, _, headers, _ in server.received]
    assert len(keys) == 2 and keys[0] == keys[1]


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("7", 7.0), ("0", 0.0), ("soon", None), ("", None), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_retry_after_is_read_as_seconds_or_a_date(header, seconds):
    """RFC 9110: delay-seconds or an HTTP-date (one in the past is no wait)."""
    response = httpx.Response(429, headers={"Retry-After": header} if header else {})
    assert retry_after(response) == seconds

"""Member health: the rules (pure), registration, and the health checker against real servers.

The checker's passes are run by the tests (``run_once``; its thread is off in the ``client``
fixture); each talks HTTP to uvicorn servers on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route

from broker import flows
from broker.main import create_app
from broker.members import service as members
from broker.members.health import Health, after_check, health_read, health_url
from broker.members.health_checks import HealthChecker, probe
from broker.policies import service as policies
from broker.policies.seed import load_records
from broker.storage.db import make_engine, make_sessionmaker
from broker.wire.inbox_urls import InboxPolicy
from broker.wire.statuses import HealthState
from tests.broker.conftest import ADMIN, Federation, bearer
from tests.conftest import POLICIES
from tests.servers import ServerThread, free_port

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
LOOPBACK = InboxPolicy.of(["127.0.0.0/8"], [])


# --- the rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inbox", "given", "checked"),
    [
        ("https://sn.example/inbox", None, "https://sn.example/readyz"),
        ("https://gw.example/sn/inbox", None, "https://gw.example/sn/readyz"),
        ("https://sn.example", None, "https://sn.example/readyz"),
        ("https://sn.example/inbox?x=1#f", None, "https://sn.example/readyz"),
        ("http://127.0.0.1:8101/inbox", None, "http://127.0.0.1:8101/readyz"),
        (
            "https://sn.example/inbox",
            "https://ops.sn.example/ready",
            "https://ops.sn.example/ready",
        ),
    ],
)
def test_the_health_url_is_given_or_the_readyz_next_to_the_inbox(inbox, given, checked):
    assert health_url(inbox, given) == checked


def test_one_success_is_up_and_down_takes_failures_in_a_row():
    t1, t2, t3, t4 = (T0 + timedelta(seconds=30 * i) for i in range(1, 5))
    fresh = Health(since=T0)
    once = after_check(fresh, ok=False, reason="answered HTTP 503", now=t1, down_after=2)
    assert (once.state, once.since, once.failures) == (HealthState.UNKNOWN, T0, 1)
    assert (once.checked_at, once.reason) == (t1, "answered HTTP 503")
    down = after_check(once, ok=False, reason="no answer within 5 s", now=t2, down_after=2)
    assert (down.state, down.since, down.failures) == (HealthState.DOWN, t2, 2)
    still = after_check(down, ok=False, reason="no answer within 5 s", now=t3, down_after=2)
    assert (still.state, still.since, still.failures) == (HealthState.DOWN, t2, 3)
    up = after_check(still, ok=True, reason=None, now=t4, down_after=2)
    assert (up.state, up.since, up.failures, up.reason) == (HealthState.UP, t4, 0, None)
    # A failure of a member that is up keeps it up (with the reason), and its since.
    blip = after_check(up, ok=False, reason="could not connect", now=t4, down_after=2)
    assert (blip.state, blip.since, blip.reason) == (HealthState.UP, t4, "could not connect")
    again = after_check(blip, ok=True, reason=None, now=t4 + timedelta(seconds=1), down_after=2)
    assert (again.since, again.failures, again.reason) == (t4, 0, None)
    assert after_check(up, ok=False, reason="x", now=t4, down_after=1).state == HealthState.DOWN
    with pytest.raises(ValueError, match="down_after"):
        after_check(up, ok=False, reason="x", now=t4, down_after=0)


def test_members_are_not_shown_why_a_check_failed():
    down = Health(HealthState.DOWN, since=T0, checked_at=T0, reason="it resolves to 10.0.0.7")
    assert health_read(down, admin=True).reason == "it resolves to 10.0.0.7"
    shown = health_read(down, admin=False)
    assert (shown.state, shown.since, shown.checked_at, shown.reason) == ("down", T0, T0, None)
    assert health_read(None, admin=True).state == HealthState.UNKNOWN


# --- one probe, against real servers ---------------------------------------------------------


@pytest.fixture
def server():
    """A server whose /readyz answers what ``answer`` holds: a status, or 'redirect', 'slow'."""
    state = {"answer": 200, "seen": []}

    async def readyz(request):
        state["seen"].append(request.url.path)
        answer = state["answer"]
        if answer == "redirect":
            return RedirectResponse("/elsewhere", status_code=302)
        if answer == "slow":
            await asyncio.sleep(2)
        if answer == "big":
            return JSONResponse({"detail": "x" * 1_000_000}, status_code=503)
        return JSONResponse({"status": answer}, status_code=200 if answer == "slow" else answer)

    async def elsewhere(request):
        state["seen"].append(request.url.path)
        return JSONResponse({"status": "ready"})

    app = Starlette(routes=[Route("/readyz", readyz), Route("/elsewhere", elsewhere)])
    thread = ServerThread(app).start()
    thread.state = state
    yield thread
    thread.stop()


def check(server, policy=LOOPBACK, timeout=1.0):
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        return probe(client, f"{server.url}/readyz", policy, timeout)


def test_a_2xx_answer_is_up_anything_else_says_why(server):
    assert check(server).ok
    server.state["answer"] = 503
    found = check(server)
    assert not found.ok and found.reason == 'answered HTTP 503: {"status":503}'
    server.state["answer"] = "big"  # read no further than the start of it
    assert check(server).reason.startswith('answered HTTP 503: {"detail":"xxx')
    assert len(check(server).reason) < 300


def test_a_redirect_is_never_followed(server):
    server.state["answer"] = "redirect"
    found = check(server)
    assert (found.ok, found.reason) == (False, "answered a redirect (HTTP 302), never followed")
    assert server.state["seen"] == ["/readyz"]  # /elsewhere was not asked


def test_no_answer_within_the_timeout_is_a_failure(server):
    server.state["answer"] = "slow"
    assert check(server, timeout=0.3).reason == "no answer within 0.3 s"


def test_a_closed_port_is_a_failure_that_names_no_address():
    with httpx.Client(timeout=1) as client:
        found = probe(client, f"http://127.0.0.1:{free_port()}/readyz", LOOPBACK, 1)
    assert found.reason == "could not connect (ConnectError)"


def test_the_inbox_policy_is_checked_before_every_probe(server):
    found = check(server, policy=InboxPolicy())  # loopback no longer allowed
    assert not found.ok and "loopback" in found.reason
    assert server.state["seen"] == []  # never asked


# --- registration and service discovery ------------------------------------------------------


def register(client, member_id, inbox_url, **extra):
    answer = client.post(
        "/v1/members",
        headers=ADMIN,
        json={"id": member_id, "name": member_id, "jurisdiction": "FR", "inbox_url": inbox_url}
        | extra,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_a_new_member_is_unknown_since_its_registration(client):
    created = register(client, "fr-new", "http://127.0.0.1:9/fr/inbox")
    assert created["health"] == {
        "state": "unknown",
        "since": created["created_at"],
        "checked_at": None,
        "reason": None,
    }
    assert created["health_url"] == "http://127.0.0.1:9/fr/readyz"


def test_a_health_url_at_registration_passes_the_inbox_policy(client):
    given = register(
        client, "fr-given", "http://127.0.0.1:9/inbox", health_url="http://127.0.0.1:7/up"
    )
    assert given["health_url"] == "http://127.0.0.1:7/up"
    answer = client.post(
        "/v1/members",
        headers=ADMIN,
        json={
            "id": "fr-meta",
            "name": "x",
            "jurisdiction": "FR",
            "inbox_url": "http://127.0.0.1:9/inbox",
            "health_url": "http://169.254.169.254/latest/meta-data",
        },
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["errors"][0]["field"] == "health_url"
    assert "link-local" in problem["detail"]
    assert client.get("/v1/members/fr-meta", headers=ADMIN).status_code == 404


# --- the checker ------------------------------------------------------------------------------


@pytest.fixture
def lab(client, inbox, connection):
    """``fr-lab``, its inbox and /readyz served by ``inbox``; returns a function that runs one
    pass of the checker with every check due (time is not the subject here)."""
    register(client, "fr-lab", inbox.url)
    checker = client.app.state.health_checker

    def run(due=True):
        if due:
            connection.execute(text("UPDATE member_health SET next_check_at = NULL"))
        return checker.run_once()

    return run


def health_of(client, member_id, headers=ADMIN):
    return client.get(f"/v1/members/{member_id}", headers=headers).json()["health"]


def health_audit(client):
    entries = client.get("/v1/audit?limit=500", headers=ADMIN).json()["items"]
    return [e["details"] for e in entries if e["action"] == "member.health_changed"]


def test_the_checker_marks_up_then_down_after_failures_in_a_row_and_audits_changes(
    client, inbox, lab
):
    assert lab() == 1
    up = health_of(client, "fr-lab")
    assert (up["state"], up["reason"]) == ("up", None)
    assert up["since"] == up["checked_at"]
    inbox.readiness = 503
    lab()
    blip = health_of(client, "fr-lab")
    assert (blip["state"], blip["since"]) == ("up", up["since"])  # one failure: still up
    assert blip["reason"].startswith("answered HTTP 503")
    lab()
    down = health_of(client, "fr-lab")
    assert down["state"] == "down" and down["since"] == down["checked_at"]
    lab()
    lab()
    assert health_of(client, "fr-lab")["since"] == down["since"]
    inbox.readiness = 200
    lab()
    assert health_of(client, "fr-lab")["state"] == "up"
    assert inbox.probes == 6
    # Every change of state, and nothing else: 6 checks, 3 entries.
    assert [(d["from"], d["to"]) for d in health_audit(client)] == [
        ("unknown", "up"),
        ("up", "down"),
        ("down", "up"),
    ]
    assert health_audit(client)[1]["reason"].startswith("answered HTTP 503")
    assert client.get("/v1/audit/verify", headers=ADMIN).json()["valid"]


def test_members_see_each_others_health_without_the_reason_or_addresses(client, inbox, lab):
    federation = Federation(client)
    inbox.readiness = 500
    lab()
    lab()
    member = bearer(federation.keys["sn-hospital"])
    seen = health_of(client, "fr-lab", member)
    assert (seen["state"], seen["reason"]) == ("down", None)
    listed = {m["id"]: m for m in client.get("/v1/members", headers=member).json()}
    assert listed["fr-lab"]["health"]["state"] == "down"
    assert listed["fr-lab"]["health_url"] is None and listed["fr-lab"]["inbox_url"] is None
    itself = listed["sn-hospital"]  # a member sees why its own checks fail
    assert itself["health"]["reason"] == "could not connect (ConnectError)"
    by_admin = {m["id"]: m for m in client.get("/v1/members", headers=ADMIN).json()}
    assert by_admin["fr-lab"]["health"]["reason"].startswith("answered HTTP 500")
    assert by_admin["fr-lab"]["health_url"] == inbox.url.removesuffix("inbox") + "readyz"
    assert by_admin["sn-hospital"]["health"]["reason"] == "could not connect (ConnectError)"


def test_each_member_is_checked_once_a_period(client, inbox, lab):
    assert lab() == 1
    assert lab(due=False) == 0  # checked this period: not again
    assert inbox.probes == 1


def test_suspended_members_are_not_checked(client, inbox, lab):
    client.post("/v1/members/fr-lab/suspend", headers=ADMIN)
    assert lab() == 0 and inbox.probes == 0
    client.post("/v1/members/fr-lab/reactivate", headers=ADMIN)
    assert lab() == 1 and inbox.probes == 1


def test_a_member_seen_up_again_wakes_the_delivery_worker(client, inbox, lab):
    woken = []
    client.app.state.health_checker.on_up = woken.append
    lab()
    assert woken == []  # unknown -> up: nothing was held
    inbox.readiness = 503
    lab()
    lab()
    inbox.readiness = 200
    lab()
    assert woken == ["fr-lab"]


def test_a_member_that_stopped_is_down_with_the_reason(client, lab):
    port = free_port()
    register(client, "fr-gone", f"http://127.0.0.1:{port}/inbox")
    lab()
    lab()
    health = health_of(client, "fr-gone")
    assert (health["state"], health["reason"]) == ("down", "could not connect (ConnectError)")


# --- several broker processes on one database ------------------------------------------------


@pytest.fixture
def shared_database(own_database):
    """A migrated database of this test's own (the checks commit)."""
    engine = make_engine(own_database)
    yield engine
    engine.dispose()


def test_brokers_sharing_a_database_check_each_member_once_a_period(
    shared_database, inbox, settings
):
    factory = make_sessionmaker(shared_database)
    with factory() as session:
        policies.seed(session, load_records(POLICIES))
        for number in range(6):
            members.register(
                session, f"fr-{number}", "x", "FR", inbox.url, "admin", settings.inbox_policy
            )
    settings = settings.model_copy(update={"health_check_seconds": 60.0})
    with httpx.Client(timeout=2) as client:
        checkers = [
            HealthChecker(factory, client, settings, flows.record_health_check) for _ in range(4)
        ]
        counts = []
        start = threading.Barrier(len(checkers))

        def one_pass(checker):
            start.wait()
            counts.append(checker.run_once())

        threads = [threading.Thread(target=one_pass, args=(c,)) for c in checkers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert sum(counts) == 6 and inbox.probes == 6
    with factory() as session:
        states = session.execute(text("SELECT state FROM member_health")).scalars().all()
    assert states == ["up"] * 6


def test_the_health_checker_runs_in_the_apps_lifespan(shared_database, inbox, settings):
    """Started and stopped with the app, as the delivery worker is; a new member is checked
    at the next poll (within a second)."""
    settings = settings.model_copy(
        update={
            "database_url": shared_database.url.render_as_string(hide_password=False),
            "health_check_enabled": True,
            "health_check_seconds": 5.0,
            "health_check_timeout_seconds": 2.0,
        }
    )
    with TestClient(create_app(settings)) as client:
        register(client, "fr-live", inbox.url)
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while health_of(client, "fr-live")["state"] != "up" and datetime.now(UTC) < deadline:
            threading.Event().wait(0.05)
        assert health_of(client, "fr-live")["state"] == "up"
        checker = client.app.state.health_checker
    assert not checker._poller._thread.is_alive()  # stopped with the app
    assert inbox.probes == 1


def test_settings_refuse_a_timeout_as_long_as_the_period(settings):
    from broker.config import Settings

    with pytest.raises(ValueError, match="health_check_timeout_seconds must be shorter"):
        Settings(admin_token="x" * 16, health_check_seconds=5, health_check_timeout_seconds=5)

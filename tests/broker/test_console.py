"""The console through a real broker (uvicorn on 127.0.0.1, httpx as the browser): sign-in,
sessions and their end, CSRF, what each person may open, and the If-Match edit form.

Judged on what a person receives: status codes, the cookies set, the page's words, and the
database's rows (a session row holds no token).
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa

from broker.config import Settings
from broker.console.models import ConsoleSession
from broker.main import create_app
from tests.conftest import ADMIN_TOKEN, FIXTURES, POLICIES, postgres_database
from tests.servers import ServerThread

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
MEMBERS = (("sn-hospital", "SN"), ("fr-research", "FR"), ("ke-lab", "KE"))
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class Broker:
    def __init__(self, server: ServerThread, database_url: str):
        self.url = server.url
        self.database = sa.create_engine(database_url)
        self.api = httpx.Client(base_url=server.url, headers=ADMIN, timeout=30)
        self.keys: dict[str, str] = {}

    def rows(self, query: str) -> list[tuple]:
        with self.database.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(query))]

    def age_sessions(self, **clocks: datetime) -> None:
        """Move the sessions' clocks back (written through the model's column type)."""
        with self.database.begin() as connection:
            connection.execute(sa.update(ConsoleSession).values(**clocks))

    def browser(self) -> httpx.Client:
        """A client with no Authorization header: it has only the cookies it is given."""
        return httpx.Client(base_url=self.url, timeout=30)

    def register(self) -> None:
        for member, jurisdiction in MEMBERS:
            answer = self.api.post(
                "/v1/members",
                json={
                    "id": member,
                    "name": member,
                    "jurisdiction": jurisdiction,
                    "inbox_url": f"http://127.0.0.1:9/{member}/inbox",
                },
            )
            assert answer.status_code == 201, answer.text
            self.keys[member] = answer.json()["api_key"]

    def transfer(self, source: str, destination: str) -> str:
        answer = self.api.post(
            "/v1/transfers",
            headers={"Authorization": f"Bearer {self.keys[source]}"},
            files={"file": ("p.csv", (FIXTURES / "patients_published.csv").read_bytes())},
            data={
                "destination": destination,
                "purpose": "research",
                "quasi_identifiers": "Age,Gender",
                "sensitive": "Disease",
            },
        )
        assert answer.status_code == 200, answer.text
        return answer.json()["id"]


def make_broker(tmp_path, database_url: str | None = None, **overrides) -> Iterator[Broker]:
    database_url = database_url or f"sqlite:///{tmp_path / 'broker.db'}"
    settings = Settings(
        database_url=database_url,
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        signing_key_dir=tmp_path / "signing-keys",
        spool_dir=tmp_path / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
        delivery_enabled=False,
        health_check_enabled=False,
        **overrides,
    )
    server = ServerThread(create_app(settings)).start()
    broker = Broker(server, database_url)
    try:
        yield broker
    finally:
        server.stop()
        broker.database.dispose()


@pytest.fixture
def broker(tmp_path) -> Iterator[Broker]:
    yield from make_broker(tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_broker(request, tmp_path) -> Iterator[Broker]:
    """A broker on SQLite, then on a fresh PostgreSQL database (sessions on both)."""
    if request.param == "sqlite":
        yield from make_broker(tmp_path)
        return
    url, drop = postgres_database()
    try:
        yield from make_broker(tmp_path, url)
    finally:
        drop()


def sign_in(browser: httpx.Client, secret: str) -> httpx.Response:
    form = browser.get("/console/sign-in")
    token = CSRF.search(form.text).group(1)
    return browser.post("/console/sign-in", data={"secret": secret, "csrf_token": token})


def signed_in(broker: Broker, secret: str) -> httpx.Client:
    browser = broker.browser()
    answer = sign_in(browser, secret)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/", answer.text
    return browser


def csrf_of(browser: httpx.Client, path: str = "/console/") -> str:
    return CSRF.search(browser.get(path).text).group(1)


def test_without_a_session_every_page_goes_to_the_sign_in_page(broker):
    browser = broker.browser()
    for path in ("/console/", "/console/transfers", "/console/policies/SN", "/console/audit"):
        answer = browser.get(path)
        assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
    page = browser.get("/console/sign-in")
    assert page.status_code == 200 and 'type="password"' in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src" not in csp and "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp and page.headers["cache-control"] == "no-store"
    assert "<script" not in page.text


def test_sign_in_sets_a_session_cookie_that_holds_no_token(any_broker):
    broker = any_broker
    browser = broker.browser()
    answer = sign_in(browser, ADMIN_TOKEN)
    assert answer.status_code == 303
    cookie = next(c for c in answer.headers.get_list("set-cookie") if "fedbroker_console=" in c)
    attributes = [part.strip().lower() for part in cookie.split(";")]
    assert "httponly" in attributes and "samesite=strict" in attributes
    assert "path=/console" in attributes and "secure" not in attributes  # plain http here
    value = browser.cookies["fedbroker_console"]
    assert ADMIN_TOKEN not in value and len(value) >= 40
    [row] = broker.rows("SELECT * FROM console_sessions")
    assert not any(ADMIN_TOKEN in str(cell) or value in str(cell) for cell in row)
    home = browser.get("/console/")
    assert home.status_code == 200 and "administrator bootstrap" in home.text
    assert ADMIN_TOKEN not in home.text


def test_a_refused_sign_in_says_the_same_whatever_was_wrong(broker):
    """Unknown, revoked, suspended: one message, one status, so the form is no oracle."""
    broker.register()
    broker.api.post("/v1/members/ke-lab/suspend")
    revoked = broker.keys["fr-research"]
    assert broker.api.post("/v1/members/fr-research/api-key/revoke").status_code == 200
    pages = []
    for secret in ("not-a-token", "fbk_" + "x" * 43, revoked, broker.keys["ke-lab"]):
        answer = sign_in(broker.browser(), secret)
        assert answer.status_code == 401
        pages.append(re.search(r'id="message"[^>]*>([^<]*)<', answer.text).group(1))
        assert secret not in answer.text
    assert len(set(pages)) == 1 and "not accepted" in pages[0]
    assert broker.rows("SELECT count(*) FROM console_sessions") == [(0,)]


def test_a_sign_in_without_the_form_s_token_is_refused(broker):
    browser = broker.browser()
    answer = browser.post("/console/sign-in", data={"secret": ADMIN_TOKEN, "csrf_token": "x"})
    assert answer.status_code == 403 and "out of date" in answer.text
    browser.get("/console/sign-in")  # the cookie is set, but the form sent another token
    answer = browser.post("/console/sign-in", data={"secret": ADMIN_TOKEN, "csrf_token": "x"})
    assert answer.status_code == 403
    assert broker.rows("SELECT count(*) FROM console_sessions") == [(0,)]


def test_sign_out_needs_the_csrf_token_and_deletes_the_session(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    cookie = browser.cookies["fedbroker_console"]
    answer = browser.post("/console/sign-out", data={"csrf_token": "forged"})
    assert answer.status_code == 403
    assert browser.get("/console/").status_code == 200  # still signed in
    answer = browser.post("/console/sign-out", data={"csrf_token": csrf_of(browser)})
    assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
    assert broker.rows("SELECT count(*) FROM console_sessions") == [(0,)]
    replayed = broker.browser()
    replayed.cookies.set("fedbroker_console", cookie, path="/console")
    assert replayed.get("/console/").status_code == 303


def test_a_session_ends_when_idle_or_too_old(any_broker):
    broker = any_broker
    browser = signed_in(broker, ADMIN_TOKEN)
    assert browser.get("/console/").status_code == 200
    broker.age_sessions(last_seen_at=datetime.now(UTC) - timedelta(minutes=31))
    assert browser.get("/console/").headers.get("location") == "/console/sign-in"
    assert broker.rows("SELECT count(*) FROM console_sessions") == [(0,)]

    browser = signed_in(broker, ADMIN_TOKEN)
    browser.get("/console/")
    broker.age_sessions(created_at=datetime.now(UTC) - timedelta(hours=12, minutes=1))
    assert browser.get("/console/transfers").headers.get("location") == "/console/sign-in"


def test_a_revoked_key_or_a_suspension_ends_the_member_s_sessions(any_broker):
    broker = any_broker
    broker.register()
    sn = signed_in(broker, broker.keys["sn-hospital"])
    fr = signed_in(broker, broker.keys["fr-research"])
    assert sn.get("/console/transfers").status_code == 200
    assert broker.api.post("/v1/members/sn-hospital/api-key/revoke").status_code == 200
    assert sn.get("/console/transfers").headers.get("location") == "/console/sign-in"
    assert broker.api.post("/v1/members/fr-research/suspend").status_code == 200
    assert fr.get("/console/").headers.get("location") == "/console/sign-in"
    assert broker.rows("SELECT count(*) FROM console_sessions") == [(0,)]


def test_a_revoked_administrator_token_ends_its_sessions(broker):
    created = broker.api.post("/v1/admins", json={"name": "alice"})
    assert created.status_code == 201, created.text
    browser = signed_in(broker, created.json()["token"])
    assert "administrator alice" in browser.get("/console/").text
    assert broker.api.post("/v1/admins/alice/revoke").status_code == 200
    assert browser.get("/console/audit").headers.get("location") == "/console/sign-in"


def test_a_member_sees_what_the_api_shows_it_and_nothing_else(broker):
    broker.register()
    own = broker.transfer("sn-hospital", "fr-research")
    other = broker.transfer("fr-research", "sn-hospital")
    third = broker.transfer("fr-research", "ke-lab")
    sn_key = broker.keys["sn-hospital"]
    api = httpx.Client(
        base_url=broker.url, headers={"Authorization": f"Bearer {sn_key}"}, timeout=30
    )
    browser = signed_in(broker, sn_key)
    listed = browser.get("/console/transfers").text
    assert own in listed and third not in listed
    for transfer in (own, other, third):
        expected = api.get(f"/v1/transfers/{transfer}").status_code
        assert browser.get(f"/console/transfers/{transfer}").status_code == expected
        report = api.get(f"/v1/transfers/{transfer}/report").status_code
        assert browser.get(f"/console/transfers/{transfer}/report").status_code == report
    assert api.get(f"/v1/transfers/{third}").status_code == 404
    page = browser.get(f"/console/transfers/{third}")
    assert third in page.text and "No transfer" in page.text  # the API's words
    for admin_page in ("/console/overview", "/console/audit", "/console/policies/SN/edit"):
        assert browser.get(admin_page).status_code == 403
    assert "/console/audit" not in browser.get("/console/").text


def test_admin_pages_show_the_federation(broker):
    broker.register()
    transfer = broker.transfer("sn-hospital", "fr-research")
    browser = signed_in(broker, ADMIN_TOKEN)
    assert transfer in browser.get("/console/transfers").text
    page = browser.get(f"/console/transfers/{transfer}")
    assert page.status_code == 200 and 'id="decision"' in page.text
    assert "The chain holds" in browser.get("/console/audit").text
    overview = browser.get("/console/overview")
    assert overview.status_code == 200 and "sn-hospital" in overview.text
    assert "<script" not in overview.text.lower()
    assert browser.get("/console/policies").text.count("/edit") >= 2


def _edit_form(browser: httpx.Client, jurisdiction: str) -> tuple[str, str, str]:
    page = browser.get(f"/console/policies/{jurisdiction}/edit")
    assert page.status_code == 200
    token = CSRF.search(page.text).group(1)
    version = re.search(r'name="version" value="(\d+)"', page.text).group(1)
    draft = re.search(r"<textarea[^>]*>(.*?)</textarea>", page.text, re.S).group(1)
    return token, version, html.unescape(draft)


def test_a_stale_edit_is_refused_and_shows_what_changed(any_broker):
    broker = any_broker
    browser = signed_in(broker, ADMIN_TOKEN)
    token, version, draft = _edit_form(browser, "SN")
    current = broker.api.get("/v1/policies/SN")
    assert current.headers["etag"] == f'"{version}"'
    # Someone else raises k through the API in between.
    record = current.json()["record"]
    before_k = record["cross_border_export"]["min_k"]
    patched = broker.api.patch(
        "/v1/policies/SN",
        content=f'{{"cross_border_export": {{"min_k": {before_k + 7}}}}}',
        headers={"If-Match": f'"{version}"', "Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    answer = browser.post(
        "/console/policies/SN/edit", data={"csrf_token": token, "version": version, "record": draft}
    )
    assert answer.status_code == 412
    changed = re.search(r'<table class="changes" id="changed">(.*?)</table>', answer.text, re.S)
    assert changed and "cross_border_export.min_k" in changed.group(1)
    assert f"<del>{before_k}</del>" in changed.group(1)
    assert f"<ins>{before_k + 7}</ins>" in changed.group(1)
    assert "<textarea" in answer.text  # the draft is kept
    now = broker.api.get("/v1/policies/SN")
    assert now.headers["etag"] == f'"{int(version) + 1}"'  # only the API's save


def test_an_edit_from_the_current_version_saves_a_new_one(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    token, version, draft = _edit_form(browser, "FR")
    record = json.loads(draft)
    record["cross_border_export"]["min_k"] = record["cross_border_export"]["min_k"] + 1
    answer = browser.post(
        "/console/policies/FR/edit",
        data={"csrf_token": token, "version": version, "record": json.dumps(record)},
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/console/policies/FR"
    saved = broker.api.get("/v1/policies/FR")
    assert saved.headers["etag"] == f'"{int(version) + 1}"'
    assert saved.json()["created_by"] == "admin:bootstrap"
    assert (
        saved.json()["record"]["cross_border_export"]["min_k"]
        == (record["cross_border_export"]["min_k"])
    )
    diff = browser.get(f"/console/policies/FR/diff?old={version}&new={int(version) + 1}")
    assert "cross_border_export.min_k" in diff.text


def test_the_edit_form_refuses_a_forged_post_and_bad_json(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    token, version, draft = _edit_form(browser, "SN")
    forged = browser.post(
        "/console/policies/SN/edit", data={"csrf_token": "x", "version": version, "record": draft}
    )
    assert forged.status_code == 403
    broken = browser.post(
        "/console/policies/SN/edit",
        data={"csrf_token": token, "version": version, "record": draft[:-3]},
    )
    assert broken.status_code == 422 and "not valid JSON" in broken.text
    invalid = browser.post(
        "/console/policies/SN/edit",
        data={"csrf_token": token, "version": version, "record": '{"jurisdiction": 5}'},
    )
    assert invalid.status_code == 422 and "Not saved" in invalid.text
    assert broker.api.get("/v1/policies/SN").headers["etag"] == f'"{version}"'


def test_sign_in_is_rate_limited_per_address(tmp_path):
    for broker in make_broker(tmp_path, console_sign_in_rate="3/minute"):
        browser = broker.browser()
        statuses = [sign_in(browser, "wrong").status_code for _ in range(4)]
        assert statuses == [401, 401, 401, 429]
        answer = sign_in(browser, ADMIN_TOKEN)
        assert answer.status_code == 429 and int(answer.headers["retry-after"]) >= 1
        assert "sign-in rate" in answer.text


def test_tokens_never_reach_the_logs(broker, caplog):
    broker.register()
    access = logging.getLogger("uvicorn.access")
    level = access.level
    access.setLevel(logging.INFO)
    try:
        with caplog.at_level(logging.DEBUG):
            browser = signed_in(broker, broker.keys["sn-hospital"])
            browser.get("/console/transfers")
            sign_in(broker.browser(), ADMIN_TOKEN + "x")
    finally:
        access.setLevel(level)
    # What the broker's side logs (the test's own HTTP client logs its traffic at DEBUG).
    served = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert any("/console/sign-in" in r.getMessage() for r in served)
    said = [r.getMessage() for r in served if r.name == "broker.console"]
    assert said[0] == "console sign-in: sn-hospital from 127.0.0.1"
    assert said[1].startswith("console sign-in refused from 127.0.0.1: ")
    text = "\n".join(r.getMessage() for r in served)
    assert broker.keys["sn-hospital"] not in text and ADMIN_TOKEN not in text
    assert browser.cookies["fedbroker_console"] not in text


def test_the_edit_form_answers_hostile_records_without_saving(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    token, version, draft = _edit_form(browser, "SN")

    def send(record: str, form_version: str = version) -> httpx.Response:
        return browser.post(
            "/console/policies/SN/edit",
            data={"csrf_token": token, "version": form_version, "record": record},
        )

    deep = send("[" * 5000 + "]" * 5000)  # the parser would recurse 5,000 times
    assert deep.status_code == 422 and "Not saved" in deep.text
    other = json.loads(draft)
    other["jurisdiction"] = "FR"
    moved = send(json.dumps(other))  # another jurisdiction's record under SN
    assert moved.status_code == 422 and "<textarea" in moved.text
    ahead = send(draft, form_version="99")  # a version that does not exist yet
    assert ahead.status_code == 412 and 'id="changed"' not in ahead.text
    assert broker.api.get("/v1/policies/SN").headers["etag"] == f'"{version}"'
    assert broker.api.get("/v1/policies/FR").json()["version"] == 1


def test_what_members_wrote_is_shown_as_text(broker):
    """A dataset's title and description are the provider's words: escaped, never markup."""
    broker.register()
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    answer = broker.api.post(
        "/v1/catalog/datasets",
        headers={"Authorization": f"Bearer {broker.keys['sn-hospital']}"},
        json={
            "title": hostile,
            "description": hostile,
            "columns": [{"name": "Age", "role": "quasi_identifier"}],
            "purposes": ["research"],
        },
    )
    assert answer.status_code == 201, answer.text
    page = signed_in(broker, broker.keys["fr-research"]).get("/console/catalog")
    assert page.status_code == 200
    assert "<script>" not in page.text and "<img" not in page.text
    assert hostile in html.unescape(page.text)  # shown as the words it is


def test_cookies_are_secure_behind_an_https_proxy(broker):
    """uvicorn trusts X-Forwarded-Proto from 127.0.0.1 (its default): the console is on https."""
    browser = broker.browser()
    https = {"X-Forwarded-Proto": "https"}
    form = browser.get("/console/sign-in", headers=https)
    assert "secure" in form.headers["set-cookie"].lower()
    token = CSRF.search(form.text).group(1)
    # httpx keeps a Secure cookie for https addresses only: the form's cookie goes by hand.
    answer = httpx.post(
        f"{broker.url}/console/sign-in",
        data={"secret": ADMIN_TOKEN, "csrf_token": token},
        headers={**https, "Cookie": f"fedbroker_console_sign_in={token}"},
    )
    assert answer.status_code == 303
    session = next(c for c in answer.headers.get_list("set-cookie") if "fedbroker_console=" in c)
    assert "secure" in [part.strip().lower() for part in session.split(";")]


def test_signing_in_again_replaces_the_browser_s_session(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    first = browser.cookies["fedbroker_console"]
    answer = sign_in(browser, ADMIN_TOKEN)
    assert answer.status_code == 303 and browser.cookies["fedbroker_console"] != first
    assert broker.rows("SELECT count(*) FROM console_sessions") == [(1,)]


def test_an_error_page_still_shows_who_is_signed_in(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    page = browser.get("/console/policies/ZZ")
    assert page.status_code == 404 and "No F-SLA record" in page.text
    assert 'id="who"' in page.text and "Sign out" in page.text


def test_faults_and_bad_addresses_are_pages_with_the_api_s_answer(broker):
    browser = signed_in(broker, ADMIN_TOKEN)
    bad = browser.get("/console/transfers?offset=-1")
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("text/html")
    assert "offset" in bad.text
    with broker.database.begin() as connection:  # the database loses the sessions' table
        connection.execute(sa.text("ALTER TABLE console_sessions RENAME TO gone"))
    fault = browser.get("/console/")
    assert fault.status_code == 503 and fault.headers["content-type"].startswith("text/html")
    assert "Database unavailable" in fault.text and fault.headers["retry-after"] == "5"
    assert "Traceback" not in fault.text


def test_a_negotiation_is_open_to_its_parties_only(broker):
    broker.register()
    provider = {"Authorization": f"Bearer {broker.keys['sn-hospital']}"}
    published = broker.api.post(
        "/v1/catalog/datasets",
        headers=provider,
        json={
            "title": "Dakar admissions 2025",
            "columns": [
                {"name": "Age", "role": "quasi_identifier"},
                {"name": "Gender", "role": "quasi_identifier"},
                {"name": "Disease", "role": "sensitive"},
            ],
            "purposes": ["research"],
        },
    )
    assert published.status_code == 201, published.text
    dataset = published.json()["id"]
    measured = broker.api.post(
        f"/v1/catalog/datasets/{dataset}/measurement",
        headers=provider,
        files={"file": ("d.csv", (FIXTURES / "patients_published.csv").read_bytes(), "text/csv")},
    )
    assert measured.status_code == 200, measured.text
    asked = broker.api.post(
        "/v1/negotiations",
        headers={"Authorization": f"Bearer {broker.keys['fr-research']}"},
        json={"dataset_id": dataset, "purpose": "research"},
    )
    assert asked.status_code in (200, 201), asked.text
    negotiation = asked.json()["id"]

    for member in ("fr-research", "sn-hospital"):
        browser = signed_in(broker, broker.keys[member])
        assert negotiation in browser.get("/console/negotiations").text
        page = browser.get(f"/console/negotiations/{negotiation}")
        assert page.status_code == 200 and asked.json()["state"] in page.text
    outsider = signed_in(broker, broker.keys["ke-lab"])
    assert negotiation not in outsider.get("/console/negotiations").text
    api = httpx.Client(
        base_url=broker.url,
        headers={"Authorization": f"Bearer {broker.keys['ke-lab']}"},
        timeout=30,
    )
    assert api.get(f"/v1/negotiations/{negotiation}").status_code == 404
    assert outsider.get(f"/console/negotiations/{negotiation}").status_code == 404
    admin = signed_in(broker, ADMIN_TOKEN)
    assert admin.get(f"/console/negotiations/{negotiation}").status_code == 200

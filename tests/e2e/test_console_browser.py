"""The console in a real browser: headless Chromium signs in as an administrator and as a
member through the sign-in form of a broker served by uvicorn, walks every page, and saves a
screenshot of each (checked not blank: most of a blank page is one colour).

Every request the pages make is recorded: none may leave 127.0.0.1, no page may hold a script,
and the Content-Security-Policy must block nothing (the stylesheet is the console's own).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, FIXTURES

Image = pytest.importorskip("PIL.Image", reason="Pillow (with matplotlib) is not installed")

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TIMEOUT_MS = 20_000


@pytest.fixture
def browser(chromium, tmp_path, request):
    """A fresh browser context (its own cookies) that refuses requests leaving 127.0.0.1."""
    contexts = []

    def new_page():
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        page.requests, page.foreign, page.console = [], [], []

        def route(route):
            url = route.request.url
            page.requests.append(url)
            if urlsplit(url).hostname != "127.0.0.1":
                page.foreign.append(url)
                route.abort()
            else:
                route.continue_()

        context.route("**/*", route)
        page.on("console", lambda message: page.console.append(message.text))
        contexts.append((context, page))
        return page

    yield new_page
    report = getattr(request.node, "rep_call", None)
    for number, (context, page) in enumerate(contexts):
        if report is not None and report.failed:
            shot = tmp_path / f"console-failure-{number}.png"
            try:
                page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot of the page at the failure: {shot}")
            except Exception as error:  # the failure matters more than the screenshot
                print(f"no screenshot: {error}")
        context.close()


def setup_federation(base: str) -> tuple[dict[str, str], dict[str, str]]:
    """Three members; transfers SN -> FR and FR -> KE; returns the keys and transfer ids."""
    with httpx.Client(base_url=base, headers=ADMIN, timeout=60) as api:
        keys = {}
        for member, jurisdiction in (
            ("sn-hospital", "SN"),
            ("fr-research", "FR"),
            ("ke-lab", "KE"),
        ):
            answer = api.post(
                "/v1/members",
                json={
                    "id": member,
                    "name": member,
                    "jurisdiction": jurisdiction,
                    "inbox_url": f"http://127.0.0.1:9/{member}/inbox",
                },
            )
            assert answer.status_code == 201, answer.text
            keys[member] = answer.json()["api_key"]
        transfers = {}
        for source, destination in (("sn-hospital", "fr-research"), ("fr-research", "ke-lab")):
            answer = api.post(
                "/v1/transfers",
                headers={"Authorization": f"Bearer {keys[source]}"},
                files={"file": ("p.csv", (FIXTURES / "patients_original.csv").read_bytes())},
                data={
                    "destination": destination,
                    "purpose": "research",
                    "quasi_identifiers": "Age,Gender",
                    "sensitive": "Disease",
                    "anonymize": "auto",
                },
            )
            assert answer.status_code == 200, answer.text
            transfers[source] = answer.json()["id"]
    return keys, transfers


def sign_in(page, base: str, secret: str) -> None:
    page.goto(f"{base}/console/")
    assert page.url == f"{base}/console/sign-in"  # no session: the sign-in page
    page.fill("#secret", secret)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/console/")


def shoot(page, folder: Path, name: str) -> Path:
    """A screenshot of the whole page, checked not blank: no colour covers 98 % of it, and
    the console's header colour is there (the stylesheet was applied)."""
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    with Image.open(path) as image:
        pixels = image.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 20)
        width, height = pixels.size
    top = max(count for count, _ in colours)
    assert top < 0.98 * width * height, f"{name}: the screenshot is blank"
    assert any(colour == (31, 58, 95) for _, colour in colours), f"{name}: not styled"
    return path


def assert_clean(page) -> None:
    assert page.evaluate("() => document.scripts.length") == 0
    assert page.foreign == []
    assert not [m for m in page.console if "Content Security Policy" in m], page.console


def test_an_administrator_walks_every_page(broker_server, browser, tmp_path):
    base = broker_server.url
    _, transfers = setup_federation(base)
    page = browser()
    sign_in(page, base, ADMIN_TOKEN)
    assert page.locator("#who").inner_text() == "administrator bootstrap"
    shots = [shoot(page, tmp_path, "home")]
    assert "token" not in page.url.lower()

    page.click("text=Transfers")
    assert page.locator("#transfers tbody tr").count() == 2
    shots.append(shoot(page, tmp_path, "transfers"))
    page.goto(f"{base}/console/transfers/{transfers['sn-hospital']}")
    assert "approved" in page.locator("#decision").inner_text()
    shots.append(shoot(page, tmp_path, "transfer"))
    page.click("#report-link")
    assert page.locator("#verdict .headline").is_visible()  # the API's report page
    page.goto(f"{base}/console/policies")
    shots.append(shoot(page, tmp_path, "policies"))
    page.click("text=SN")
    assert '"jurisdiction": "SN"' in page.locator("#record").inner_text()
    shots.append(shoot(page, tmp_path, "policy"))
    page.goto(f"{base}/console/catalog")
    shots.append(shoot(page, tmp_path, "catalog"))
    page.goto(f"{base}/console/negotiations")
    shots.append(shoot(page, tmp_path, "negotiations"))
    page.click("text=Audit chain")
    assert page.locator("#chain").inner_text().startswith("The chain holds")
    assert page.locator("#entries tbody tr").count() >= 5  # members, transfers
    shots.append(shoot(page, tmp_path, "audit"))
    page.goto(f"{base}/console/overview")
    assert page.get_by_text("sn-hospital").first.is_visible()
    assert_clean(page)

    # A stale edit: the form is opened at version 1, someone saves through the API, then the
    # form is sent: refused, with what the other save changed, and the draft kept.
    page.goto(f"{base}/console/policies/SN/edit")
    draft = page.locator("#record").input_value()
    with httpx.Client(base_url=base, headers=ADMIN, timeout=10) as api:
        saved = api.patch(
            "/v1/policies/SN",
            content='{"cross_border_export": {"min_k": 9}}',
            headers={"If-Match": '"1"', "Content-Type": "application/merge-patch+json"},
        )
        assert saved.status_code == 200, saved.text
    page.fill("#record", draft)  # sent as it was opened, from version 1
    response_status = []
    page.on("response", lambda r: response_status.append(r.status))
    page.click("#edit-form button[type=submit]")
    page.wait_for_selector("#refused")
    assert 412 in response_status
    changed = page.locator("#changed").inner_text()
    assert "cross_border_export.min_k" in changed and "9" in changed
    assert page.locator("#record").input_value() == draft
    shots.append(shoot(page, tmp_path, "stale-edit"))
    page.goto(f"{base}/console/policies/SN/diff?old=1&new=2")
    assert "cross_border_export.min_k" in page.locator("#diff").inner_text()
    shots.append(shoot(page, tmp_path, "diff"))
    assert_clean(page)

    page.click("text=Sign out")
    page.wait_for_url(f"{base}/console/sign-in")
    page.goto(f"{base}/console/transfers")
    assert page.url == f"{base}/console/sign-in"
    print("screenshots:", *shots, sep="\n  ")


def test_a_member_sees_its_own_and_not_another_member_s(broker_server, browser, tmp_path):
    base = broker_server.url
    keys, transfers = setup_federation(base)
    page = browser()

    page.goto(f"{base}/console/sign-in")
    page.fill("#secret", keys["sn-hospital"] + "-wrong")
    page.click("button[type=submit]")
    assert "not accepted" in page.locator("#message").inner_text()
    shoot(page, tmp_path, "sign-in-refused")

    sign_in(page, base, keys["sn-hospital"])
    assert page.locator("#who").inner_text() == "member sn-hospital (SN)"
    assert page.locator("text=Audit chain").count() == 0
    shoot(page, tmp_path, "member-home")
    page.goto(f"{base}/console/transfers")
    assert page.locator("#transfers tbody tr").count() == 1
    shoot(page, tmp_path, "member-transfers")
    own = page.goto(f"{base}/console/transfers/{transfers['sn-hospital']}")
    assert own.status == 200
    # FR -> KE: not sent nor received by SN. The API answers 404, and so does the console.
    with httpx.Client(base_url=base, timeout=10) as api:
        headers = {"Authorization": f"Bearer {keys['sn-hospital']}"}
        assert (
            api.get(f"/v1/transfers/{transfers['fr-research']}", headers=headers).status_code == 404
        )
    other = page.goto(f"{base}/console/transfers/{transfers['fr-research']}")
    assert other.status == 404
    assert "No transfer" in page.locator("#problem").inner_text()
    assert "ke-lab" not in page.content()
    shoot(page, tmp_path, "member-other-transfer")
    report = page.goto(f"{base}/console/transfers/{transfers['fr-research']}/report")
    assert report.status == 404
    assert page.goto(f"{base}/console/audit").status == 403
    assert page.goto(f"{base}/console/policies/SN/edit").status == 403
    page.goto(f"{base}/console/policies/SN")
    assert page.locator("#edit-link").count() == 0
    shoot(page, tmp_path, "member-policy")
    assert_clean(page)

"""The HTML report in a real browser: what headless Chromium draws, not just what the HTML says.

The bars of the class-size histogram and of the risk per record are measured on screen (their
bounding boxes): one bar per class size, heights in the ratio of the counts, each under its
label. The page must draw without a script and without fetching anything: every request is
recorded and the Content-Security-Policy must block nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
import pytest

from broker.reports import analysis_page
from tests.conftest import ADMIN_TOKEN, FIXTURES
from tests.reports.conftest import HOSTILE, classes_frame, measured

pytest.importorskip("matplotlib", reason="the 'reports' extra (matplotlib) is not installed")

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TIMEOUT_MS = 20_000
# For each bar of a chart: its box, and the first SVG text below it that overlaps it across (its
# label on the axis; a pair of bars side by side shares one).
BARS = """([chart, prefix]) => {
  const svg = document.getElementById(chart);
  const texts = [...svg.querySelectorAll("text")].map((t) => ({
    text: t.textContent, box: t.getBoundingClientRect() }));
  return [...svg.querySelectorAll(`g[id^="${prefix}"]`)].map((g) => {
    const box = g.getBoundingClientRect();
    const label = texts.find((t) => t.box.y >= box.y + box.height - 1 &&
      t.box.x < box.x + box.width && box.x < t.box.x + t.box.width);
    return { id: g.id, x: box.x, y: box.y, width: box.width, height: box.height,
             label: label ? label.text : null };
  });
}"""


@pytest.fixture
def browser_page(chromium, tmp_path, request):
    """A page that records its requests and console messages, screenshot on failure."""
    context = chromium.new_context(viewport={"width": 1280, "height": 1600})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.requests, page.console = [], []
    context.route("**/*", lambda route: _record(page, route))
    page.on("console", lambda message: page.console.append(message.text))
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shot = tmp_path / "report-failure.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot of the page at the failure: {shot}")
    context.close()


def _record(page, route):
    page.requests.append(route.request.url)
    if urlsplit(route.request.url).hostname == "127.0.0.1":
        route.continue_()
    else:
        route.abort()


def bars(page, chart: str, prefix: str) -> list[dict]:
    return page.evaluate(BARS, [chart, f"{chart}-{prefix}"])


def assert_heights_in_ratio(drawn: list[dict], counts: list[int]) -> None:
    """Bars standing on one baseline, heights proportional to ``counts`` (1 px tolerance)."""
    unit = max(b["height"] for b in drawn) / max(counts)
    assert [round(b["height"] / unit, 2) for b in drawn] == pytest.approx(counts, abs=0.05)
    bottoms = {round(b["y"] + b["height"]) for b in drawn if b["height"] > 0}
    assert len(bottoms) == 1, f"bars on different baselines: {bottoms}"


def test_the_histogram_and_risk_bars_are_drawn_as_the_report_says(browser_page):
    page = browser_page
    frame = classes_frame().rename(columns={"sex": HOSTILE})
    report = measured(frame, ["age", HOSTILE], ["disease"])
    assert report["quasi_identifiers"]["class_size_histogram"] == {"1": 1, "2": 3, "3": 1}
    page.set_content(analysis_page(report, title="ten.csv"))

    verdict = page.locator("#verdict .headline")
    assert verdict.is_visible() and verdict.inner_text() == "Some records can be singled out"
    first = page.locator("#verdict, svg").first
    assert first.get_attribute("id") == "verdict", "the verdict must come before any plot"

    sizes = bars(page, "class-sizes", "size-")
    assert [b["id"] for b in sizes] == [f"class-sizes-size-{s}" for s in (1, 2, 3)]
    assert [b["label"] for b in sizes] == ["1", "2", "3"]
    assert_heights_in_ratio(sizes, [1, 3, 1])
    assert len({round(b["width"]) for b in sizes}) == 1
    assert all(b["height"] > 20 for b in sizes)

    risk = bars(page, "risk", "band-")
    assert [b["label"] for b in risk] == ["100 %", "50 %", "33 %"]
    assert_heights_in_ratio(risk, [1, 6, 3])  # records: 1 unique, 3 x 2, 1 x 3

    # The hostile column name is drawn as text and runs nothing.
    assert page.get_by_text(HOSTILE).first.is_visible()
    assert page.evaluate("() => document.scripts.length") == 0
    assert page.requests == []
    assert not [m for m in page.console if "Content Security Policy" in m], page.console


def test_transfer_report_served_by_the_broker(broker_server, browser_page):
    page = browser_page
    base = broker_server.url
    with httpx.Client(base_url=base, headers=ADMIN, timeout=30) as api:
        keys = {}
        for member, jurisdiction in (("sn-hospital", "SN"), ("fr-research", "FR")):
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
        source = {"Authorization": f"Bearer {keys['sn-hospital']}"}
        answer = api.post(
            "/v1/transfers",
            headers=source,
            files={"file": ("p.csv", (FIXTURES / "patients_original.csv").read_bytes())},
            data={
                "destination": "fr-research",
                "purpose": "research",
                "quasi_identifiers": "Age,Gender",
                "sensitive": "Disease",
                "anonymize": "auto",
            },
        )
        assert answer.status_code == 200, answer.text
        transfer = answer.json()

    page.context.set_extra_http_headers(source)
    url = f"{base}/v1/transfers/{transfer['id']}/report"
    response = page.goto(url)
    assert response.status == 200

    assert page.locator("#verdict .headline").inner_text() == (
        "Approved after anonymization by the broker"
    )
    histogram = transfer["report"]["quasi_identifiers"]["class_size_histogram"]
    sizes = bars(page, "class-sizes", "size-")
    assert [b["label"] for b in sizes] == list(histogram)
    assert_heights_in_ratio(sizes, list(histogram.values()))

    # Before (every record unique) and after, side by side per risk band.
    before = bars(page, "compare", "before-")
    after = bars(page, "compare", "after-")
    assert before[0]["label"] == "100 %" and before[0]["height"] > 0
    assert all(b["height"] == 0 for b in before[1:])
    assert after[0]["height"] == 0
    kept = transfer["remedy"]["information_loss"]["attribute_utility_percent"]
    utility = page.evaluate(
        "() => [...document.querySelectorAll('#utility g[id^=\"utility-bar-\"]')]"
        ".map((g) => g.getBoundingClientRect().width)"
    )
    widest = max(kept.values())
    assert [round(w / max(utility) * widest, 1) for w in utility] == pytest.approx(
        list(kept.values()), abs=0.5
    )
    for chart in ("class-sizes", "risk", "attributes", "compare", "utility"):
        assert page.locator(f"svg#{chart}").is_visible()
    assert page.requests == [url]
    assert not [m for m in page.console if "Content Security Policy" in m], page.console


def test_federation_overview_served_by_the_broker(broker_server, browser_page):
    """Three approved decisions and one rejected today, SN to FR: today's bar of the decisions
    per day is three parts approved over one part rejected, the pair's bar the same."""
    page = browser_page
    base = broker_server.url
    with httpx.Client(base_url=base, headers=ADMIN, timeout=30) as api:
        keys = {}
        for member, jurisdiction in (("sn-hospital", "SN"), ("fr-research", "FR")):
            answer = api.post(
                "/v1/members",
                json={
                    "id": member,
                    "name": HOSTILE if member == "fr-research" else member,
                    "jurisdiction": jurisdiction,
                    "inbox_url": f"http://127.0.0.1:9/{member}/inbox",
                },
            )
            keys[member] = answer.json()["api_key"]
        source = {"Authorization": f"Bearer {keys['sn-hospital']}"}
        for purpose in ("research", "research", "research", "marketing"):
            answer = api.post(
                "/v1/transfers",
                headers=source,
                files={"file": ("p.csv", (FIXTURES / "patients_published.csv").read_bytes())},
                data={
                    "destination": "fr-research",
                    "purpose": purpose,
                    "quasi_identifiers": "Age,Gender",
                    "sensitive": "Disease",
                },
            )
            assert answer.status_code == 200, answer.text

    page.context.set_extra_http_headers(ADMIN)
    url = f"{base}/v1/federation/overview.html?days=7"
    response = page.goto(url)
    assert response.status == 200
    assert page.locator("#verdict .headline").inner_text().startswith("2 active members")
    today = [b for b in bars(page, "decisions", "") if b["id"].endswith("-6")]
    heights = {b["id"].split("-")[1]: b["height"] for b in today}
    assert heights["approved"] > 20
    assert heights["approved"] == pytest.approx(3 * heights["rejected"], abs=1.5)
    assert heights["anonymization_required"] == 0
    assert {b["label"] for b in today} == {datetime.now(UTC).strftime("%m-%d")}  # under it
    pair = {b["id"].split("-")[1]: b["width"] for b in bars(page, "pairs", "")}
    assert pair["approved"] == pytest.approx(3 * pair["rejected"], abs=1.5)
    assert page.get_by_text(HOSTILE).first.is_visible()  # the member's name, as text
    assert page.evaluate("() => document.scripts.length") == 0
    assert page.requests == [url]
    assert not [m for m in page.console if "Content Security Policy" in m], page.console

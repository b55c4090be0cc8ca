"""/docs in a real browser: authorize as admin, edit a policy through "Try it out", read it back.

Headless Chromium opens the Swagger UI of a broker served by uvicorn on 127.0.0.1. Every request
the page makes is recorded, and one to any other host fails the test: the UI must come from the
broker's own assets, with nothing fetched from the internet.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TIMEOUT_MS = 20_000


@pytest.fixture
def page(chromium, tmp_path, request):
    """A fresh page that refuses every request leaving 127.0.0.1, with a screenshot on failure."""
    context = chromium.new_context(viewport={"width": 1280, "height": 1600})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.requests = []  # every URL the page asked for
    page.foreign = []  # those to another host, refused

    def route(route):
        url = route.request.url
        page.requests.append(url)
        if urlsplit(url).hostname != "127.0.0.1":
            page.foreign.append(url)
            route.abort()
        else:
            route.continue_()

    context.route("**/*", route)
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shot = tmp_path / "docs-failure.png"
        try:
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the page at the failure: {shot}")
        except Exception as error:  # the failure matters more than the screenshot
            print(f"no screenshot: {error}")
    context.close()


def test_edit_policy_through_swagger_ui(broker_server, page):
    base = broker_server.url
    with httpx.Client(base_url=base, headers=ADMIN, timeout=10) as api:
        current = api.get("/v1/policies/SN")
        assert current.status_code == 200, current.text
        assert current.json()["version"] == 1
        record = current.json()["record"]
        assert record["cross_border_export"]["min_k"] != 4
        record["cross_border_export"]["min_k"] = 4

        page.goto(f"{base}/docs")
        ui = page.locator("#swagger-ui")
        assert "fedbroker" in ui.locator(".info .title").inner_text()
        assert f"{base}/static-offline-docs/swagger-ui-bundle.js" in page.requests
        assert f"{base}/openapi.json" in page.requests

        # Authorize as admin.
        page.locator(".auth-wrapper button.authorize").click()
        dialog = page.locator(".dialog-ux .modal-ux")
        dialog.locator("input[aria-label='auth-bearer-value']").fill(ADMIN_TOKEN)
        dialog.locator("button.modal-btn.authorize").click()
        dialog.locator("button.btn-done").click()
        assert "locked" in page.locator(".auth-wrapper button.authorize").get_attribute("class")

        # Expand PUT /v1/policies/{jurisdiction} and try it out.
        operation = ui.locator(
            ".opblock.opblock-put",
            has=page.locator(".opblock-summary-path[data-path='/v1/policies/{jurisdiction}']"),
        )
        operation.locator(".opblock-summary-control").click()
        try_it_out = operation.locator("button.try-out__btn")
        if try_it_out.inner_text().strip() == "Cancel":  # tryItOutEnabled opens it already
            try_it_out.click()
        assert try_it_out.inner_text().strip() == "Try it out"
        try_it_out.click()
        assert try_it_out.inner_text().strip() == "Cancel"

        operation.locator("tr[data-param-name='jurisdiction'] input").fill("SN")
        # The version edited, as GET's ETag gave it: without it the save is refused (428).
        operation.locator("tr[data-param-name='if-match'] input").fill('"1"')
        operation.locator("textarea.body-param__text").fill(json.dumps(record, indent=2))
        operation.locator("button.execute").click()

        status = operation.locator(".live-responses-table .response .response-col_status")
        status.first.wait_for()
        assert status.first.inner_text().strip() == "200"
        body = operation.locator(".live-responses-table .response-col_description pre").first
        assert '"version": 2' in body.inner_text()

        saved = api.get("/v1/policies/SN")
        assert saved.status_code == 200, saved.text
        assert saved.json()["version"] == 2
        assert saved.json()["created_by"] == "admin:bootstrap"
        assert saved.json()["record"]["cross_border_export"]["min_k"] == 4
        assert saved.json()["record"] == record

    assert page.foreign == [], f"the docs page reached beyond 127.0.0.1: {page.foreign}"

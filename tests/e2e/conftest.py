"""End-to-end fixtures: the broker served by uvicorn on 127.0.0.1, and headless Chromium.

The browser is Debian's ``chromium`` (``.ci/run`` installs it) driven by Playwright; Playwright's
own browser download is never used. Without the browser the tests that need it skip visibly.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.config import Settings
from broker.main import create_app
from tests.conftest import ADMIN_TOKEN, POLICIES
from tests.servers import ServerThread

# Not a test module: it would install its import blocker in the test process.
collect_ignore = ["runtime_only"]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """Debian's Chromium: /usr/bin/chromium, else whatever ``chromium`` is on PATH."""
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium")


@pytest.fixture
def broker_server(tmp_path) -> Iterator[ServerThread]:
    """A real broker on a free 127.0.0.1 port: temp SQLite database, the repo's policies/."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'broker.db'}",
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        signing_key_dir=tmp_path / "signing-keys",
        spool_dir=tmp_path / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
        delivery_enabled=False,
    )
    server = ServerThread(create_app(settings)).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chromium():
    """A headless Chromium browser (Playwright over Debian's build)."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium browser: install Debian's 'chromium' package (.ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so fixtures can see whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report

"""``make demo``: the broker and three member clouds as real processes, and the scenario."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import REPO


def test_demo_shows_the_three_decisions_and_a_negotiated_exchange_then_stops_on_sigterm(
    tmp_path,
):
    demo = subprocess.Popen(
        [sys.executable, "-m", "demo", "--data", str(tmp_path / "demo")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in demo.stdout:
            lines.append(line)
            if "press Ctrl-C" in line or demo.poll() is not None:
                break
        out = "".join(lines)
        assert "press Ctrl-C" in out, out
        assert out.count("decision: APPROVED") == 3
        assert "decision: ANONYMIZATION_REQUIRED" in out
        assert "decision: REJECTED" in out
        assert re.search(
            r"delivery: delivered in fr-research's inbox \(transfer-[0-9a-f-]+\.csv, "
            r"as measured, written by the broker\)",
            out,
        ), out
        assert re.search(r"\(transfer-[0-9a-f-]+\.anonymized\.csv, anonymized\)", out), out
        # problems merged across rules and jurisdictions, each with what to do, in words
        assert "problem: SN does not allow the purpose 'marketing'" in out
        assert "what to do: drop column NIN" in out
        assert "Mmaq index 1.00 (0 anonymous, 1 identifying)" in out
        assert "delivery: none (nothing leaves)" in out
        assert "FAILED" not in out and "not_applicable" not in out
        # The negotiated exchange: two member clouds and the broker, as processes.
        assert "catalog: fr-research could get it for research anonymized" in out, out
        assert "sn-hospital offers: k >= 5" in out
        assert "REQUESTED -> OFFERED -> ACCEPTED -> AGREED -> VERIFIED -> FINALIZED" in out
        agreement = re.search(r"under agreement ([0-9a-f-]{36}); fr-research deletes it at", out)
        assert agreement, out
        docs = re.search(r"Broker API docs: (\S+)/docs", out).group(1)
        assert httpx.get(f"{docs}/readyz").status_code == 200
        # The console's address, where nobody is signed in: its sign-in page.
        console = re.search(r"Console: (\S+/console/) ", out).group(1)
        assert console == f"{docs}/console/"
        landing = httpx.get(console, follow_redirects=True)
        assert landing.url.path == "/console/sign-in" and 'type="password"' in landing.text
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(60) == 0
        rest = demo.stdout.read()
        assert "Stopped broker, sn-hospital, fr-research and ng-health" in rest, rest
    finally:
        if demo.poll() is None:
            demo.kill()
    for url in [docs, *re.findall(r"(http://127\.0\.0\.1:\d+)/docs", out)]:
        try:
            httpx.get(f"{url}/livez", timeout=2)
        except httpx.TransportError:
            continue
        raise AssertionError(f"{url} still answers after the demo stopped")


def test_demo_refuses_to_empty_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "precious.csv").write_text("keep me")
    result = subprocess.run(
        [sys.executable, "-m", "demo", "--once", "--data", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "not made by the demo" in result.stderr
    assert (tmp_path / "precious.csv").read_text() == "keep me"


def test_a_busy_preferred_port_is_replaced_and_said(capsys):
    import socket

    from demo.federation import port_or_free

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        busy = listener.getsockname()[1]
        port = port_or_free(busy, "the broker")
    assert port != busy
    assert capsys.readouterr().out == (
        f"port {busy} is in use by another process: the broker listens on {port} instead\n"
    )


def test_once_says_what_it_stopped_and_prints_no_dead_urls(tmp_path):
    """Run with the dev extras unimportable (``runtime_only/sitecustomize.py``), as after
    ``make demo``, which installs only the runtime dependencies."""
    runtime_only = Path(__file__).parent / "runtime_only"
    result = subprocess.run(
        [sys.executable, "-m", "demo", "--once", "--data", str(tmp_path / "demo")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(runtime_only), str(REPO)])},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last == (
        f"--once: stopped broker, sn-hospital, fr-research and ng-health; logs and databases "
        f"in {tmp_path / 'demo'}/"
    )
    assert "/docs" not in result.stdout and "press Ctrl-C" not in result.stdout
    logs = {path.name: path.read_text() for path in (tmp_path / "demo").glob("*.log")}
    assert len(logs) == 4
    for name, text in logs.items():
        assert "Traceback" not in text, name
        assert "GET /livez" not in text and "GET /readyz" not in text, name  # probes are quiet

"""Start-up: self-registration with the admin token, the key file, and clear failures."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading

import httpx
import pytest

from broker.main import create_app as create_broker
from tests.member_cloud.conftest import (
    ADMIN_TOKEN,
    REPO,
    LiveServer,
    StartFailed,
    broker_settings,
    closed_port,
    free_socket,
    unique_id,
)


def key_file(server: LiveServer):
    return server.app.state.settings.api_key_file


def stored_key(server: LiveServer) -> str:
    return json.loads(key_file(server).read_text())["api_key"]


def test_a_member_registers_itself_and_keeps_its_key(broker, admin, members):
    member_id = unique_id("sn")
    server = members.start(member_id, "SN", admin_token=ADMIN_TOKEN, broker_url=broker.url)

    path = key_file(server)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    record = json.loads(path.read_text())
    assert record["member_id"] == member_id
    assert record["broker_url"] == broker.url
    assert server.app.state.broker._http.headers["Authorization"] == f"Bearer {record['api_key']}"

    registered = admin.get(f"/v1/members/{member_id}").json()
    assert registered["jurisdiction"] == "SN"
    assert registered["inbox_url"] == f"{server.url}/inbox"
    as_member = httpx.get(
        f"{broker.url}/v1/members/{member_id}",
        headers={"Authorization": f"Bearer {record['api_key']}"},
    )
    assert as_member.status_code == 200


def test_a_restart_reuses_the_key_without_registering_again(broker, members):
    member_id = unique_id("sn")
    first = members.start(member_id, "SN", admin_token=ADMIN_TOKEN, broker_url=broker.url)
    key, port = stored_key(first), first.port
    members.stop(first)

    # With the admin token still set: a second registration would be refused (409) and stop it.
    again = members.start(
        member_id, "SN", port=port, admin_token=ADMIN_TOKEN, broker_url=broker.url
    )
    assert stored_key(again) == key
    members.stop(again)

    # Without the admin token: the key file alone is enough.
    alone = members.start(member_id, "SN", port=port, broker_url=broker.url)
    assert alone.app.state.broker._http.headers["Authorization"] == f"Bearer {key}"


def test_an_id_the_broker_already_knows_stops_the_start(broker, admin, members):
    member_id = unique_id("sn")
    admin.post(
        "/v1/members",
        json={
            "id": member_id,
            "name": "x",
            "jurisdiction": "SN",
            "inbox_url": "http://127.0.0.1:9/inbox",
        },
    ).raise_for_status()

    with pytest.raises(StartFailed, match=r"already registered.*set MEMBER_API_KEY"):
        members.start(member_id, "SN", admin_token=ADMIN_TOKEN, broker_url=broker.url)
    assert not (members.tmp_path / member_id / "broker_api_key").exists()


def test_a_key_file_the_broker_does_not_accept_is_replaced_with_the_admin_token(broker, members):
    member_id = unique_id("sn")
    data_dir = members.tmp_path / member_id
    data_dir.mkdir()
    stale = {"member_id": member_id, "api_key": "from-a-broker-since-reset"}
    (data_dir / "broker_api_key").write_text(json.dumps(stale))

    with pytest.raises(StartFailed, match="does not accept the key"):
        members.start(member_id, "SN", broker_url=broker.url)

    server = members.start(member_id, "SN", admin_token=ADMIN_TOKEN, broker_url=broker.url)
    assert stored_key(server) != stale["api_key"]


def test_a_key_file_of_another_member_stops_the_start(broker, members):
    member_id = unique_id("sn")
    data_dir = members.tmp_path / member_id
    data_dir.mkdir()
    (data_dir / "broker_api_key").write_text(json.dumps({"member_id": "other", "api_key": "k"}))

    with pytest.raises(StartFailed, match="belongs to member 'other'"):
        members.start(member_id, "SN", admin_token=ADMIN_TOKEN, broker_url=broker.url)


def test_the_member_waits_for_a_broker_that_starts_late(tmp_path, members):
    sock = free_socket()  # bound, not listening yet: connections are refused
    late = LiveServer(create_broker(broker_settings(tmp_path)), sock)
    starter = threading.Timer(0.3, late.start)
    starter.start()
    try:
        server = members.start(
            unique_id("sn"),
            "SN",
            admin_token=ADMIN_TOKEN,
            broker_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
            start_attempts=8,
            start_backoff_seconds=0.1,
        )
        assert key_file(server).exists()
    finally:
        starter.join()
        late.stop()


def test_a_broker_that_never_answers_stops_the_start(members):
    with pytest.raises(StartFailed, match=r"does not answer.*after 2 tries"):
        members.start(
            unique_id("sn"),
            "SN",
            admin_token=ADMIN_TOKEN,
            broker_url=f"http://127.0.0.1:{closed_port()}",
            start_attempts=2,
            start_backoff_seconds=0.01,
        )


def run_module(env: dict[str, str], cwd) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMBER_")}
    return subprocess.run(
        [sys.executable, "-m", "member_cloud"],
        env=clean | {"PYTHONPATH": str(REPO)} | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_python_m_member_cloud_refuses_a_known_id_in_one_line(broker, admin, tmp_path):
    member_id = unique_id("sn")
    admin.post(
        "/v1/members",
        json={
            "id": member_id,
            "name": "x",
            "jurisdiction": "SN",
            "inbox_url": "http://127.0.0.1:9/inbox",
        },
    ).raise_for_status()

    result = run_module(
        {
            "MEMBER_ID": member_id,
            "MEMBER_JURISDICTION": "SN",
            "MEMBER_PORT": str(closed_port()),
            "MEMBER_BROKER_URL": broker.url,
            "MEMBER_ADMIN_TOKEN": ADMIN_TOKEN,
        },
        tmp_path,
    )

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "cannot start" in line]
    assert f"member {member_id!r} is already registered" in line
    assert "set MEMBER_API_KEY" in line


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "MEMBER_ID is not set; MEMBER_JURISDICTION is not set"),
        (
            {"MEMBER_ID": "sn-a", "MEMBER_JURISDICTION": "SN"},
            "set MEMBER_API_KEY (the key the broker issued for this member) or "
            "MEMBER_ADMIN_TOKEN (to register this member at start)",
        ),
        (
            {
                "MEMBER_ID": "sn-a",
                "MEMBER_JURISDICTION": "SN",
                "MEMBER_API_KEY": "k",
                "MEMBER_PORT": "x",
            },
            "MEMBER_PORT: Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            {
                "MEMBER_ID": "sn-a",
                "MEMBER_JURISDICTION": "SN",
                "MEMBER_API_KEY": "k",
                "MEMBER_HOST": "0.0.0.0",
            },
            "set MEMBER_LOCAL_TOKEN (16+ characters): without it the member cloud's API is "
            "open, so it listens only on a loopback address (127.0.0.1, ::1, localhost), not "
            "on MEMBER_HOST='0.0.0.0'",
        ),
        (
            {
                "MEMBER_ID": "sn-a",
                "MEMBER_JURISDICTION": "SN",
                "MEMBER_API_KEY": "k",
                "MEMBER_LOCAL_TOKEN": "too-short",
            },
            "MEMBER_LOCAL_TOKEN: must be at least 16 characters long",
        ),
    ],
)
def test_python_m_member_cloud_reports_bad_settings_in_one_line(tmp_path, env, expected):
    result = run_module(env, tmp_path)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"member_cloud: {expected}"]


def test_python_m_member_cloud_refuses_a_busy_port_in_one_line(tmp_path):
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = run_module(
            {
                "MEMBER_ID": "sn-busy",
                "MEMBER_JURISDICTION": "SN",
                "MEMBER_PORT": str(port),
                "MEMBER_BROKER_URL": f"http://127.0.0.1:{closed_port()}",
                "MEMBER_API_KEY": "fbk_" + "x" * 40,
                "MEMBER_DATA_DIR": str(tmp_path / "data"),
            },
            tmp_path,
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"member_cloud: port {port} on 127.0.0.1 is in use by another process: choose another "
        "with MEMBER_PORT"
    )

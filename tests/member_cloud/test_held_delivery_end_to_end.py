"""A member cloud that goes down and comes back: the broker's health checks see it, the delivery
to it waits without spending attempts, and arrives once it is up again. Real member clouds and a
real broker (delivery worker and health checker threads on), each a uvicorn server on 127.0.0.1.
"""

from __future__ import annotations

import time

import httpx
import pytest

from broker.main import create_app as create_broker
from tests.member_cloud.conftest import (
    ADMIN_TOKEN,
    FIXTURES,
    LiveServer,
    broker_settings,
    free_socket,
    unique_id,
    wait_for,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def checking_broker(tmp_path):
    settings = broker_settings(
        tmp_path,
        delivery_enabled=True,
        delivery_poll_seconds=0.05,
        delivery_backoff_seconds=0.1,
        health_check_seconds=0.5,
        health_check_timeout_seconds=0.4,
        health_check_down_after=2,
    )
    server = LiveServer(create_broker(settings), free_socket()).start()
    yield server
    server.stop()


def health(broker_url: str, member_id: str) -> str:
    answer = httpx.get(f"{broker_url}/v1/members/{member_id}", headers=ADMIN, timeout=10)
    return answer.json()["health"]["state"]


def delivery(broker_url: str, transfer_id: str) -> dict:
    answer = httpx.get(f"{broker_url}/v1/transfers/{transfer_id}", headers=ADMIN, timeout=10)
    return answer.json()["delivery"]


def test_a_delivery_waits_for_a_member_that_is_down_and_arrives_once_it_is_up(
    checking_broker, members
):
    broker_url = checking_broker.url
    fr_id = unique_id("fr")
    sn = members.start(unique_id("sn"), "SN", admin_token=ADMIN_TOKEN, broker_url=broker_url)
    fr = members.start(fr_id, "FR", admin_token=ADMIN_TOKEN, broker_url=broker_url)
    port, data_dir = fr.port, fr.app.state.settings.data_dir
    wait_for(lambda: health(broker_url, fr_id) == "up")

    members.stop(fr)  # the French member cloud goes down
    wait_for(lambda: health(broker_url, fr_id) == "down")
    data = (FIXTURES / "patients_published.csv").read_bytes()
    with httpx.Client(base_url=sn.url, timeout=30) as source:
        source.post("/datasets", files={"file": ("patients.csv", data, "text/csv")})
        decision = source.post(
            "/transfers",
            json={
                "dataset": "patients.csv",
                "destination": fr_id,
                "purpose": "research",
                "quasi_identifiers": ["Age", "Gender"],
                "sensitive": ["Disease"],
            },
        ).json()
    assert decision["status"] == "approved", decision
    transfer_id = decision["id"]
    time.sleep(1.5)  # 30 delivery polls, 3 health periods
    held = delivery(broker_url, transfer_id)
    assert (held["status"], held["attempts"], held["last_error"]) == ("held", 0, None)

    fr = members.start(fr_id, "FR", port=port, data_dir=data_dir, broker_url=broker_url)
    done = wait_for(lambda: (d := delivery(broker_url, transfer_id))["status"] == "delivered" and d)
    assert done["attempts"] == 1  # the one that arrived: nothing spent while it was down
    with httpx.Client(base_url=fr.url, timeout=10) as destination:
        meta = destination.get(f"/inbox/{transfer_id}/meta").json()
    assert meta["sha256"] == decision["dataset"]["delivered_sha256"]
    audit = httpx.get(f"{broker_url}/v1/audit?limit=500", headers=ADMIN, timeout=10).json()
    changes = [
        (e["details"]["from"], e["details"]["to"])
        for e in audit["items"]
        if e["action"] == "member.health_changed" and e["subject"] == fr_id
    ]
    assert changes == [("unknown", "up"), ("up", "down"), ("down", "up")]

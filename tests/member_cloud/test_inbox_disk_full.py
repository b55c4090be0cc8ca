"""A destination whose inbox disk is full: it answers 507 (try again), keeps no part of the
delivery, and stores it once when room is back; the broker keeps trying meanwhile."""

from __future__ import annotations

import httpx

from broker.main import create_app as create_broker
from tests.faults import files_under, fill, small_filesystem
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


def test_a_full_inbox_answers_507_and_the_delivery_arrives_once_when_room_is_back(
    tmp_path, members
):
    settings = broker_settings(
        tmp_path / "broker",
        delivery_enabled=True,
        delivery_poll_seconds=0.05,
        delivery_backoff_seconds=0.1,
        delivery_backoff_max_seconds=0.3,  # the inbox's Retry-After (30 s) is capped by it
        delivery_max_attempts=1000,
    )
    broker = LiveServer(create_broker(settings), free_socket()).start()
    fr_id = unique_id("fr")
    try:
        with small_filesystem(tmp_path / fr_id / "inbox", "1m") as inbox:
            sn = members.start(
                unique_id("sn"), "SN", admin_token=ADMIN_TOKEN, broker_url=broker.url
            )
            fr = members.start(fr_id, "FR", admin_token=ADMIN_TOKEN, broker_url=broker.url)
            ballast = fill(inbox, leave=0)
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
            url = f"{broker.url}/v1/transfers/{decision['id']}"

            def refused_twice():
                delivery = httpx.get(url, headers=ADMIN).json()["delivery"]
                return delivery if delivery["attempts"] >= 2 else None

            delivery = wait_for(refused_twice)
            assert delivery["status"] == "pending", delivery
            assert "HTTP 507" in delivery["last_error"], delivery
            assert "insufficient-storage" in delivery["last_error"], delivery
            assert files_under(inbox, but=(ballast,)) == []  # no part of it kept

            ballast.unlink()
            with httpx.Client(base_url=fr.url, timeout=10) as destination:

                def arrived():
                    answer = destination.get(f"/inbox/{decision['id']}/meta")
                    return answer.json() if answer.status_code == 200 else None

                meta = wait_for(arrived)
                stored = destination.get(f"/inbox/{decision['id']}").content
                listed = destination.get("/inbox").json()
            assert meta["sha256"] == decision["dataset"]["delivered_sha256"]
            assert sorted(stored.splitlines()[1:]) == sorted(data.splitlines()[1:])
            assert [entry["transfer_id"] for entry in listed] == [decision["id"]]
            for server in list(members.running):  # before the inbox's filesystem goes
                members.stop(server)
    finally:
        broker.stop()

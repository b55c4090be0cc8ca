"""The whole path: member SN asks, the broker decides and delivers, member FR's inbox has it."""

from __future__ import annotations

import hashlib
import json

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


@pytest.fixture(scope="module")
def delivering_broker(tmp_path_factory):
    settings = broker_settings(
        tmp_path_factory.mktemp("delivering"),
        delivery_enabled=True,
        delivery_poll_seconds=0.05,
        delivery_backoff_seconds=0.1,
    )
    server = LiveServer(create_broker(settings), free_socket()).start()
    yield server
    server.stop()


@pytest.fixture
def federation(delivering_broker, members):
    sn = members.start(
        unique_id("sn"), "SN", admin_token=ADMIN_TOKEN, broker_url=delivering_broker.url
    )
    fr = members.start(
        unique_id("fr"), "FR", admin_token=ADMIN_TOKEN, broker_url=delivering_broker.url
    )
    with (
        httpx.Client(base_url=sn.url, timeout=30) as source,
        httpx.Client(base_url=fr.url, timeout=10) as destination,
    ):
        yield source, destination, fr.app.state.settings.id


def delivery_status(broker_url: str, transfer_id: str) -> str:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def delivered():
        answer = httpx.get(f"{broker_url}/v1/transfers/{transfer_id}", headers=headers)
        status = answer.json()["delivery"]["status"]
        return status if status != "pending" else None

    return wait_for(delivered)


def arrived(client: httpx.Client, transfer_id: str):
    answer = client.get(f"/inbox/{transfer_id}/meta")
    return answer.json() if answer.status_code == 200 else None


def test_an_approved_transfer_arrives_in_the_destinations_inbox(federation, delivering_broker):
    source, destination, fr_id = federation
    broker_url = delivering_broker.url
    data = (FIXTURES / "patients_published.csv").read_bytes()
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

    meta = wait_for(lambda: arrived(destination, decision["id"]))
    assert meta["source"] == decision["source"]
    assert meta["decision"] == "approved"
    assert meta["purpose"] == "research"
    assert meta["anonymized"] is False
    arrived_bytes = destination.get(f"/inbox/{decision['id']}").content
    assert meta["sha256"] == hashlib.sha256(arrived_bytes).hexdigest()
    assert meta["sha256"] == decision["dataset"]["delivered_sha256"]
    # The broker writes what it measured: the same rows (shuffled), never the upload's bytes.
    assert sorted(arrived_bytes.decode().splitlines()[1:]) == sorted(data.decode().splitlines()[1:])
    assert delivery_status(broker_url, decision["id"]) == "delivered"


def test_an_aggregate_release_is_asked_through_the_member_and_read_in_the_inbox(
    federation, delivering_broker
):
    source, destination, fr_id = federation
    data = (FIXTURES / "patients_original.csv").read_bytes()
    source.post("/datasets", files={"file": ("patients.csv", data, "text/csv")})
    decision = source.post(
        "/transfers",
        json={
            "dataset": "patients.csv",
            "destination": fr_id,
            "purpose": "research",
            "kind": "aggregate",
            "queries": [
                {"type": "count_by", "columns": ["Gender"], "keys": {"Gender": ["F", "M"]}},
                {"type": "mean", "column": "Age", "bounds": [0, 100]},
            ],
            "epsilon": "1",
        },
    ).json()
    # the raw table (NIN, names) may not cross; its statistics may
    assert (decision["status"], decision["kind"]) == ("approved", "aggregate"), decision
    meta = wait_for(lambda: arrived(destination, decision["id"]))
    assert meta["content_type"] == "application/json"
    released = destination.get(f"/inbox/{decision['id']}").json()
    assert released["kind"] == "aggregate" and released["epsilon"] == "1"
    by_gender, mean = released["answers"]
    assert [c["key"] for c in by_gender["result"]["cells"]] == [["F"], ["M"]]
    assert by_gender["accuracy"]["half_width"] > 0 and "interval" in mean["result"]
    assert "Khady" not in json.dumps(released) and "25580917" not in json.dumps(released)
    refused = source.post(
        "/transfers",
        json={
            "dataset": "patients.csv",
            "destination": fr_id,
            "purpose": "research",
            "kind": "aggregate",
            "queries": [{"type": "sum", "column": "Age"}],
            "epsilon": "1",
        },
    )
    assert refused.status_code == 422 and "bounds are required" in refused.json()["detail"]

"""The data market from the member clouds' side, over real HTTP: SN publishes a dataset, FR finds
it, asks for it, SN offers stricter terms, FR accepts and (after checking the broker's signature)
confirms; SN's transfer under the agreement arrives anonymized with the agreement and its
retention; once the retention ends, FR deletes it and tells the broker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.member_cloud.conftest import ADMIN_TOKEN, FIXTURES, unique_id, wait_for
from tests.member_cloud.test_delivery_end_to_end import arrived, delivering_broker  # noqa: F401

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def pair(delivering_broker, members):  # noqa: F811
    sn = members.start(
        unique_id("sn"), "SN", admin_token=ADMIN_TOKEN, broker_url=delivering_broker.url
    )
    fr = members.start(
        unique_id("fr"), "FR", admin_token=ADMIN_TOKEN, broker_url=delivering_broker.url
    )
    with (
        httpx.Client(base_url=sn.url, timeout=30) as provider,
        httpx.Client(base_url=fr.url, timeout=30) as consumer,
    ):
        yield provider, consumer, sn, fr


def test_a_negotiated_exchange_end_to_end(pair, delivering_broker):  # noqa: F811
    provider, consumer, sn, fr = pair
    data = (FIXTURES / "patients_original.csv").read_bytes()
    provider.post("/datasets", files={"file": ("patients.csv", data, "text/csv")})
    published = provider.post(
        "/catalog",
        json={
            "dataset": "patients.csv",
            "title": f"Admissions {sn.app.state.settings.id}",
            "quasi_identifiers": ["Age", "Gender"],
            "sensitive": ["Disease"],
            "purposes": ["research"],
        },
    )
    assert published.status_code == 201, published.text
    entry = published.json()
    assert [c["role"] for c in entry["description"]["columns"]][2:] == [
        "quasi_identifier",
        "quasi_identifier",
        "sensitive",
    ]
    assert entry["summary"]["rows"] == 9  # measured: figures only

    found = consumer.get("/catalog", params={"provider": sn.app.state.settings.id})
    [dataset] = [d for d in found.json()["dcat:dataset"] if d["dct:identifier"] == entry["id"]]
    [offer] = dataset["odrl:hasPolicy"]
    assert offer["fedbroker:offerKind"] == "anonymized"

    asked = consumer.post(
        "/negotiations",
        json={"dataset_id": entry["id"], "purpose": "research", "retention_days": 30},
    )
    assert asked.status_code == 201, asked.text
    negotiation = asked.json()["id"]
    offered = provider.post(f"/negotiations/{negotiation}/offer", json={"terms": {"min_k": 5}})
    assert offered.json()["state"] == "OFFERED", offered.text
    accepted = consumer.post(f"/negotiations/{negotiation}/accept")
    assert accepted.json()["state"] == "AGREED"
    verified = consumer.post(f"/negotiations/{negotiation}/verify")
    assert verified.json()["state"] == "FINALIZED", verified.text
    agreement = verified.json()["agreement_id"]

    decision = provider.post(
        "/transfers",
        json={
            "dataset": "patients.csv",
            "destination": fr.app.state.settings.id,
            "purpose": "research",
            "quasi_identifiers": ["Age", "Gender"],
            "sensitive": ["Disease"],
            "anonymize": "auto",
            "agreement_id": agreement,
        },
    ).json()
    assert decision["status"] == "approved", decision["rules"]
    assert decision["report"]["quasi_identifiers"]["k"] >= 5  # the agreement's k, not FR's 3
    meta = wait_for(lambda: arrived(consumer, decision["id"]))
    assert (meta["agreement"], meta["anonymized"]) == (agreement, True)
    until = datetime.fromisoformat(meta["retain_until"])
    assert until - datetime.fromisoformat(decision["created_at"]) < timedelta(days=30, seconds=1)

    # The retention ends: FR deletes the data and tells the broker.
    keeper = fr.app.state.retention
    assert keeper.run_once(datetime.now(UTC)) == []
    assert keeper.run_once(until + timedelta(seconds=1)) == [decision["id"]]
    gone = consumer.get(f"/inbox/{decision['id']}")
    assert gone.status_code == 404 and "deleted" in gone.json()["detail"]
    assert consumer.get(f"/inbox/{decision['id']}/meta").json()["erased_at"]
    told = httpx.get(f"{delivering_broker.url}/v1/transfers/{decision['id']}", headers=ADMIN).json()
    assert told["erased_at"]
    assert keeper.run_once(until + timedelta(days=1)) == []  # told once


def test_a_forged_agreement_signature_is_not_confirmed(pair, monkeypatch):
    provider, consumer, _sn, fr = pair
    data = (FIXTURES / "patients_original.csv").read_bytes()
    provider.post("/datasets", files={"file": ("p.csv", data, "text/csv")})
    entry = provider.post(
        "/catalog",
        json={"dataset": "p.csv", "title": "t", "quasi_identifiers": ["Age", "Gender"]},
    ).json()
    negotiation = consumer.post(
        "/negotiations", json={"dataset_id": entry["id"], "purpose": "research"}
    ).json()["id"]
    provider.post(f"/negotiations/{negotiation}/offer", json={})
    consumer.post(f"/negotiations/{negotiation}/accept")
    broker = fr.app.state.broker
    real = broker.get_agreement

    def tampered(agreement_id):
        found = real(agreement_id)
        found.document["terms"]["min_k"] = 1  # what a man in the middle would say
        return found

    monkeypatch.setattr(broker, "get_agreement", tampered)
    answer = consumer.post(f"/negotiations/{negotiation}/verify")
    assert answer.status_code == 502 and "does not verify" in answer.json()["detail"]
    assert broker.get_negotiation(negotiation).state == "AGREED"  # nothing confirmed


def test_publishing_names_a_missing_column(pair):
    provider, _consumer, _sn, _fr = pair
    provider.post("/datasets", files={"file": ("p.csv", b"a,b\n1,2\n", "text/csv")})
    answer = provider.post(
        "/catalog", json={"dataset": "p.csv", "title": "t", "quasi_identifiers": ["zip"]}
    )
    assert answer.status_code == 400
    assert "No column 'zip' in 'p.csv'; its columns: a, b" in answer.json()["detail"]

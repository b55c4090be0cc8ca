"""Concurrent releases cannot overspend: parallel requests against a real broker (uvicorn, its
own thread pool) on a real database, PostgreSQL and SQLite.

Twelve releases of epsilon 0.5 of one dataset are sent at once; FR (import) allows 2 per
dataset and destination, so exactly four may be approved. Without the ledger's lock
(``broker/transfers/ledger.py:lock_pair``) on PostgreSQL several requests read the same
standing before any of them commits, and more than four are approved (checked by hand: with
the lock removed, the PostgreSQL case failed in two runs of three; SQLite's BEGIN IMMEDIATE
serializes the transactions anyway).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import httpx
import numpy as np
import pandas as pd
import pytest
from sqlalchemy import create_engine, text

from broker.config import Settings
from broker.main import create_app
from tests.conftest import ADMIN_TOKEN, POLICIES, postgres_database
from tests.servers import ServerThread

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PARALLEL = 12


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def broker(request, tmp_path):
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path / 'broker.db'}", (lambda: None)
    else:
        url, drop = postgres_database()
    settings = Settings(
        database_url=url,
        signing_key_dir=tmp_path / "keys",
        spool_dir=tmp_path / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        delivery_enabled=False,
        jobs_enabled=False,
        rate_limit="1000/minute",
    )
    server = ServerThread(create_app(settings)).start()
    try:
        yield server.url, url
    finally:
        server.stop()
        drop()


def register(base: str, member: str, jurisdiction: str) -> str:
    answer = httpx.post(
        f"{base}/v1/members",
        headers=ADMIN,
        json={
            "id": member,
            "name": member,
            "jurisdiction": jurisdiction,
            "inbox_url": f"http://127.0.0.1:9/{member}/inbox",
        },
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["api_key"]


def test_parallel_releases_never_spend_more_than_the_budget(broker):
    base, url = broker
    key = register(base, "sn-hospital", "SN")
    register(base, "fr-research", "FR")
    rng = np.random.default_rng(4)
    data = pd.DataFrame({"sex": rng.choice(["F", "M"], 400), "age": rng.integers(0, 99, 400)})
    body = data.to_csv(index=False).encode()

    def send(_):
        return httpx.post(
            f"{base}/v1/transfers",
            headers={"Authorization": f"Bearer {key}"},
            files={"file": ("data.csv", body, "text/csv")},
            data={
                "destination": "fr-research",
                "purpose": "research",
                "kind": "aggregate",
                "queries": json.dumps([{"type": "count"}]),
                "epsilon": "0.5",
            },
            timeout=60,
        )

    with ThreadPoolExecutor(PARALLEL) as pool:
        answers = list(pool.map(send, range(PARALLEL)))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    statuses = sorted(a.json()["status"] for a in answers)
    assert statuses == ["approved"] * 4 + ["rejected"] * (PARALLEL - 4)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT epsilon FROM privacy_spends")).all()
    finally:
        engine.dispose()
    assert sum((Fraction(e) for (e,) in rows), Fraction(0)) == 2
    refused = [a.json() for a in answers if a.json()["status"] == "rejected"]
    assert all(
        [r["rule"] for r in body["rules"] if not r["passed"]] == ["epsilon_budget"]
        for body in refused
    )

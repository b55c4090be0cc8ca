"""A hostile member against aggregate releases: differencing. Two releases of one table, one
with a person and one without, would give that person's contribution by subtraction if each
had a fresh budget. Differential privacy covers differencing exactly when both releases are
charged to one budget: the guarantee composes (epsilon_1 + epsilon_2), and the budget of that
dataset then refuses what would go past it. Through a real broker: the second release is
charged to the dataset of the first (the same ``dataset_key``), for a person of one row and for
a person of 150 rows (a fifth of the table), and once that budget is spent, with or without the
person, the next release is refused and nothing reaches fr-research (FR).

Each test sends as a source of its own (a fresh SN member). Nothing here imports the broker.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pandas as pd
import pytest

from tests.adversarial.conftest import settle

COUNT = [{"type": "count"}, {"type": "count_by", "columns": ["ward"], "keys": {"ward": ["A"]}}]


def fresh_source(broker) -> str:
    member = f"sn-{uuid.uuid4().hex[:8]}"
    broker.register(member, "SN", f"http://127.0.0.1:9/{member}/inbox")
    return member


def release(broker, source, frame: pd.DataFrame, epsilon: str):
    return broker.post(
        frame.to_csv(index=False).encode(),
        "data.csv",
        source=source,
        kind="aggregate",
        queries=json.dumps(COUNT),
        epsilon=epsilon,
        person_key="patient",
    ).json()


def table(person_rows: int, seed: int) -> pd.DataFrame:
    """600 people of one row each, and ``p-x`` with ``person_rows`` rows (visits numbered)."""
    rng = np.random.default_rng(seed)
    others = pd.DataFrame(
        {
            "patient": [f"p{i}" for i in range(600)],
            "ward": rng.choice(["A", "B", "C"], 600),
            "visit": rng.integers(1, 9, 600),
        }
    )
    person = pd.DataFrame(
        {"patient": "p-x", "ward": "A", "visit": range(1, person_rows + 1)},
    )
    return pd.concat([others, person], ignore_index=True).sample(frac=1, random_state=seed)


@pytest.mark.parametrize("person_rows", [1, 150])
def test_a_release_one_person_apart_is_charged_to_the_same_dataset(broker, person_rows):
    source = fresh_source(broker)
    with_person = table(person_rows, seed=50 + person_rows)
    without = with_person[with_person.patient != "p-x"]
    first = release(broker, source, with_person, "1")
    second = release(broker, source, without, "1")
    assert [first["status"], second["status"]] == ["approved", "approved"]
    keys = {broker.transfer(a["id"])["aggregate"]["dataset_key"] for a in (first, second)}
    assert len(keys) == 1, "the release without the person got a budget of its own"
    for answer in (first, second):
        _headers, body = broker.delivered_for(answer["id"])
        assert json.loads(body)["epsilon"] == "1"
    # FR's budget of 2 for this dataset is spent: a third release, either way, is refused
    for frame in (with_person, without):
        third = release(broker, source, frame, "0.1")
        failed = {r["rule"] for r in third["rules"] if not r["passed"]}
        assert third["status"] == "rejected" and "epsilon_budget" in failed
        settle(broker, third)  # refused: nothing reaches the inbox

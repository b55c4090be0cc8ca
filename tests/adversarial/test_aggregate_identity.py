"""A hostile member against aggregate releases, third round: what the keys of an answer carry,
what one person with many rows can push through a threshold, and what a copy of a dataset is.
Through a real broker, judged on what fr-research (FR) receives.

- **Identifiers as declared keys.** A ``count_by`` whose declared keys are national ids or
  e-mail addresses (plain, full-width, split by invisible characters) would deliver them as
  cell names: refused (422), the value never echoed, nothing delivered.
- **One person, 150 rows.** Their e-mail address as a key taken from the data: the column is
  refused (its content identifies people). Their own village as a key, with a person key: each
  person counts once, and the village never reaches the inbox.
- **A fresh budget from a copy.** The same table renamed, with its columns and rows moved,
  written as JSON or Parquet, with a byte order mark and a trailing newline, or with one cell
  changed, meets the budget the first one spent; so does a copy counted out of core. Other
  people's table does not (the check can fail).

Each test sends as a source of its own (a fresh SN member). Nothing here imports the broker.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pandas as pd
import pytest

from tests.adversarial.conftest import settle

EMAIL = "awa.diop@example.sn"
NIR = "185057800608491"  # a French NIR with a valid key
VILLAGE = "Ndiaganiao"
COUNT = [{"type": "count"}]


def fresh_source(broker) -> str:
    member = f"sn-{uuid.uuid4().hex[:8]}"
    broker.register(member, "SN", f"http://127.0.0.1:9/{member}/inbox")
    return member


def release(broker, source, data, queries, epsilon="0.5", filename="data.csv", **form):
    return broker.post(
        data,
        filename,
        source=source,
        kind="aggregate",
        queries=json.dumps(queries),
        epsilon=epsilon,
        **form,
    )


def delivered_from(broker, source) -> list[bytes]:
    return [body for headers, body in broker.inbox.received if source in json.dumps(headers)]


def patients(rows: int = 600, seed: int = 21) -> pd.DataFrame:
    """People of two rows each, and one person (``p-x``) with 150 rows."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "patient": [f"p{i // 2}" for i in range(rows)],
            "village": rng.choice(["Dakar", "Thies", "Kaolack"], rows),
            "contact": rng.choice(["ward A", "ward B", "ward C"], rows),
            "age": rng.integers(1, 95, rows),
        }
    )
    dominant = pd.DataFrame(
        {"patient": "p-x", "village": VILLAGE, "contact": EMAIL, "age": 40}, index=range(150)
    )
    return pd.concat([frame, dominant], ignore_index=True)


@pytest.mark.parametrize(
    "keys",
    [
        ["Dakar", *(f"{NIR[:-2]}{k:02d}" for k in range(80))],  # 80 numbers, one a valid NIR
        ["Dakar", EMAIL],
        ["Dakar", "ａｗａ．ｄｉｏｐ＠ｅｘａｍｐｌｅ．ｓｎ"],  # full-width
        ["Dakar", "awa.diop@\u200bexample.sn"],  # a zero-width space
        ["Dakar", "1 85 05 78 006 084 91"],  # a NIR with spaces
    ],
    ids=["80 national ids", "e-mail", "full-width e-mail", "hidden e-mail", "spaced NIR"],
)
def test_declared_keys_holding_identifiers_are_refused_and_never_echoed(broker, keys):
    source = fresh_source(broker)
    data = patients().drop(columns=["patient"]).to_csv(index=False).encode()
    asked = [{"type": "count_by", "columns": ["village"], "keys": {"village": keys}}]
    answer = release(broker, source, data, asked)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert "query 1" in problem["detail"] and "key 2 of 'village'" in problem["detail"]
    for key in keys[1:]:
        assert key not in answer.text and key.replace(" ", "") not in answer.text
    assert delivered_from(broker, source) == []


def test_a_persons_email_from_the_data_is_refused_as_a_key_column(broker):
    source = fresh_source(broker)
    data = patients().to_csv(index=False).encode()
    asked = [{"type": "count_by", "columns": ["contact"]}]
    for person_key in (None, "patient"):
        answer = release(broker, source, data, asked, delta="1e-6", person_key=person_key)
        assert answer.status_code == 422, answer.text
        assert "'contact' look like emails" in answer.json()["detail"]
        assert EMAIL not in answer.text
    assert delivered_from(broker, source) == []


def test_a_person_with_150_rows_never_puts_their_own_village_through_the_threshold(broker):
    source = fresh_source(broker)
    data = patients(seed=22).to_csv(index=False).encode()
    asked = [{"type": "count_by", "columns": ["village"]}]
    # their village is their key alone: refused, with or without a person key
    for person_key in ("patient", None):
        answer = release(broker, source, data, asked, delta="1e-6", person_key=person_key)
        assert answer.status_code == 422, answer.text
        assert "is one person's" in answer.json()["detail"]
        assert VILLAGE not in answer.text and EMAIL not in answer.text
    # counted without that person's village: each person counts once
    documents = []
    shared = patients(seed=22).assign(
        village=lambda f: f.village.where(f.patient != "p-x", "Dakar")
    )
    for _ in range(4):  # 4 x 0.5 = FR's budget of 2 for this dataset
        answer = release(
            broker,
            source,
            shared.to_csv(index=False).encode(),
            asked,
            delta="1e-6",
            person_key="patient",
        )
        _headers, body = settle(broker, answer.json())
        documents.append(json.loads(body))
    text = json.dumps(documents)
    assert VILLAGE not in text and EMAIL not in text and "p-x" not in text
    for document in documents:
        [answer] = document["answers"]
        assert answer["contributions"] == 1  # BROKER_AGGREGATE_CONTRIBUTIONS
        assert {c["key"][0] for c in answer["result"]["cells"]} <= {"Dakar", "Thies", "Kaolack"}
        assert "at most 1 row of each query" in document["guarantee"]
        # 301 people over three villages: each released count is about 100 (Dakar 101), not
        # the 250 rows Dakar holds with the person's 150
        assert all(c["count"] < 200 for c in answer["result"]["cells"])


def spend_the_dataset_budget(broker, source, frame: pd.DataFrame) -> None:
    """Two releases of epsilon 1: FR's 2 per dataset and destination, spent."""
    for _ in range(2):
        answer = release(broker, source, frame.to_csv(index=False).encode(), COUNT, "1")
        assert answer.json()["status"] == "approved"


def copies(frame: pd.DataFrame) -> list[tuple[str, bytes, str]]:
    changed = frame.copy()
    changed.loc[3, "age"] = 117
    moved = frame.sample(frac=1, random_state=4)[["age", "contact", "patient", "village"]]
    return [
        (
            "renamed and moved",
            moved.rename(columns={"village": "place"}).to_csv(index=False).encode(),
            "data.csv",
        ),
        ("JSON", frame.to_json(orient="records").encode(), "data.json"),
        ("Parquet", frame.to_parquet(index=False), "data.parquet"),
        (
            "BOM and newline",
            b"\xef\xbb\xbf" + frame.to_csv(index=False).encode() + b"\n",
            "data.csv",
        ),
        ("one cell changed", changed.to_csv(index=False).encode(), "data.csv"),
        ("quoted", frame.to_csv(index=False, quoting=1).encode(), "data.csv"),
    ]


def test_a_copy_of_a_dataset_meets_the_budget_the_first_spent(broker):
    source = fresh_source(broker)
    frame = patients(seed=23)
    spend_the_dataset_budget(broker, source, frame)
    for name, data, filename in copies(frame):
        answer = release(broker, source, data, COUNT, "0.1", filename).json()
        failed = {r["rule"] for r in answer["rules"] if not r["passed"]}
        assert answer["status"] == "rejected" and "epsilon_budget" in failed, name
        settle(broker, answer)  # refused: nothing reaches the inbox
    other = patients(seed=24).to_csv(index=False).encode()  # other people: a budget of its own
    assert release(broker, source, other, COUNT, "0.1").json()["status"] == "approved"


def test_a_copy_counted_out_of_core_meets_the_budget_too(out_of_core_broker):
    broker = out_of_core_broker
    source = fresh_source(broker)
    frame = patients(seed=25)
    spend_the_dataset_budget(broker, source, frame)
    for name, data, filename in copies(frame):
        if filename != "data.csv":
            continue  # out of core reads CSV only
        answer = release(broker, source, data, COUNT, "0.1", filename).json()
        assert answer["status"] == "rejected", name
        settle(broker, answer)

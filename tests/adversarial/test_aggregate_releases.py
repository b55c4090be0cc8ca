"""A hostile member against aggregate releases (statistics under differential privacy), through
a real broker and the bytes fr-research (FR) receives.

- **A rare category through a histogram key.** One patient lives in a village no one else in
  the table does; a histogram whose keys come from the data would name it (and, crossed with
  the diagnosis, say what they have). The broker releases keys from the data only above
  OpenDP's threshold, so the name never reaches the inbox, however often it is asked.
- **Overspending by racing.** Many releases of the same data sent at once: what reaches the
  inbox never spends more than the budget.
- **Resetting the budget by sending the data again.** The same table reordered, in another
  format or with its columns moved is the same dataset to the broker (keyed by its content)
  and meets the budget it spent (so does a copy with a changed row: see
  ``test_aggregate_identity.py``). A copy that changes every row (a column added) is another
  dataset: the broker cannot tell it is "the same people" (that is what the source, not the
  table, knows). What bounds that is ``source_epsilon_budget``: every release from one source
  to one destination counts there, whatever the dataset, so copies buy at most that much.

Each test sends as a source of its own (a fresh SN member), so that one test's spending does
not use another's budget in this session's broker. Nothing here imports the broker's code.
"""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pandas as pd

from tests.adversarial.conftest import settle

VILLAGE = "Ndiaganiao"


def fresh_source(broker) -> str:
    member = f"sn-{uuid.uuid4().hex[:8]}"
    broker.register(member, "SN", f"http://127.0.0.1:9/{member}/inbox")
    return member


def patients(rows: int = 400, seed: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "village": rng.choice(["Dakar", "Thies", "Kaolack"], rows),
            "diagnosis": rng.choice(["malaria", "flu", "diabetes"], rows),
            "age": rng.integers(1, 95, rows),
        }
    )
    frame.loc[17, ["village", "diagnosis"]] = [VILLAGE, "HIV"]
    return frame


def release(broker, source, frame_bytes, queries, epsilon, filename="data.csv", **form):
    return broker.post(
        frame_bytes,
        filename,
        source=source,
        kind="aggregate",
        queries=json.dumps(queries),
        epsilon=epsilon,
        **form,
    )


def received(broker, answer) -> dict | None:
    """What FR received for this decision (None when it was refused: then nothing may arrive)."""
    if answer["status"] != "approved":
        settle(broker, answer)
        return None
    _headers, body = broker.delivered_for(answer["id"])
    return json.loads(body)


def test_a_key_held_by_one_person_never_reaches_the_inbox(broker):
    source = fresh_source(broker)
    data = patients().to_csv(index=False).encode()
    asked = [{"type": "count_by", "columns": ["village", "diagnosis"]}]
    delivered = []
    for _ in range(4):  # 4 x 0.5 = FR's budget of 2 for this dataset
        answer = release(broker, source, data, asked, "0.5", delta="1e-6").json()
        delivered.append(received(broker, answer))
    assert all(d is not None for d in delivered)
    text = json.dumps(delivered)
    assert VILLAGE not in text and "HIV" not in text
    keys = {tuple(c["key"]) for d in delivered for c in d["answers"][0]["result"]["cells"]}
    assert keys and {k[0] for k in keys} <= {"Dakar", "Thies", "Kaolack"}
    # the budget of this dataset is spent: a fifth release is refused and nothing arrives
    fifth = release(broker, source, data, asked, "0.1", delta="1e-6").json()
    assert fifth["status"] == "rejected" and received(broker, fifth) is None


def test_declared_keys_answer_only_with_noise_and_nothing_else_leaks(broker):
    source = fresh_source(broker)
    data = patients(seed=9).to_csv(index=False).encode()
    asked = [
        {
            "type": "count_by",
            "columns": ["village", "diagnosis"],
            "keys": {"village": [VILLAGE], "diagnosis": ["HIV"]},
        }
    ]
    answer = release(broker, source, data, asked, "1").json()
    document = received(broker, answer)
    [cell] = document["answers"][0]["result"]["cells"]
    # the asker named the key: what it learns is a count with noise of scale 1/epsilon
    assert document["answers"][0]["scale"] >= 1.0
    assert cell["key"] == [VILLAGE, "HIV"] and isinstance(cell["count"], int)
    assert '"age"' not in json.dumps(document)  # a column not asked about never appears


def test_racing_releases_never_deliver_more_than_the_budget(broker):
    source = fresh_source(broker)
    data = patients(seed=10).to_csv(index=False).encode()

    def send(_):
        return release(broker, source, data, [{"type": "count"}], "0.5").json()

    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(send, range(10)))
    approved = [a for a in answers if a["status"] == "approved"]
    spent = sum((Fraction(received(broker, a)["epsilon"]) for a in approved), Fraction(0))
    assert spent <= 2 and len(approved) == 4
    for answer in answers:
        if answer["status"] != "approved":
            received(broker, answer)  # refused: nothing reaches the inbox


def test_sending_the_same_table_again_meets_the_budget_it_spent(broker):
    source = fresh_source(broker)
    frame = patients(seed=11)
    asked = [{"type": "count"}]
    first = release(broker, source, frame.to_csv(index=False).encode(), asked, "1").json()
    moved = frame.sample(frac=1, random_state=1)[["age", "diagnosis", "village"]]
    second = release(broker, source, moved.to_csv(index=False).encode(), asked, "1").json()
    as_json = frame.astype(str).to_json(orient="records").encode()
    third = release(broker, source, as_json, asked, "0.5", filename="data.json").json()
    assert [first["status"], second["status"], third["status"]] == [
        "approved",
        "approved",
        "rejected",
    ]
    assert received(broker, third) is None


def test_copies_that_change_every_row_are_bounded_by_the_source_budget(broker):
    source = fresh_source(broker)
    frame = patients(seed=12)
    asked = [{"type": "count"}]
    statuses = []
    for copy in range(6):  # each copy a new dataset of FR's 2; SN's 10 per source bounds them
        changed = frame.assign(batch=copy)  # every row differs from every other copy's
        data = changed.to_csv(index=False).encode()
        for _ in range(2):
            answer = release(broker, source, data, asked, "1").json()
            statuses.append(answer["status"])
            received(broker, answer)
    assert statuses.count("approved") == 10 and statuses[-2:] == ["rejected", "rejected"]

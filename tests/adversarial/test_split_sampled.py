"""Split identifiers the out-of-core engine finds by sampling, through a real broker: a card
number per row cut over four adjacent columns, so that the set has as many distinct tuples as
rows and is read on a keyed sample of them (broker.engines.duckdb.sampling), beside a
near-unique column; and the same sent to the in-memory broker. Each card is made valid by
python-stdnum's Luhn check digit, never by the broker's code."""

from __future__ import annotations

import pytest
from stdnum import luhn

from tests.adversarial.conftest import settle
from tests.adversarial.tables import csv_bytes, harmless, rng

ROWS = 12_000  # distinct cards: past the 1,000 tuples a set is read whole


def _cards(n: int, seed: int) -> list[str]:
    bodies = 411_100_000_000_000 + rng(seed).choice(10**10, n, replace=False)
    cards = [f"{b}{luhn.calc_check_digit(str(b))}" for b in bodies]
    assert all(luhn.is_valid(c) and len(c) == 16 for c in cards)
    return cards


@pytest.mark.parametrize("engine", ["broker", "out_of_core_broker"])
def test_a_card_per_row_over_four_columns_does_not_cross(request, engine):
    running = request.getfixturevalue(engine)
    cards = _cards(ROWS, seed=211)
    frame = harmless(ROWS, seed=213)
    frame["weight"] = [str(w) for w in rng(215).choice(10**7, ROWS, replace=False)]
    for i, name in enumerate(["g1", "g2", "g3", "g4"]):
        frame[name] = [c[4 * i : 4 * i + 4] for c in cards]
    answer = running.send(csv_bytes(frame), anonymize="auto")
    report = ((answer.get("remedy") or {}).get("before") or {}).get("report") or answer["report"]
    found = {a["name"]: a["direct_identifier"] for a in report["attributes"]}
    assert all(found[name] == "payment_card" for name in ["g1", "g2", "g3", "g4"]), found
    settle(running, answer, secrets=cards[:200], known=["age_band", "sex"])

"""Possible persons of an aggregate release, and keys one person dominates: hand-built tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from broker.engines.pandas import PandasEngine
from broker.privacy.persons import bounded_table, people_of, persons_per_value, singled_out


def frame() -> pd.DataFrame:
    # p1: two rows born 1983-04-12 (rare: a full date); p2 and p3 lie: one person's three
    # rows born 1990-01-02 under two keys; p4, p5: years only
    return pd.DataFrame(
        {
            "patient": ["p1", "p1", "p2", "p3", "p3", "p4", "p5", "p5"],
            "birth": ["1983-04-12"] * 2 + ["1990-01-02"] * 3 + ["1971", "1972", "1972"],
            "ward": ["A", "A", "A", "B", "B", "A", "B", "B"],
        }
    )


def test_rows_of_a_rare_tuple_are_one_person_whatever_the_key_says():
    people = people_of(PandasEngine(frame()), "patient")
    assert people.quasi_identifiers == ("birth",)
    # persons: p1; p2 and p3 merged by 1990-01-02; p4; p5 -> 4
    assert len(np.unique(people.person)) == 4
    table = bounded_table(people, ["ward"], 1, np.random.default_rng(0))
    assert int(table.rows.sum()) == 4  # one row of each person
    # ward A: p1, p2 (one with p3), p4; ward B: p3 (one with p2), p5
    assert sorted(persons_per_value(people, "ward").tolist()) == [2, 3]


def test_without_a_key_each_row_is_a_person_but_a_rare_tuple_is_one():
    people = people_of(PandasEngine(frame().drop(columns=["patient"])), None)
    table = bounded_table(people, ["ward"], 1, np.random.default_rng(0))
    # 1983-04-12 (2 rows) -> 1, 1990-01-02 (3 rows) -> 1, 1971 -> 1, 1972 (2 rows) -> 2
    assert int(table.rows.sum()) == 5
    # ward A: 1983-04-12, 1990-01-02, 1971 -> 3; ward B: 1990-01-02, and 1972's two rows -> 3
    assert persons_per_value(people, "ward").tolist() == [3, 3]


def test_a_key_one_person_dominates_is_singled_out_and_a_category_is_not():
    wards = pd.DataFrame(
        {
            "contact": ["ward A"] * 6 + ["ward B"] * 6 + ["awa diop"] * 6,
            "age": ["30", "41", "52", "63", "24", "35"] * 2 + ["40"] * 6,
            "sex": ["F", "M"] * 9,
        }
    )
    people = people_of(PandasEngine(wards), None)
    found = singled_out(people, ["contact"], 2)
    # age 40: all 6 rows of "awa diop", and all of age 40's rows are hers
    assert found is not None and found.rows == 6 and "'age'" in found.view
    assert singled_out(people_of(PandasEngine(wards.iloc[:12]), None), ["contact"], 2) is None
    # below the rows that matter (half the threshold), a key is not judged
    assert singled_out(people, ["contact"], 7) is None


def test_spellings_of_one_person_key_are_one_person():
    spelled = pd.DataFrame(
        {"patient": ["P-X", " p-x", "p-x", "\uff50\uff0d\uff58", "q"], "ward": ["A"] * 5}
    )
    people = people_of(PandasEngine(spelled), "patient")
    assert len(np.unique(people.person)) == 2
    table = bounded_table(people, ["ward"], 1, np.random.default_rng(0))
    assert table.rows.tolist() == [2]

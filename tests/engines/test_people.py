"""The worst case's rare tuples found among the tuples that could hold them: the same as among
every tuple (:func:`broker.engines.people.rare_tuples`)."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.engines import people
from broker.engines.pandas import PandasEngine

DATES = ["1983-04-12", "12/04/1983", "1983-04-13", "1983-04-16", "1983-04-20", "1983", "n/a"]
ZIPS = ["75011", "75 011", "75012", "75019", "750", "69001", None]


def test_only_the_tuples_sharing_an_identifying_tuples_meanings_are_grouped():
    frame = pd.DataFrame(
        {
            "born": ["1983-04-12", "12/04/1983", "1983", "1983", "1990-01-05"],
            "sex": ["F", "F", "F", "M", "M"],
        }
    )
    engine = PandasEngine(frame)
    found = people.rare_tuples(engine, ["born", "sex"])
    # 1983-04-12 written twice, one woman at worst; 1990-01-05 is held by one row only.
    assert (found.people, found.rows) == (1, 2)
    [table] = engine.counts([["born", "sex"]])
    identifying = np.array([born not in ("1983",) for born in engine.dictionary("born")])
    read = [
        (table.codes(name), np.arange(len(engine.dictionary(name))), len(engine.dictionary(name)))
        for name in ("born", "sex")
    ]
    kept = people._sharing_meanings(read, identifying[table.codes("born")])
    # "1983" holds no identifying meaning: its tuples are left out before grouping.
    assert sorted(engine.dictionary("born")[table.codes("born")[kept]]) == [
        "12/04/1983",
        "1983-04-12",
        "1990-01-05",
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(DATES),
            st.sampled_from(ZIPS),
            st.sampled_from(["F", "f ", "M"]),
            st.sampled_from(["34", "34.0", "91", "95", "60"]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_rare_tuples_grouped_among_the_tuples_sharing_meanings_are_those_of_all(rows):
    # Dates to the day, postcodes of five digits and ages over 89 are identifying, written
    # several ways and nudged a few days or a last digit apart; grouping every tuple (as
    # before) finds the same rare tuples, persons and rows.
    frame = pd.DataFrame(rows, columns=["born", "zip", "sex", "age"])
    engine = PandasEngine(frame)
    quasi = ["born", "zip", "sex", "age"]
    found = people.rare_tuples(engine, quasi)
    every = people._sharing_meanings
    try:
        people._sharing_meanings = lambda read, identifying: np.arange(identifying.size)
        expected = people.rare_tuples(engine, quasi)
    finally:
        people._sharing_meanings = every
    assert (found.people, found.rows) == (expected.people, expected.rows)
    assert found.groups.tolist() == expected.groups.tolist()
    assert [c.tolist() for c in found.codes] == [c.tolist() for c in expected.codes]

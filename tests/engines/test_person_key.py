"""A declared person key only merges: every engine counts the same people, by hand.

A lying key (a fresh key on each copy of one person, or look-alike keys) must never split what
the worst case merges (the rows of a rare quasi-identifier tuple), and keys that a reader would
take for one (``P001``, ``p001 ``, ``P0O1``) are one person. The answers below are worked out
by hand from the six rows of :data:`ROWS`.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.engines.dask import DaskEngine
from broker.engines.duckdb import DuckDBEngine
from broker.engines.pandas import PandasEngine
from broker.engines.people import components, key_codes
from tests.engines.test_contract import ReferenceEngine

QUASI = ["birth_date", "zip", "sex"]
ROWS = [
    # birth_date, zip, sex, diagnosis, key
    ("1950-03-01", "10230", "F", "flu", "P001"),
    ("1950-03-01", "10230", "F", "cold", "X9"),  # a fresh key on a copy of the row above
    ("1960-05-05", "20000", "M", "flu", "p001 "),  # look-alike of P001: case, a blank
    ("1970-07-07", "30000", "F", "flu", "P0O1"),  # look-alike of P001: a letter O for a 0
    ("1980-01-01", "40000", "M", "flu", "Q7"),
    ("1990-01-01", "50000", "F", "cold", "Q8"),
]
FRAME = pd.DataFrame(ROWS, columns=[*QUASI, "diagnosis", "key"])


def _engine(name: str):
    if name == "pandas":
        return PandasEngine(FRAME.drop(columns=["key"]), person_key=FRAME["key"])
    if name == "duckdb":
        return DuckDBEngine.from_frame(FRAME, person_key="key")
    return DaskEngine.from_pandas(FRAME, person_key="key", partitions=3)


def _people(table) -> dict:
    codes = [table.codes(c) for c in table.columns]
    return {tuple(int(c[i]) for c in codes): int(p) for i, p in enumerate(table.people)}


@pytest.mark.parametrize("name", ["pandas", "duckdb", "dask"])
def test_a_lying_key_never_splits_a_person(name):
    engine = _engine(name)
    engine.assume_worst(QUASI)
    by_sex, everyone, classes = engine.counts([["sex"], [], QUASI], people=True)
    sexes = engine.dictionary("sex").tolist()
    people = {sexes[code]: n for (code,), n in _people(by_sex).items()}
    # Rows 0, 1, 2 and 3 are one person (a rare tuple's two rows, and three look-alike keys);
    # F holds that person and row 5's, M that person and row 4's.
    assert people == {"F": 2, "M": 2}
    assert everyone.people.tolist() == [3]
    # The rare tuple's two rows (fresh keys) are one person; every other tuple one row.
    assert sorted(classes.people.tolist()) == [1, 1, 1, 1, 1]
    assert sorted(classes.rows.tolist()) == [1, 1, 1, 1, 2]


@pytest.mark.parametrize("name", ["pandas", "duckdb", "dask"])
def test_without_the_worst_case_the_key_still_only_merges(name):
    """Before the quasi-identifiers are known: identical rows and folded keys."""
    engine = _engine(name)
    [everyone] = engine.counts([[]], people=True)
    # Rows 0, 2, 3 (one folded key); row 1 (its own key, not identical to row 0); 4; 5.
    assert everyone.people.tolist() == [4]


def test_keys_are_folded_before_grouping():
    keys = pd.Series(["P001", "P001 ", "p001", "P0O1", "\uff30001", "P\u200b001", "P002"])
    assert key_codes(keys).tolist() == [0, 0, 0, 0, 0, 0, 1]


def test_components_join_every_signal():
    # Rows 0-1 share a label of the first signal, 1-2 of the second, 3 alone in both.
    assert components(np.array([7, 7, 8, 9]), np.array([1, 2, 2, 3])).tolist() == [0, 0, 0, 3]
    # A long chain (each row joined to the next by alternating signals) is one person.
    size = 10_001
    first, second = np.arange(size) // 2, (np.arange(size) + 1) // 2
    assert set(components(first, second).tolist()) == {0}


# --- every engine, random tables with keys that lie --------------------------------------------

_KEYS = ["ab", "AB ", " a b", "cd", "CD", "ef", "gh"]  # no look-alike letters: NFKC, case, blanks


def _reference_people(frame: pd.DataFrame, quasi: list[str]) -> list:
    """Each row's person, in plain Python: the reference engine's worst case (identical rows,
    rare tuples and their nudges), joined with the rows sharing a key once NFKC, case and blanks
    are dropped, by union-find."""
    reference = ReferenceEngine(frame.drop(columns=["key"]))
    reference.assume_worst(quasi)
    parent = list(range(len(frame)))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    first: dict = {}
    keys = ["".join(unicodedata.normalize("NFKC", str(k)).casefold().split()) for k in frame["key"]]
    for i, labels in enumerate(zip(reference._persons, keys, strict=True)):
        for label in (("person", labels[0]), ("key", labels[1])):
            if label in first:
                parent[root(i)] = root(first[label])
            else:
                first[label] = i
    return [root(i) for i in range(len(frame))]


tables = st.lists(
    st.tuples(
        st.sampled_from(["1950-03-01", "1950-03-02", "1950-03-09", "1950", "1961-07-04"]),
        st.sampled_from(["10230", "10231", "102", "20230"]),
        st.sampled_from(["F", "M"]),
        st.sampled_from(["flu", "cold"]),
        st.sampled_from(_KEYS),
    ),
    min_size=1,
    max_size=14,
)


@given(tables)
@settings(max_examples=12, deadline=None)
def test_every_engine_counts_the_people_of_a_lying_key_as_the_reference(rows):
    frame = pd.DataFrame(rows, columns=[*QUASI, "diagnosis", "key"])
    persons = _reference_people(frame, QUASI)
    sets = [QUASI, ["sex"], ["zip", "diagnosis"], []]
    expected = []
    for columns in sets:
        rows: dict = {}
        people: dict = {}
        for i in range(len(frame)):
            values = tuple(frame[c].iloc[i] for c in columns)
            rows[values] = rows.get(values, 0) + 1
            people.setdefault(values, set()).add(persons[i])
        expected.append({k: (n, len(people[k])) for k, n in rows.items()})
    for name in ("pandas", "duckdb", "dask"):
        if name == "pandas":
            engine = PandasEngine(frame.drop(columns=["key"]), person_key=frame["key"])
        elif name == "duckdb":
            engine = DuckDBEngine.from_frame(frame, person_key="key")
        else:
            engine = DaskEngine.from_pandas(frame, person_key="key", partitions=2)
        engine.assume_worst(QUASI)
        for columns, table, want in zip(
            sets, engine.counts(sets, people=True), expected, strict=True
        ):
            dictionaries = [engine.dictionary(c).tolist() for c in columns]
            got = {
                tuple(d[c] for d, c in zip(dictionaries, codes, strict=True)): (int(n), int(p))
                for *codes, n, p in zip(
                    *(table.codes(c) for c in columns), table.rows, table.people, strict=True
                )
            }
            assert got == want, (name, columns)

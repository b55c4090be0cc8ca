"""The combination search's counts out of core, from columns read as codes
(broker.engines.duckdb.coded): the sizes pandas' groupby finds, from a file of which no copy
of the rows is made, and the search's answer the in-memory engine's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.datasets import read_path
from broker.engines.duckdb import DuckDBEngine, coded
from broker.engines.pandas import PandasEngine
from broker.metrics.combinations import identifying_combinations


def _groupby_sizes(frame: pd.DataFrame, columns: list[str]) -> list[int]:
    """The independent count: pandas' groupby, a missing value a group of its own."""
    return sorted(frame.groupby(columns, dropna=False).size().tolist())


@st.composite
def _coded_columns(draw):
    rows = draw(st.integers(0, 60))
    widths = draw(
        st.lists(st.sampled_from([1, 2, 3, 7, 300, 70_000, 2**31]), min_size=1, max_size=4)
    )
    codes = [
        np.array(draw(st.lists(st.integers(0, min(w, 9) - 1), min_size=rows, max_size=rows)))
        * (w // min(w, 9))  # codes spread over the whole width, as a wide column's are
        for w in widths
    ]
    return [c.astype(coded.code_type(w)) for c, w in zip(codes, widths, strict=True)], widths


@settings(max_examples=200, deadline=None)
@given(_coded_columns(), st.sampled_from(["as set", "sorted", "renumbered"]))
def test_the_sizes_are_pandas_groupby_sizes(columns, path):
    codes, widths = columns
    limits = {"as set": {}, "sorted": {"DENSE_LIMIT": 0}, "renumbered": {"MIXED_LIMIT": 8}}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in limits[path].items():
            patch.setattr(coded, name, value)
        found = coded.tuple_sizes(codes, widths)
    frame = pd.DataFrame({f"c{i}": c.astype(np.int64) for i, c in enumerate(codes)})
    assert found.tolist() == _groupby_sizes(frame, list(frame))
    assert found.dtype == np.int64


def test_codes_are_placed_by_row_and_a_missing_or_repeated_row_is_an_error():
    assert coded.placed(4, np.array([3, 1, 0, 2]), np.array([0, 1, 2, 3]), 4).tolist() == [
        2,
        1,
        3,
        0,
    ]
    with pytest.raises(ValueError, match="3 codes were read for 4 rows"):
        coded.placed(4, np.array([0, 1, 2]), np.array([0, 0, 0]), 1)
    with pytest.raises(ValueError, match="read twice"):
        coded.placed(3, np.array([0, 1, 1]), np.array([0, 0, 0]), 1)


def _file(tmp_path, rows: int = 3000):
    index = np.arange(rows)
    frame = pd.DataFrame(
        {
            "id": [f"n{i * 7 % (rows // 2)}" for i in index],  # near-unique: pairs of rows
            "age": (index % 13).astype(str),
            "sex": np.where(index % 3 == 0, "F", "M"),
            "note": np.where(index % 5 == 0, "", "ok"),  # empty cells, text as written
            "city": [f"é{i % 29}" for i in index],
        }
    )
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path


def test_sets_no_pass_counted_are_counted_from_codes_without_a_copy(tmp_path):
    path = _file(tmp_path)
    frame = read_path(path).frame
    engine = DuckDBEngine.from_path(path)
    engine.plan([["age", "sex"]], people=False)  # some sets in a pass, the rest not
    sets = [["id", "age"], ["age", "sex"], ["sex", "note", "city"], ["city"], ["id", "sex", "note"]]
    found = engine.tuple_sizes(sets)
    assert [f.tolist() for f in found] == [_groupby_sizes(frame, s) for s in sets]
    assert engine._table is None  # no copy of the rows was made
    assert set(engine._codes) == {"id", "age", "sex", "note", "city"}
    engine.forget_counts()
    assert not engine._codes


def test_the_search_out_of_core_finds_what_the_in_memory_search_finds(tmp_path):
    path = _file(tmp_path)
    engine = DuckDBEngine.from_path(path)
    engine.plan([["age", "sex", "note"]])  # a report's pass
    in_memory = PandasEngine(read_path(path).frame)
    for threshold in (0.05, 0.3, 1.0):
        ours = identifying_combinations(engine, engine.columns, 3, threshold)
        theirs = identifying_combinations(in_memory, in_memory.columns, 3, threshold)
        assert ours == theirs
    assert engine._table is None


def test_the_samples_before_a_search_no_longer_make_a_copy(tmp_path):
    engine = DuckDBEngine.from_path(_file(tmp_path))
    engine.plan([[c] for c in engine.columns], people=False)
    [codes] = engine.sample_tuples([["id", "sex"]], [50], read_again=True)
    assert len(codes[0]) == 50 and engine._table is None

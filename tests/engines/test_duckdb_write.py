"""The DuckDB engine writes its table by COPY (shuffled), and recodes the missing value too."""

import pandas as pd
import pytest

from broker.datasets import read_path
from broker.engines.base import RecodePlan
from broker.engines.duckdb import DuckDBEngine, write
from broker.engines.pandas import PandasEngine

FRAME = pd.DataFrame(
    {
        "a": ["x,1", 'say "hi"', "", "é", "line\nbreak"] * 40,
        "n": [str(i) for i in range(200)],
    }
)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_written_rows_read_back_as_the_same_rows(tmp_path, fmt):
    path = tmp_path / f"out.{fmt}"
    write(DuckDBEngine.from_frame(FRAME), path, fmt)
    back = read_path(path).frame
    assert list(back.columns) == ["a", "n"]
    assert sorted(map(tuple, back.to_numpy().tolist())) == sorted(
        map(tuple, FRAME.to_numpy().tolist())
    )


def test_shuffled_rows_are_in_a_fresh_order(tmp_path):
    engine = DuckDBEngine.from_frame(FRAME)
    orders = []
    for i in range(2):
        write(engine, tmp_path / f"{i}.csv", "csv")
        orders.append(read_path(tmp_path / f"{i}.csv").frame["n"].tolist())
    assert orders[0] != orders[1]  # 200 rows: the same order twice has odds 1 / 200!


def test_an_unknown_format_or_folder_is_refused(tmp_path):
    engine = DuckDBEngine.from_frame(FRAME)
    with pytest.raises(ValueError, match="not 'json'"):
        write(engine, tmp_path / "x.json", "json")
    with pytest.raises(OSError):
        write(engine, tmp_path / "missing" / "x.csv", "csv")


@pytest.mark.parametrize("engine", [PandasEngine, DuckDBEngine.from_frame])
def test_a_plan_that_maps_the_missing_value_maps_it(engine):
    frame = pd.DataFrame({"a": ["x", "y", None, ""]})
    plan = RecodePlan(labels={"a": {"x": "*", None: "*"}})
    recoded = engine(frame).recode(plan)
    [table] = recoded.counts([["a"]])
    dictionary = recoded.dictionary("a").tolist()
    counts = {dictionary[c]: int(n) for c, n in zip(table.codes("a"), table.rows, strict=True)}
    assert counts == {"*": 2, "y": 1, "": 1}

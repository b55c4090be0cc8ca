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


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("from_file", [False, True])
def test_text_shuffled_as_enums_is_written_as_the_same_text(tmp_path, fmt, from_file):
    # Once a pass has counted the columns, the shuffle sorts their text as ENUMs (a relabelled
    # column as an ENUM of its labels and the values it keeps) and writes it as text again:
    # the rows written in order, quotes, delimiters, newlines and the missing value included
    frame = FRAME.assign(m=["p", "", "q,r", "p"] * 50)
    if from_file:
        frame.to_csv(tmp_path / "in.csv", index=False)
        engine = DuckDBEngine.from_path(tmp_path / "in.csv")
    else:
        frame.loc[::7, "m"] = None
        engine = DuckDBEngine.from_frame(frame)
    engine.profile()
    plan = RecodePlan(labels={"a": {"x,1": 'x "*"', "": "*"}, "m": {"p": "*", None: "*"}})
    paths = [tmp_path / f"ordered.{fmt}", tmp_path / f"shuffled.{fmt}"]
    write(engine.recode(plan), paths[0], fmt, shuffle=False)
    write(engine.recode(plan), paths[1], fmt)
    assert engine._relabelled(plan, as_enums=True)[2] == ["a", "n", "m"]  # sorted as ENUMs
    ordered, shuffled = (read_path(path).frame for path in paths)
    assert list(shuffled.columns) == ["a", "n", "m"]
    rows = [sorted(map(repr, found.to_numpy().tolist())) for found in (ordered, shuffled)]
    assert rows[0] == rows[1]
    assert paths[0].stat().st_size == paths[1].stat().st_size or fmt == "parquet"

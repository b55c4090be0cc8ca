"""``fedbroker release``: the broker's aggregate release engine on the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from broker.cli import main


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(21)
    rows = 1500
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], rows),
            "region": rng.choice(["north", "south"], rows),
            "age": rng.integers(18, 90, rows),
        }
    )
    frame.loc[0, "region"] = "Ndiaganiao"  # one person's village
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def release(capsys, *args):
    status = main(["release", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_json_output_has_every_answer_with_its_accuracy(data, capsys):
    status, out, err = release(
        capsys, data, "-q", "count", "-q", "count_by:region", "-q", "mean:age:0:100",
        "-q", "quantile:age:0:100:0.5", "--epsilon", "2", "--delta", "1e-7", "--format", "json",
    )  # fmt: skip
    assert (status, err) == (0, "")
    document = json.loads(out)
    assert (document["epsilon"], document["delta"]) == ("2", "0.0000001")
    count, regions, mean, median = document["answers"]
    assert abs(count["result"]["count"] - 1500) <= 4 * count["accuracy"]["half_width"]
    assert {tuple(c["key"]) for c in regions["result"]["cells"]} == {("north",), ("south",)}
    assert mean["epsilon"] == "0.5" and 40 <= mean["result"]["mean"] <= 70
    assert 40 <= median["result"]["quantiles"][0]["value"] <= 70


def test_the_table_names_each_value_its_accuracy_and_what_was_left_out(data, capsys):
    status, out, _ = release(
        capsys, data, "-q", "count_by:sex=F|M", "-q", "count_by:region", "--epsilon", "1",
        "--delta", "1e-6",
    )  # fmt: skip
    assert status == 0
    assert out.startswith("Released under differential privacy: epsilon 1, delta 0.000001")
    assert "count by sex = F" in out and "count by sex = (any other)" in out
    assert "keys below" in out and "Ndiaganiao" not in out
    assert "±" in out


def test_the_duckdb_engine_gives_the_same_release(data, capsys):
    pytest.importorskip("duckdb")
    status, out, _ = release(
        capsys, data, "-q", "count_by:sex=F|M", "--epsilon", "1", "--engine", "duckdb",
        "--format", "json",
    )  # fmt: skip
    assert status == 0
    [answer] = json.loads(out)["answers"]
    counts = [c["count"] for c in answer["result"]["cells"]]
    truth = pd.read_csv(data).sex.value_counts()[["F", "M"]].tolist()
    assert all(
        abs(c - t) <= 4 * answer["accuracy"]["half_width"]
        for c, t in zip(counts, truth, strict=True)
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-q", "sum:age", "--epsilon", "1"], "bounds are required for a sum"),
        (["-q", "mean:age:0:100", "--epsilon", "0"], "epsilon must be above 0"),
        (["-q", "mean:age:0:100", "--epsilon", "-2"], "epsilon must be above 0"),
        (["-q", "sum:agee:0:1", "--epsilon", "1"], "'agee', which is not a column"),
        (["-q", "sum:region:0:1", "--epsilon", "1"], "needs numbers"),
        (["-q", "count_by:region", "--epsilon", "1"], "needs a delta above 0"),
        (["-q", "median:age", "--epsilon", "1"], "is not a query"),
        (["--epsilon", "1"], "no query"),
    ],
)
def test_mistakes_are_one_line_and_status_2(data, capsys, args, message):
    status, out, err = release(capsys, data, *args)
    assert status == 2 and out == ""
    assert err.startswith("fedbroker release: error: ") and message in err
    assert err.count("\n") == 1


def test_an_empty_dataset_is_refused(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    status, _, err = release(capsys, empty, "-q", "count", "--epsilon", "1")
    assert status == 2 and "error" in err

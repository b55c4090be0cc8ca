"""A dataset's identity for the budget: which copies are the same dataset, which are new.

Each table is read by the broker's own readers from the bytes a sender would send, so quoting,
byte order marks, trailing newlines and formats are the readers' to undo and the sketch's to
agree on. Seeded data; no randomness in the sketch.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from broker.datasets import read_dataset
from broker.engines.duckdb import DuckDBEngine
from broker.engines.pandas import PandasEngine
from broker.privacy.identity import (
    SKETCH_SIZE,
    Sketch,
    canonical_text,
    cell_hash_sql,
    same_dataset,
    similarity,
    sketch_of,
    text_hash,
)


def patients(rows: int = 3000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "ref": [f"P{i:05d}" for i in range(rows)],
            "village": rng.choice(["Dakar", "Thies", "Kaolack", "Saint-Louis"], rows),
            "age": rng.integers(1, 95, rows),
            "weight": np.round(rng.uniform(3, 120, rows), 1),
        }
    )


def sketch(data: bytes, name: str = "data.csv") -> Sketch:
    frame = read_dataset(data, name).frame
    return sketch_of(PandasEngine(frame), list(frame.columns))


def as_csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


ORIGINAL = patients()
BASE = sketch(as_csv(ORIGINAL))


def test_the_sketch_keeps_the_smallest_fingerprints_and_counts_the_rows():
    assert BASE.distinct == 3000 and BASE.hashes.size == SKETCH_SIZE
    assert (np.diff(BASE.hashes.astype(np.float64)) > 0).all()
    assert Sketch.from_bytes(BASE.to_bytes(), BASE.distinct).hashes.tolist() == BASE.hashes.tolist()


@pytest.mark.parametrize(
    ("edit", "name"),
    [
        (lambda f: as_csv(f.rename(columns={"village": "place", "age": "years"})), "data.csv"),
        (lambda f: as_csv(f[["weight", "age", "ref", "village"]]), "data.csv"),
        (lambda f: as_csv(f.sample(frac=1, random_state=3)), "data.csv"),
        (lambda f: as_csv(f) + b"\n", "data.csv"),
        (lambda f: b"\xef\xbb\xbf" + as_csv(f), "data.csv"),
        (lambda f: f.to_csv(index=False, quoting=1, lineterminator="\r\n").encode(), "data.csv"),
        (lambda f: f.to_json(orient="records").encode(), "data.json"),
        (lambda f: f.to_parquet(index=False), "data.parquet"),
        (lambda f: as_csv(f.assign(weight=f.weight.map("{:.2f}".format))), "data.csv"),
    ],
    ids=[
        "renamed",
        "columns moved",
        "rows shuffled",
        "trailing newline",
        "BOM",
        "quoted CRLF",
        "JSON",
        "Parquet",
        "decimals padded",
    ],
)
def test_renames_reorders_and_re_encodings_are_the_same_rows(edit, name):
    copy = sketch(edit(ORIGINAL.copy()), name)
    assert similarity(BASE, copy) == 1.0 and same_dataset(BASE, copy)


def changed_rows(rows: int) -> Sketch:
    frame = ORIGINAL.copy()
    frame.loc[: rows - 1, "age"] = 200  # no real age
    return sketch(as_csv(frame))


def test_a_changed_cell_and_a_few_rows_more_or_less_are_the_same_dataset():
    assert same_dataset(BASE, changed_rows(1))
    assert same_dataset(BASE, changed_rows(90))  # 3 %: J = 2910 / 3090 = 0.94
    assert same_dataset(BASE, sketch(as_csv(ORIGINAL.iloc[200:])))  # 6.7 % fewer rows
    more = pd.concat([ORIGINAL, patients(250, seed=6).assign(ref=lambda f: "N" + f.ref)])
    assert same_dataset(BASE, sketch(as_csv(more)))  # 8.3 % more rows


def test_the_same_table_without_many_rows_is_the_same_dataset():
    # differencing: one person's many rows removed (J = 0.8, and 0.6), the rest unchanged
    assert same_dataset(BASE, sketch(as_csv(ORIGINAL.iloc[600:])))  # 20 % fewer rows
    assert same_dataset(BASE, sketch(as_csv(ORIGINAL.iloc[1200:])))  # 40 % fewer rows
    more = pd.concat([ORIGINAL, patients(1500, seed=6).assign(ref=lambda f: "N" + f.ref)])
    assert same_dataset(BASE, sketch(as_csv(more)))  # 50 % more rows: the first within it


def test_edits_past_the_threshold_or_of_every_row_make_a_new_dataset():
    assert not same_dataset(BASE, changed_rows(450))  # 15 %: J = 2550 / 3450 = 0.74
    assert not same_dataset(BASE, sketch(as_csv(ORIGINAL.iloc[1800:])))  # 60 % fewer rows
    assert not same_dataset(BASE, sketch(as_csv(ORIGINAL.iloc[:1400])))  # under half, a subset
    assert not same_dataset(BASE, sketch(as_csv(ORIGINAL.assign(extra="x"))))  # a new column
    assert not same_dataset(BASE, sketch(as_csv(patients(seed=99))))  # other people


def test_the_estimate_follows_the_exact_jaccard():
    for rows in (150, 300, 600):
        exact = (3000 - rows) / (3000 + rows)
        assert abs(similarity(BASE, changed_rows(rows)) - exact) <= 5 * np.sqrt(
            exact * (1 - exact) / SKETCH_SIZE
        )


@pytest.mark.parametrize(
    "value", ["  30.0 ", "2.50", "-0.0", "100.", "e\u0301", "\u00e9", "1e5", "", "x\ty", "007"]
)
def test_duckdb_hashes_a_cell_as_python_does(value):
    import duckdb

    expected = text_hash(canonical_text(value))
    found = duckdb.sql(f"SELECT {cell_hash_sql('v')} FROM (SELECT ? AS v)", params=[value])
    assert found.fetchall()[0][0] == expected


def test_a_table_counted_out_of_core_has_the_sketch_of_the_same_table_in_memory(tmp_path):
    path = tmp_path / "patients.csv"
    path.write_bytes(as_csv(ORIGINAL))
    engine = DuckDBEngine.from_path(path)
    out_of_core = sketch_of(engine, engine.columns)
    assert out_of_core.distinct == BASE.distinct
    assert out_of_core.hashes.tolist() == BASE.hashes.tolist()


def test_values_written_by_other_formats_share_one_spelling():
    frame = pd.read_json(io.StringIO('[{"a": 30.0, "b": true, "c": null}]'))
    assert [canonical_text(v) for v in frame.iloc[0]] == ["30", "true", ""]

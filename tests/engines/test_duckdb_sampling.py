"""Distinct tuples sampled out of core (broker.engines.duckdb.sampling): real, distinct, all of
them when few, each as likely whatever its rows, and a split identifier still found through
them on a set with a near-unique column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from broker.engines.duckdb import DuckDBEngine, sampling
from broker.metrics.report import report_of


def _tuples(engine, columns, codes) -> set[tuple]:
    values = [engine.dictionary(c).to_numpy()[k] for c, k in zip(columns, codes, strict=True)]
    return set(zip(*values, strict=True))


@pytest.mark.parametrize("read", ["source", "copy", "read again"])
def test_a_small_set_gives_every_distinct_tuple_once(read):
    frame = pd.DataFrame({"a": list("xxyyz") * 4, "b": ["1", "1", "2", "3", "1"] * 4})
    engine = DuckDBEngine.from_frame(frame)
    engine.plan([["a"], ["b"]], people=False)  # the report's first pass: no copy yet
    if read == "copy":  # what the combination search reads, text columns as ENUMs
        engine.tuple_sizes([["a", "b"]])
        assert engine._table is not None
    [codes] = engine.sample_tuples([["a", "b"]], [250], read_again=read == "read again")
    assert (engine._table is not None) == (read != "source")
    assert len(codes[0]) == 4  # (x,1), (y,2), (y,3), (z,1): no tuple twice
    assert _tuples(engine, ["a", "b"], codes) == {("x", "1"), ("y", "2"), ("y", "3"), ("z", "1")}


def test_a_near_unique_set_gives_size_real_distinct_tuples(tmp_path):
    rows = 20_000
    ids = [f"{i:06d}" for i in range(rows)]
    frame = pd.DataFrame({"id": ids, "flag": ["a", "b"] * (rows // 2)})
    frame.to_csv(tmp_path / "t.csv", index=False)
    engine = DuckDBEngine.from_path(tmp_path / "t.csv")
    engine.plan([[c] for c in engine.columns], people=False)
    [codes] = engine.sample_tuples([["id", "flag"]], [250])
    found = _tuples(engine, ["id", "flag"], codes)
    assert len(codes[0]) == len(found) == 250
    assert all(int(i) % 2 == (flag == "b") for i, flag in found)  # tuples of the table


def test_too_few_under_the_first_threshold_reads_again(monkeypatch):
    monkeypatch.setattr(sampling, "KEPT_PER_SAMPLED", 0.0001)  # nearly nothing kept at first
    frame = pd.DataFrame({"id": [str(i) for i in range(3000)], "n": ["1", "2", "3"] * 1000})
    engine = DuckDBEngine.from_frame(frame)
    [codes] = engine.sample_tuples([["id", "n"]], [100])
    assert len(_tuples(engine, ["id", "n"], codes)) == 100


def test_a_tuple_of_many_rows_is_no_likelier_than_one_of_one_row():
    # 1 tuple of 30,000 rows among 2,000 of one row: a row sample would hold it 94 % of the
    # time; a sample of 100 distinct tuples holds it one time in 20.
    ids = [str(i) for i in range(2000)] + ["heavy"] * 30_000
    engine = DuckDBEngine.from_frame(pd.DataFrame({"id": ids, "x": ["1"] * len(ids)}))
    heavy = int(np.flatnonzero(engine.dictionary("id").to_numpy() == "heavy")[0])
    held = sum(heavy in engine.sample_tuples([["id", "x"]], [100])[0][0] for _ in range(60))
    assert held <= 12  # 3 expected; a row sample gives about 56


def test_many_columns_of_few_values_are_read_under_a_threshold(monkeypatch):
    # 20 columns of two values: up to a million tuples, nearly 100,000 here, more than the
    # 256 x 250 a read may group: never grouped whole.
    rows = 100_000
    frame = pd.DataFrame({f"c{i}": rng_bits(rows, i) for i in range(20)})
    engine = DuckDBEngine.from_frame(frame)
    engine.plan([[c] for c in frame.columns], people=False)
    queries = []
    execute = engine._con.execute
    monkeypatch.setattr(engine._con, "execute", lambda q: queries.append(q) or execute(q))
    [codes] = engine.sample_tuples([list(frame.columns)], [250])
    assert len(_tuples(engine, list(frame.columns), codes)) == 250
    sampled = [q for q in queries if "hash(xor(" in q]
    assert sampled and all("__fedbroker_h <" in q for q in sampled)


def rng_bits(rows: int, seed: int) -> list[str]:
    return [str(b) for b in np.random.default_rng(seed).integers(0, 2, rows)]


def test_samples_differ_between_reports():
    engine = DuckDBEngine.from_frame(pd.DataFrame({"id": [str(i) for i in range(5000)]}))
    first, second = (engine.sample_tuples([["id"]], [50])[0][0] for _ in range(2))
    assert set(first) != set(second)


def test_a_sample_needs_a_column_and_a_size():
    engine = DuckDBEngine.from_frame(pd.DataFrame({"a": ["1"]}))
    with pytest.raises(ValueError, match="at least one column"):
        engine.sample_tuples([[]], [10])
    with pytest.raises(ValueError, match="at least one column"):
        engine.sample_tuples([["a"]], [0])


def test_an_iban_split_beside_a_near_unique_column_is_found_out_of_core(tmp_path):
    rng = np.random.default_rng(5)
    rows = 6000
    ibans = ["FR7630006000011234567890189", "DE89370400440532013000", "GB29NWBK60161331926819"]
    chosen = rng.choice(ibans, rows)
    frame = pd.DataFrame(
        {
            "weight": [str(w) for w in rng.permutation(10**6)[:rows]],  # near-unique
            "head": [i[:8] for i in chosen],
            "tail": [i[8:] for i in chosen],
            "n": rng.choice(["1", "2", "3"], rows),
        }
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    found = report_of(DuckDBEngine.from_path(tmp_path / "t.csv")).attributes
    kinds = {a.name: a.content.direct_identifier for a in found}
    assert kinds["head"] == kinds["tail"] == "iban"

"""The rows that repeat, found by sorting their hashes (broker.engines.duckdb.repeats)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from broker.engines.duckdb import DuckDBEngine
from broker.engines.duckdb import repeats as repeats_module
from broker.engines.duckdb.opening import connect
from broker.engines.duckdb.repeats import repeated_hashes, repeated_rows
from broker.engines.duckdb.sql import ROW, UNION


def _rows(hashes: list[int]) -> str:
    values = ", ".join(f"({h}::UBIGINT)" for h in hashes)
    return f"(SELECT * FROM (VALUES {values}) t({ROW}))"


@pytest.mark.parametrize("part_rows", [1 << 24, 2])
def test_repeated_hashes_in_one_part_or_several(monkeypatch, part_rows):
    # 2**63 + 1 and 3 fall in different parts when the hashes are split by their top bits;
    # batches of two rows: a part is written over several of them.
    monkeypatch.setattr(repeats_module, "PART_ROWS", part_rows)
    monkeypatch.setattr(repeats_module, "BATCH_ROWS", 2)
    con, folder = connect()
    hashes = [3, 2**63 + 1, 3, 7, 2**63 + 1, 2**63 + 1, 2**64 - 1, 0, 0]
    found = repeated_hashes(con, _rows(hashes), len(hashes), folder.name)
    assert sorted(found.tolist()) == [0, 3, 2**63 + 1]
    assert not list(Path(folder.name).iterdir())  # the parts' files are removed


def test_no_row_repeats_reads_nothing_again():
    con, folder = connect()
    rows = "(SELECT 'a' AS x, 5::UBIGINT AS __fedbroker_row)"
    table = repeated_rows(con, rows, 1, ["x"], folder.name)
    assert con.execute(f"SELECT count(*) FROM {table}").fetchall() == [(0,)]
    assert [d[0] for d in con.execute(f"SELECT * FROM {table}").description] == [
        ROW,
        UNION,
        "__fedbroker_n",
    ]


def test_a_hash_held_by_two_union_tuples_is_two_entries():
    # Rows 1 and 2 share a row hash (a collision, forced) but not their union tuple: neither
    # repeats; rows 3 and 4 are one row twice.
    con, folder = connect()
    rows = (
        "(SELECT * FROM (VALUES ('a', 9::UBIGINT), ('b', 9::UBIGINT), ('c', 4::UBIGINT), "
        f"('c', 4::UBIGINT)) t(x, {ROW}))"
    )
    table = repeated_rows(con, rows, 4, ["x"], folder.name)
    found = con.execute(f"SELECT {ROW}, __fedbroker_n FROM {table}").fetchall()
    assert found == [(4, 2)]


def test_people_and_duplicates_as_counted_in_memory():
    frame = pd.DataFrame({"a": ["x", "x", "y", "y", "y", "z"], "b": ["1", "1", "2", "2", "3", "1"]})
    engine = DuckDBEngine.from_frame(frame)
    engine.plan([["a", "b"]], people=True)
    assert engine.duplicate_rows() == 2
    [table] = engine.counts([["a"]], people=True)
    rows = dict(zip(table.codes("a").tolist(), table.rows.tolist(), strict=True))
    people = dict(zip(table.codes("a").tolist(), table.people.tolist(), strict=True))
    assert sorted(rows.values()) == [1, 2, 3] and sorted(people.values()) == [1, 1, 2]
    assert np.array_equal(np.sort(table.people), [1, 1, 2])

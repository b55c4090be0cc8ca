"""The out-of-core engine on a full disk: an ``OSError`` (ENOSPC), never a dataset error.

A full disk is a fault to wait out, which the broker answers 507; taken for a malformed dataset
(422) or a table too large for the memory limit (413) it would tell the member to change data
that is fine. The disk is a real small filesystem (tmpfs).
"""

from __future__ import annotations

import errno
import io
import tempfile

import duckdb
import pandas as pd
import pytest

from broker.engines.duckdb import DuckDBEngine, disk_full, write
from broker.engines.duckdb.opening import Connection
from tests.faults import fill, small_filesystem

CSV = "age,sex,disease\n" + "".join(f"{20 + i % 50},{'FM'[i % 2]},d{i % 7}\n" for i in range(5000))


@pytest.fixture
def full_disk(tmp_path):
    with small_filesystem(tmp_path / "full", "1m") as folder:
        fill(folder, leave=0)
        yield folder


def _engine(tmp_path) -> DuckDBEngine:
    path = tmp_path / "data.csv"
    path.write_text(CSV)
    return DuckDBEngine.from_path(path)


def test_a_spill_that_finds_no_room_is_enospc(tmp_path):
    with small_filesystem(tmp_path / "spill", "1m") as folder:
        connection = Connection(duckdb.connect())
        connection.sql("SET memory_limit = '10MB'")
        connection.sql("SET threads = 1")
        connection.sql(f"SET temp_directory = '{folder}'")
        with pytest.raises(OSError) as raised:
            connection.execute(
                "SELECT count(*) FROM (SELECT md5(range::VARCHAR) b FROM range(400000) ORDER BY b)"
            )
        connection.close()
    assert raised.value.errno == errno.ENOSPC and "offload" in str(raised.value)


def test_a_delivery_file_without_room_is_enospc_and_leaves_no_part(tmp_path, full_disk):
    engine = _engine(tmp_path)
    target = full_disk / "deliveries.csv"
    with pytest.raises(OSError) as raised:
        write(engine, target, "csv")
    assert raised.value.errno == errno.ENOSPC
    assert not target.exists()


def test_counting_without_room_for_the_working_files_is_enospc_not_a_dataset_error(
    tmp_path, full_disk, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(full_disk))  # where the engine keeps its counts
    engine = _engine(tmp_path)
    with pytest.raises(OSError) as raised:
        engine.profile()
    assert raised.value.errno == errno.ENOSPC


def test_other_duckdb_errors_are_not_taken_for_a_full_disk():
    connection = duckdb.connect()
    with pytest.raises(duckdb.Error) as raised:
        connection.execute("SELECT * FROM read_csv('/nonexistent/file.csv')")
    assert disk_full(raised.value) is None
    with pytest.raises(duckdb.Error):
        Connection(connection).execute("SELECT nonsense FROM nowhere")


def test_sampling_split_tuples_without_room_is_enospc_and_leaves_no_file(tmp_path, monkeypatch):
    """A source that is not a CSV file parsed once (here a frame): the samples copy the
    columns they use to a file of their own, which finds no room."""
    with small_filesystem(tmp_path / "work", "4m") as folder:
        monkeypatch.setattr(tempfile, "tempdir", str(folder))  # the engine's working files
        engine = DuckDBEngine.from_frame(pd.read_csv(io.StringIO(CSV), dtype=str))
        engine.plan([[c] for c in engine.columns], people=False)  # the report's first pass
        fill(folder, leave=0)
        with pytest.raises(OSError) as raised:
            engine.sample_tuples([["age", "sex"]], [250])
        assert raised.value.errno == errno.ENOSPC
        assert not list(folder.rglob("sampled_*"))


def test_a_csv_file_is_parsed_once_and_sampled_with_no_room_left(tmp_path, monkeypatch):
    """A CSV file is parsed once, by the first pass, into a Parquet file the samples read:
    they need no room of their own."""
    with small_filesystem(tmp_path / "work", "4m") as folder:
        monkeypatch.setattr(tempfile, "tempdir", str(folder))
        engine = _engine(tmp_path)
        engine.plan([[c] for c in engine.columns], people=False)
        assert len(list(folder.rglob("rows_*.parquet"))) == 1
        fill(folder, leave=0)
        [[ages, sexes]] = engine.sample_tuples([["age", "sex"]], [250])
        assert len(ages) == len(sexes) == 50  # every distinct tuple: (20 + i % 50, "FM"[i % 2])
        assert not list(folder.rglob("sampled_*"))


def test_parsing_a_csv_file_without_room_is_enospc_and_leaves_no_file(
    tmp_path, full_disk, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(full_disk))
    engine = _engine(tmp_path)
    with pytest.raises(OSError) as raised:
        engine.plan([[c] for c in engine.columns], people=False)
    assert raised.value.errno == errno.ENOSPC
    assert not list(full_disk.rglob("rows_*"))

"""The DuckDB engine reads a CSV file out of core and gives the report the in-memory path gives."""

import csv
import io
import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.cli import main
from broker.datasets import DatasetError, read_path
from broker.engines.duckdb import DuckDBEngine
from broker.engines.pandas import PandasEngine
from broker.metrics.report import ReportOptions, report_of
from tests.engines.close import close
from tests.engines.test_contract import _assert_same_counts, _assert_same_report

# Cells that test the CSV rules: text as written, quotes, delimiters and newlines inside values,
# empty fields, blanks, non-ASCII.
CELLS = st.sampled_from(
    ["a", "b", "007", "7", "", " ", "x,y", 'say "hi"', "two\nlines", "é", "1.0", "1", "NA"]
)


def _write(path, header, rows, delimiter=",") -> None:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.lists(st.lists(CELLS, min_size=4, max_size=4), min_size=n, max_size=n)
    ),
    st.sampled_from([",", ";", "\t", "|"]),
    st.booleans(),
)
def test_a_generated_csv_file_gives_the_in_memory_report(
    tmp_path_factory, rows, delimiter, first_look
):
    # After a first look (each column counted alone), the passes group the text as ENUMs.
    path = tmp_path_factory.mktemp("csv") / "data.csv"
    header = ["age", "zip", "sex", "disease"]
    _write(path, header, rows, delimiter)
    in_memory = PandasEngine(read_path(path).frame)
    out_of_core = DuckDBEngine.from_path(path)
    if first_look:
        out_of_core.profile()
    for qis, sensitive in ((["age", "zip"], ["disease"]), ([], ["sex", "disease"]), ([], [])):
        ours = report_of(
            out_of_core, qis, sensitive, ReportOptions(max_combination_size=3)
        ).as_dict()
        theirs = report_of(
            in_memory, qis, sensitive, ReportOptions(max_combination_size=3)
        ).as_dict()
        assert close(ours, theirs)


def test_a_person_key_counts_people_as_in_memory(tmp_path):
    path = tmp_path / "people.csv"
    rows = [
        ["1", "30", "F"],
        ["1", "30", "F"],
        ["2", "30", "F"],
        ["3", "40", "M"],
        ["3", "41", "M"],
    ]
    _write(path, ["person", "age", "sex"], rows)
    frame = read_path(path).frame
    from broker.engines.pandas import People

    measured = frame.drop(columns=["person"])
    in_memory = PandasEngine(measured, people=People.of(measured, frame["person"]))
    out_of_core = DuckDBEngine.from_path(path, person_key="person")
    assert out_of_core.columns == ["age", "sex"]
    ours = report_of(out_of_core, ["age", "sex"]).as_dict()
    assert ours == report_of(in_memory, ["age", "sex"]).as_dict()
    assert ours["people_counted_by"] == "person_key"


def test_a_bom_and_the_delimiter_are_read_as_the_canonical_reader_reads_them(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b'\xef\xbb\xbfa;b\n007;\n7;"x;y"\n')
    engine = DuckDBEngine.from_path(path)
    assert engine.columns == ["a", "b"]
    assert sorted(engine.dictionary("a")) == ["007", "7"]
    assert sorted(engine.dictionary("b")) == ["", "x;y"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"a,A\n1,2\n", "look"),  # look-alike column names, as the canonical reader refuses
        (b"\xff\xfe,b\n1,2\n", "UTF-8"),
    ],
)
def test_a_header_the_canonical_reader_refuses_is_refused(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=message):
        DuckDBEngine.from_path(path)


@pytest.mark.parametrize(
    "content",
    [b"a,b\n1,2\n1,2,3\n", b"a,b\n1,\xff\n"],  # ragged rows, bad UTF-8 in the body
)
def test_a_malformed_body_is_refused_when_it_is_read(tmp_path, content):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(DatasetError):
        report_of(DuckDBEngine.from_path(path), ["a"])


def test_the_command_line_reports_the_same_with_either_engine(tmp_path, capsys):
    path = tmp_path / "data.csv"
    _write(
        path,
        ["age", "sex", "flu"],
        [[str(20 + i % 7), "FM"[i % 2], "yn"[i % 3 == 0]] for i in range(60)],
    )
    reports = []
    for engine in ("pandas", "duckdb"):
        assert (
            main(
                [
                    "analyze",
                    str(path),
                    "--qi",
                    "age,sex",
                    "--sensitive",
                    "flu",
                    "--engine",
                    engine,
                    "--format",
                    "json",
                ]
            )
            == 0
        )
        reports.append(json.loads(capsys.readouterr().out))
    assert close(reports[0], reports[1])


def test_the_command_line_says_which_files_the_duckdb_engine_reads(tmp_path, capsys):
    path = tmp_path / "data.json"
    path.write_text('[{"a": 1}]')
    assert main(["analyze", str(path), "--engine", "duckdb"]) == 2
    assert "the duckdb engine reads CSV files" in capsys.readouterr().err


def test_a_memory_limit_duckdb_cannot_read_is_one_line(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    assert main(["analyze", str(path), "--engine", "duckdb", "--memory-limit", "lots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory limit 'lots'" in err


def test_the_report_is_counted_from_the_file_without_a_copy(tmp_path):
    # A near-unique column, identical rows (people), empty cells and a column outside the
    # quasi-identifiers and sensitive attributes: the report is the in-memory one, and the
    # rows were never copied into DuckDB (the planned pass answered everything).
    rows = [[str(i % 7), f"id{i}", "FM"[i % 2], "", "yn"[i % 3 == 0]] for i in range(300)]
    rows += [rows[5], rows[5], rows[8]] + [["99", "x", "F", "", "y"]] * 3  # a class of 1 person
    path = tmp_path / "data.csv"
    _write(path, ["age", "ref", "sex", "note", "flu"], rows)
    engine = DuckDBEngine.from_path(path)
    ours = report_of(
        engine, ["age", "sex"], ["flu", "note"], ReportOptions(max_combination_size=0)
    ).as_dict()
    in_memory = PandasEngine(read_path(path).frame)
    assert (
        ours
        == report_of(
            in_memory, ["age", "sex"], ["flu", "note"], ReportOptions(max_combination_size=0)
        ).as_dict()
    )
    assert ours["duplicate_rows"] == 5
    assert ours["quasi_identifiers"]["k_people"] == 1
    assert engine._table is None  # no copy of the rows was made


def test_columns_a_first_look_counted_are_not_counted_again(tmp_path):
    # An upload's first look counts every column alone, without people; the report's pass then
    # counts only its union and the repeats, and each column's people (identical rows) are
    # still the in-memory report's.
    rows = [[str(i % 7), f"id{i % 290}", "FM"[i % 2], "", "yn"[i % 3 == 0]] for i in range(300)]
    rows += [rows[5], rows[5], rows[8]] + [["99", "x", "F", "", "y"]] * 3
    path = tmp_path / "data.csv"
    _write(path, ["age", "ref", "sex", "note", "flu"], rows)
    engine = DuckDBEngine.from_path(path)
    engine.profile()
    options = ReportOptions(max_combination_size=2)
    ours = report_of(engine, ["age", "sex"], ["flu", "note"], options).as_dict()
    in_memory = PandasEngine(read_path(path).frame)
    assert ours == report_of(in_memory, ["age", "sex"], ["flu", "note"], options).as_dict()
    first, report = engine._passes[:2]
    assert first.alone == ["age", "ref", "sex", "note", "flu"] and not first.people
    assert report.people and report.alone == [] and report.union == ["age", "sex", "note", "flu"]
    # Identical rows only (no worst case told): id0..id9 are two different rows each, the
    # copies of rows 5 and 8 and of the "x" row add rows, not people.
    fresh = DuckDBEngine.from_path(path)
    fresh.profile()
    fresh.plan([["age", "sex"]])
    ref, note = fresh.counts([["ref"], ["note"]], people=True)
    assert len(fresh._passes) == 2 and fresh._passes[1].alone == []
    assert sorted(ref.people.tolist()) == [1] * 281 + [2] * 10
    assert (note.rows.tolist(), note.people.tolist()) == ([306], [301])


def test_a_pass_duckdb_cannot_hold_is_split_into_passes_with_the_same_report(tmp_path, monkeypatch):
    # DuckDB's hash tables spill, but not every part of every one: a pass of many grouping sets
    # can meet the memory limit where two of half as many do not. Passes of more than two sets
    # "run out" here; the report is still the in-memory one, counted in several passes, with
    # no copy of the rows; a single set that cannot be counted is a one-line error.
    from broker.engines.duckdb import OutOfMemory
    from broker.engines.duckdb.passes import Pass

    real = Pass.__init__

    def limited(self, engine, column_sets, people):
        if len(column_sets) + people > 2:
            raise OutOfMemory("Out of Memory Error: could not allocate block")
        real(self, engine, column_sets, people)

    monkeypatch.setattr(Pass, "__init__", limited)
    rows = [[str(i % 7), f"id{i}", "FM"[i % 2], "yn"[i % 3 == 0]] for i in range(200)]
    rows += [rows[5], rows[5]]
    path = tmp_path / "data.csv"
    _write(path, ["age", "ref", "sex", "flu"], rows)
    engine = DuckDBEngine.from_path(path)
    ours = report_of(
        engine, ["age", "sex"], ["flu"], ReportOptions(max_combination_size=0)
    ).as_dict()
    in_memory = PandasEngine(read_path(path).frame)
    assert (
        ours
        == report_of(
            in_memory, ["age", "sex"], ["flu"], ReportOptions(max_combination_size=0)
        ).as_dict()
    )
    assert len(engine._passes) > 2 and engine._table is None

    monkeypatch.setattr(
        Pass,
        "__init__",
        lambda *_: (_ for _ in ()).throw(OutOfMemory("Out of Memory Error")),
    )
    with pytest.raises(DatasetError, match="Out of Memory"):
        report_of(DuckDBEngine.from_path(path), ["age"], [], ReportOptions(max_combination_size=0))


def test_a_real_memory_limit_error_names_the_limit_and_how_to_raise_it(tmp_path):
    engine = DuckDBEngine.from_path(_small_file(tmp_path))
    engine._con.sql("SET memory_limit = '1MB'")
    with pytest.raises(DatasetError, match=r"memory limit .*BROKER_DUCKDB_MEMORY_LIMIT"):
        engine._con.read(
            "CREATE TABLE big AS SELECT range AS i, md5(range::VARCHAR) AS h "
            "FROM range(3000000) ORDER BY h"
        )


def _small_file(tmp_path):
    path = tmp_path / "small.csv"
    _write(path, ["age"], [["1"], ["2"]])
    return path


def test_a_person_key_with_repeated_keys_counts_people_in_the_planned_pass(tmp_path):
    # Keys repeat across tuples of the quasi-identifiers and within them, and two rows are
    # identical under different keys (``ref`` tells the others apart, so keys bind): the rows
    # whose key or hash repeats are read again.
    path = tmp_path / "people.csv"
    rows = [
        [f"p{i % 40}", str(20 + i % 5), "FM"[i % 2], "ab"[i % 3 == 0], f"r{i}"] for i in range(120)
    ]
    rows += [["q1", "20", "F", "a", "r"], ["q2", "20", "F", "a", "r"]]
    _write(path, ["person", "age", "sex", "flu", "ref"], rows)
    frame = read_path(path).frame
    from broker.engines.pandas import People

    measured = frame.drop(columns=["person"])
    in_memory = PandasEngine(measured, people=People.of(measured, frame["person"]))
    out_of_core = DuckDBEngine.from_path(path, person_key="person")
    ours = report_of(
        out_of_core, ["age", "sex"], ["flu"], ReportOptions(max_combination_size=0)
    ).as_dict()
    assert (
        ours
        == report_of(
            in_memory, ["age", "sex"], ["flu"], ReportOptions(max_combination_size=0)
        ).as_dict()
    )
    assert out_of_core._table is None


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.lists(
            st.lists(st.sampled_from(["a", "b", "", None, "7"]), min_size=n, max_size=n),
            min_size=4,
            max_size=4,
        )
    ),
    st.booleans(),
)
def test_planned_counts_keep_the_contract(columns, first_look):
    # Every count table, planned or not (a column outside the union with people reads the
    # repeated rows again; unplanned sets copy the rows), with missing values and repeats;
    # after a first look, the union grouped as ENUMs.
    frame = pd.DataFrame({f"c{i}": pd.Series(v, dtype=object) for i, v in enumerate(columns)})
    engine = DuckDBEngine.from_frame(frame)
    if first_look:
        engine.plan([[c] for c in frame.columns], people=False)
    engine.plan([["c0"], ["c1"], ["c0", "c1"], ["c2"], []])
    _assert_same_counts(frame, engine)
    _assert_same_report(frame, engine, ["c0", "c1"], ["c2"])


@pytest.mark.parametrize("way", ["sql", "read", "frame"])
def test_an_interrupted_query_is_a_keyboard_interrupt_not_an_error(way):
    """Ctrl-C reaches DuckDB as its InterruptException: the engine raises KeyboardInterrupt, so
    the command line says one line and exits 130 (it printed a traceback), and no interrupt is
    taken for a malformed file."""
    import threading

    from broker.engines.duckdb.opening import connect

    con, _folder = connect()
    done = threading.Event()

    def interrupt_until_done():  # again and again: the first may come before the query starts
        while not done.wait(0.05):
            con._connection.interrupt()

    threading.Thread(target=interrupt_until_done, daemon=True).start()
    endless = "SELECT count(*) FROM range(100000000000) a, range(10) b WHERE a.range % 7 = b.range"
    if way != "frame":  # a relation runs when it is read: a statement runs at once
        endless = f"CREATE TABLE counted AS {endless}"
    try:
        with pytest.raises(KeyboardInterrupt):
            getattr(con, way)(endless)
    finally:
        done.set()
        con.close()


def test_a_first_pass_counts_the_columns_outside_its_union_on_their_own(tmp_path):
    # The pass parses the CSV file into Parquet first, then counts each column outside the
    # union by reading that column only, not as one more grouping set fed every row.
    rows = [[str(i % 7), f"id{i % 150}", "FM"[i % 2], "yn"[i % 3 == 0]] for i in range(300)]
    path = tmp_path / "data.csv"
    _write(path, ["age", "ref", "sex", "flu"], rows)
    engine = DuckDBEngine.from_path(path)
    engine.plan([["age", "sex"], ["ref"], ["flu"]])
    [counted] = engine._passes
    assert engine._parsed and set(counted._alone) == {"ref", "flu"}
    assert counted._grouped[:2] == ['"age"', '"sex"'] and '"ref"' not in counted._grouped
    in_memory = PandasEngine(read_path(path).frame)
    for columns in (["ref"], ["flu"], ["age", "sex"]):
        [ours] = engine.counts([columns], people=True)
        [theirs] = in_memory.counts([columns], people=True)
        pairs = [sorted(zip(t.rows, t.people, strict=True)) for t in (ours, theirs)]
        assert pairs[0] == pairs[1]

"""Reading CSV, JSON and Parquet, and one clear error for each malformed input."""

import csv
import io
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.datasets import (
    DatasetError,
    DatasetTooLarge,
    ReadLimits,
    read_dataset,
    read_path,
    write_dataset,
)


@pytest.mark.parametrize(
    ("data", "name", "message"),
    [
        (b"", "a.csv", "a.csv is empty"),
        (b"  \n", "a.csv", "a.csv is empty"),
        (b"age,sex\n", "a.csv", "header but no data rows"),
        (b"a,b\n1,2\n3,4,5\n", "a.csv", "ragged rows: Expected 2 columns, got 3"),
        (b"a,b\n1,2\n3\n", "a.csv", "ragged rows: Expected 2 columns, got 1"),
        (b"a,b\n1,\xff\xfe\n", "a.csv", "not valid UTF-8"),
        (b"a,b,a\n1,2,3\n", "a.csv", "column name 'a' more than once"),
        (b"a,,b\n1,2,3\n", "a.csv", "column without a name"),
        (b"a,b\n1,2\n", "a.parquet", "a.parquet is not a Parquet file"),
        (b"[{", "a.json", "not valid JSON"),
        (b'{"a": 1}', "a.json", "JSON array of records"),
        (b"[]", "a.json", "empty JSON array"),
        (b"[1, 2]", "a.json", "item 0 of the JSON array is not an object"),
        (b'[{"a": {"b": 1}}]', "a.json", "column 'a' holds nested"),
        (b"\x00\x01", "a.xlsx", "Unsupported file type '.xlsx'"),
    ],
)
def test_malformed_inputs_get_one_line_errors(data, name, message):
    with pytest.raises(DatasetError, match=message) as error:
        read_dataset(data, name)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_delimiter_is_sniffed(delimiter):
    data = delimiter.join(["age", "sex", "zip"]) + "\n" + delimiter.join(["30", "F", "57000"])
    frame = read_dataset(data.encode(), "x.csv").frame
    assert list(frame.columns) == ["age", "sex", "zip"]
    assert frame.iloc[0].tolist() == ["30", "F", "57000"]


def test_csv_values_are_read_as_written():
    frame = read_dataset(b'zip,age,note\n00501,30,NA\n00501,30.0,\n,031,"F, M"\n', "a.csv").frame
    assert frame["zip"].tolist() == ["00501", "00501", ""]
    assert frame["age"].tolist() == ["30", "30.0", "031"]
    assert frame["note"].tolist() == ["NA", "", "F, M"]


def test_utf8_bom_and_unicode_survive():
    frame = read_dataset("\ufeffville,nom\nThiès,Ndèye\n".encode(), "a.csv").frame
    assert frame.to_dict("records") == [{"ville": "Thiès", "nom": "Ndèye"}]


def test_json_records_with_missing_keys_become_missing_values():
    frame = read_dataset(b'[{"a": "x", "b": 1}, {"a": "y"}]', "a.json").frame
    assert frame["b"].isna().tolist() == [False, True]


def test_parquet_round_trip():
    buffer = io.BytesIO()
    pd.DataFrame({"age": [30, 40], "sex": ["F", None]}).to_parquet(buffer)
    frame = read_dataset(buffer.getvalue(), "a.parquet").frame
    assert frame["age"].tolist() == [30, 40]


def test_format_is_guessed_without_a_known_extension():
    assert list(read_dataset(b'[{"a": 1}]', "upload").frame.columns) == ["a"]
    assert list(read_dataset(b"a;b\n1;2\n", None).frame.columns) == ["a", "b"]


def test_read_path_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        read_path(tmp_path / "missing.csv")
    with pytest.raises(DatasetError, match="is a folder"):
        read_path(tmp_path)


def test_json_true_and_1_are_different_values():
    frame = read_dataset(b'[{"a": 1}, {"a": true}, {"a": 0}, {"a": false}]', "a.json").frame
    assert frame["a"].nunique() == 4


# The canonical table: what is measured is exactly what may be written and delivered. ----------


def parquet_bytes(frame: pd.DataFrame, **kwargs) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, **kwargs)
    return buffer.getvalue()


def test_a_parquet_index_is_an_ordinary_measured_column():
    frame = pd.DataFrame({"sex": ["F", "M"]}, index=pd.Index(["SN-1", "SN-2"], name="NIN"))
    dataset = read_dataset(parquet_bytes(frame), "a.parquet")
    assert dataset.frame["NIN"].tolist() == ["SN-1", "SN-2"]
    written = write_dataset(dataset.frame, dataset)
    assert pq.read_metadata(io.BytesIO(written)).metadata is None  # no pandas or arrow metadata


def test_parquet_dictionaries_categoricals_and_negative_zero_are_canonical():
    frame = pd.DataFrame(
        {
            "c": pd.Categorical(["a", "b", "a"], categories=["a", "b", "SECRET"]),
            "f": [0.0, -0.0, float("nan")],
            "n": pd.array([1, None, 3], dtype="Int64"),
        }
    )
    dataset = read_dataset(parquet_bytes(frame), "a.parquet")
    assert dataset.frame["c"].tolist() == ["a", "b", "a"]
    assert str(dataset.frame["f"].tolist()[1]) == "0.0"
    assert b"SECRET" not in write_dataset(dataset.frame, dataset)


def test_csv_spellings_folded_by_the_parser_are_written_once():
    dataset = read_dataset(b'sex,age\n"F",30\r\nF,31\n', "a.csv")
    assert write_dataset(dataset.frame, dataset) == b"sex,age\nF,30\nF,31\n"


def test_json_numbers_and_mixed_types_have_one_spelling():
    dataset = read_dataset(b'[{"a": 1, "b": 1}, {"a": 1.0, "b": "1"}, {"a": -0.0, "b": true}]')
    assert dataset.frame["a"].tolist() == [1.0, 1.0, 0.0]
    assert dataset.frame["b"].tolist() == ["1", "1", "true"]
    assert "mixes JSON types" in dataset.notes[0]
    assert write_dataset(dataset.frame, dataset) == (
        b'[{"a":1.0,"b":"1"},{"a":1.0,"b":"1"},{"a":0.0,"b":"true"}]'
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'[{"a": 1, "a": 2}]', "repeats the key 'a'"),
        (b'[{"a": NaN}]', "NaN is not a JSON value"),
        (b'[{"a": Infinity}]', "Infinity is not a JSON value"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"NIN,nin\n1,2\n", "'NIN' and 'nin' differ only by case"),
        ("N\u200bIN,NIN\n1,2\n".encode(), "invisible characters"),
        (b'"a\x01",b\n1,2\n', "control characters"),
    ],
)
def test_ambiguous_inputs_are_refused(data, message):
    with pytest.raises(DatasetError, match=message):
        read_dataset(data, "a.json" if data.startswith(b"[") else "a.csv")


def test_limits_refuse_wide_and_decompression_bombs_before_decoding():
    with pytest.raises(DatasetTooLarge, match="3 columns; the broker accepts at most 2"):
        read_dataset(b"a,b,c\n1,2,3\n", "a.csv", limits=ReadLimits(max_columns=2))
    with pytest.raises(DatasetTooLarge, match="cells"):
        read_dataset(b"a,b\n1,2\n3,4\n", "a.csv", limits=ReadLimits(max_cells=3))
    bomb = pa.table({"s": pa.array(["x" * 1000] * 200_000).dictionary_encode()})
    buffer = io.BytesIO()
    pq.write_table(bomb, buffer, compression="zstd")
    assert len(buffer.getvalue()) < 100_000
    with pytest.raises(DatasetTooLarge, match="decodes to more than"):
        read_dataset(buffer.getvalue(), "a.parquet", limits=ReadLimits(max_decoded_bytes=50 << 20))


cell = st.one_of(
    st.none(),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.booleans(),
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    rows=st.lists(st.lists(cell, min_size=3, max_size=3), min_size=1, max_size=8),
    data_format=st.sampled_from(["csv", "json", "parquet"]),
)
def test_reading_the_written_bytes_gives_back_the_measured_table(rows, data_format):
    """For any accepted upload, the bytes the broker writes parse to the table it measured."""
    names = ["a", "b", "c"]
    if data_format == "json":
        data = json.dumps([dict(zip(names, row, strict=True)) for row in rows]).encode()
    elif data_format == "csv":
        text = [[("" if v is None else str(v)) for v in row] for row in rows]
        out = io.StringIO()
        csv.writer(out).writerows([names, *text])
        data = out.getvalue().encode()
    else:
        columns = {n: [row[i] for row in rows] for i, n in enumerate(names)}
        try:
            data = parquet_bytes(pd.DataFrame(columns).astype("string"), index=False)
        except (pa.ArrowException, TypeError, ValueError):
            return
    try:
        dataset = read_dataset(data, f"x.{data_format}")
    except DatasetError:
        return  # refused uploads deliver nothing
    again = read_dataset(write_dataset(dataset.frame, dataset), f"x.{data_format}")
    pd.testing.assert_frame_equal(again.frame, dataset.frame)


@pytest.mark.parametrize(
    "name",
    ["tel_77_123_45_67", "nir 1850578-006084-36", "ana@example.org", "S2hhZHkgRGlvcCA3NzEyMzQ1Njc"],
)
def test_column_names_that_carry_identifiers_are_refused(name):
    with pytest.raises(DatasetError, match="column name"):
        read_dataset(f"age,{name}\n1,2\n".encode(), "a.csv")


@pytest.mark.parametrize(
    "name", ["zip_75001", "patientAgeAtAdmission2024", "numberOfVisitsInYear2023ByType", "ICD10"]
)
def test_ordinary_column_names_pass(name):
    assert list(read_dataset(f"age,{name}\n1,2\n".encode(), "a.csv").frame.columns)[1] == name


def test_a_cell_longer_than_the_limit_is_refused():
    with pytest.raises(DatasetTooLarge, match="a value of column 'note' is 11 characters"):
        read_dataset(b"note\n" + b"x" * 11 + b"\n", "a.csv", limits=ReadLimits(max_cell_chars=10))


def test_the_row_index_pandas_writes_is_dropped_and_said(tmp_path):
    original = pd.DataFrame({"age": ["30", "41", "30"], "sex": ["F", "M", "F"]})
    path = tmp_path / "default.csv"
    original.to_csv(path)  # pandas' default: an unnamed first column 0..n-1
    dataset = read_path(path)
    assert list(dataset.frame.columns) == ["age", "sex"]
    assert dataset.frame.to_dict("list") == original.to_dict("list")
    [note] = dataset.notes
    assert "row numbers 0..2" in note and "dropped" in note
    # What is measured is what leaves: the dropped index is not written either.
    assert write_dataset(dataset.frame, dataset) == b"age,sex\n30,F\n41,M\n30,F\n"


@pytest.mark.parametrize(
    "data",
    [
        b",age\n1,30\n2,41\n",  # starts at 1
        b",age\n0,30\n0,41\n",  # repeats
        b",age\n1,30\n0,41\n",  # out of order
        b",age\nx,30\ny,41\n",  # not numbers
        b",age\n00,30\n1,41\n",  # another spelling of 0
    ],
)
def test_an_unnamed_first_column_that_is_not_a_row_index_is_refused(data):
    with pytest.raises(DatasetError, match=r"first column has no name .* name it in the header"):
        read_dataset(data, "a.csv")


def test_only_the_first_column_may_lack_a_name():
    with pytest.raises(DatasetError, match="column without a name"):
        read_dataset(b",a,\n0,1,2\n", "a.csv")


def test_out_of_core_readers_refuse_an_unnamed_first_column_with_the_way_out():
    from broker.datasets.csv_reader import csv_file_header

    with pytest.raises(DatasetError, match=r"first column has no name .*index=False"):
        csv_file_header(b",a\n0,1\n", "big.csv", ReadLimits())


def test_column_names_remembered_once_passed_are_still_refused_with_each_uploads_label():
    from broker.datasets.column_names import check_column_names

    for _ in range(2):
        check_column_names(["age", "region"], "a.csv")  # passes, then passes from memory
    for label in ("first.csv", "second.csv"):
        with pytest.raises(DatasetError, match=f"^{label} has the column name 'age' more"):
            check_column_names(["age", "region", "age"], label)

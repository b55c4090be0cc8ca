"""Reading CSV, JSON and Parquet, and one clear error for each malformed input."""

import io

import pandas as pd
import pytest

from broker.datasets import DatasetError, read_dataset, read_path


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
    frame = read_dataset(data.encode(), "x.csv")
    assert list(frame.columns) == ["age", "sex", "zip"]
    assert frame.iloc[0].tolist() == ["30", "F", "57000"]


def test_csv_values_are_read_as_written():
    frame = read_dataset(b'zip,age,note\n00501,30,NA\n00501,30.0,\n,031,"F, M"\n', "a.csv")
    assert frame["zip"].tolist() == ["00501", "00501", ""]
    assert frame["age"].tolist() == ["30", "30.0", "031"]
    assert frame["note"].tolist() == ["NA", "", "F, M"]


def test_utf8_bom_and_unicode_survive():
    frame = read_dataset("\ufeffville,nom\nThiès,Ndèye\n".encode(), "a.csv")
    assert frame.to_dict("records") == [{"ville": "Thiès", "nom": "Ndèye"}]


def test_json_records_with_missing_keys_become_missing_values():
    frame = read_dataset(b'[{"a": "x", "b": 1}, {"a": "y"}]', "a.json")
    assert frame["b"].isna().tolist() == [False, True]


def test_parquet_round_trip():
    buffer = io.BytesIO()
    pd.DataFrame({"age": [30, 40], "sex": ["F", None]}).to_parquet(buffer)
    frame = read_dataset(buffer.getvalue(), "a.parquet")
    assert frame["age"].tolist() == [30, 40]


def test_format_is_guessed_without_a_known_extension():
    assert list(read_dataset(b'[{"a": 1}]', "upload").columns) == ["a"]
    assert list(read_dataset(b"a;b\n1;2\n", None).columns) == ["a", "b"]


def test_read_path_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        read_path(tmp_path / "missing.csv")
    with pytest.raises(DatasetError, match="is a folder"):
        read_path(tmp_path)


def test_json_true_and_1_are_different_values():
    frame = read_dataset(b'[{"a": 1}, {"a": true}, {"a": 0}, {"a": false}]', "a.json")
    assert frame["a"].nunique() == 4

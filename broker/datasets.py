"""Read an uploaded or local dataset (CSV, JSON array of records, Parquet) into a DataFrame.

CSV is read as text, so values compare as written ("007" stays "007", an empty field is the
category ""); JSON and Parquet keep their own types (null is a missing value). Every malformed
input raises :class:`DatasetError` with a one-line message that names the problem; callers turn it
into exit status 2 (CLI) or a 422 problem (API).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

FORMATS = ("csv", "json", "parquet")
_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_DELIMITERS = ",;\t|"
_PARQUET_MAGIC = b"PAR1"


class DatasetError(ValueError):
    """The dataset cannot be read; the message is one line meant for the person who sent it."""


def detect_format(name: str | None, head: bytes) -> str:
    """The format named by the file's extension, else guessed from its first bytes."""
    suffix = Path(name or "").suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if suffix and suffix not in ("", ".dat"):
        raise DatasetError(f"Unsupported file type {suffix!r}: send CSV, JSON or Parquet")
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    if head.lstrip()[:1] in (b"[", b"{"):
        return "json"
    return "csv"


def read_dataset(
    data: bytes, name: str | None = None, data_format: str | None = None
) -> pd.DataFrame:
    """Parse ``data`` (the file's bytes) as ``data_format`` or the format its name implies.

    Raises
    ------
    DatasetError
        Empty file, header only, ragged rows, bad UTF-8, duplicate column names, a file that is not
        what its name says, nested JSON values.
    """
    label = name or "the dataset"
    if not data.strip():
        raise DatasetError(f"{label} is empty")
    data_format = data_format or detect_format(name, data[:16])
    if data_format not in FORMATS:
        raise DatasetError(f"Unknown format {data_format!r}: use one of {', '.join(FORMATS)}")
    reader = {"csv": _read_csv, "json": _read_json, "parquet": _read_parquet}[data_format]
    frame = reader(data, label)
    if len(frame.columns) == 0:
        raise DatasetError(f"{label} has no columns")
    if len(frame) == 0:
        raise DatasetError(f"{label} has a header but no data rows")
    _check_column_names(list(frame.columns), label)
    return frame


def read_path(path: str | Path) -> pd.DataFrame:
    """Read a dataset file from disk, with the same errors as :func:`read_dataset`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path} is a folder, not a dataset file") from None
    except OSError as error:
        raise DatasetError(f"{path}: {error.strerror}") from None
    return read_dataset(data, str(path))


def _check_column_names(columns: list, label: str) -> None:
    seen = set()
    for column in columns:
        if not isinstance(column, str) or column.strip() == "":
            raise DatasetError(f"{label} has a column without a name")
        if column in seen:
            raise DatasetError(f"{label} has the column name {column!r} more than once")
        seen.add(column)


def _read_csv(data: bytes, label: str) -> pd.DataFrame:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    head = data[: 1 << 16]
    try:
        head_text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:  # not just a multi-byte character cut at the boundary
            raise DatasetError(f"{label} is not valid UTF-8 text (byte {error.start})") from None
        head_text = head[: error.start].decode("utf-8")
    first_line = head_text.splitlines()[0] if head_text else ""
    delimiter = _sniff_delimiter(head_text)
    header = next(csv.reader([first_line], delimiter=delimiter), [])
    _check_column_names(header, label)
    try:
        table = pa_csv.read_csv(
            io.BytesIO(data),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                column_types={column: pa.string() for column in header},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as error:
        raise DatasetError(f"{label}: {_explain_csv_error(str(error))}") from None
    return table.to_pandas()


def _sniff_delimiter(text: str) -> str:
    sample = "\n".join(text.splitlines()[:50])
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        header = sample.splitlines()[0] if sample else ""
        counts = {d: header.count(d) for d in _DELIMITERS}
        best = max(counts, key=counts.get)
        return best if counts[best] else ","


def _explain_csv_error(message: str) -> str:
    first = message.strip().splitlines()[0]
    if "invalid UTF8" in first or "UTF-8" in first or "utf8" in first.lower():
        return "not valid UTF-8 text"
    if "Expected" in first and "columns" in first:
        return "ragged rows: " + first.removeprefix("CSV parse error: ")
    return first.removeprefix("CSV parse error: ")


def _read_json(data: bytes, label: str) -> pd.DataFrame:
    try:
        records = json.loads(data)
    except UnicodeDecodeError:
        raise DatasetError(f"{label} is not valid UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise DatasetError(
            f"{label} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from None
    if not isinstance(records, list):
        raise DatasetError(
            f"{label} must hold a JSON array of records, not a {type(records).__name__}"
        )
    if not records:
        raise DatasetError(f"{label} is an empty JSON array")
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise DatasetError(f"{label}: item {index} of the JSON array is not an object")
    frame = pd.DataFrame.from_records(records)
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object:
            continue
        if values.map(lambda v: isinstance(v, dict | list)).any():
            raise DatasetError(
                f"{label}: column {column!r} holds nested objects or arrays; flatten them first"
            )
        # As written: true and 1 are different values (Python would count them as one).
        booleans = values.map(lambda v: isinstance(v, bool))
        if booleans.any():
            frame[column] = values.where(~booleans, values.map({True: "true", False: "false"}))
    return frame


def _read_parquet(data: bytes, label: str) -> pd.DataFrame:
    # The schema is checked before any table exists: an error raised while a table is alive
    # keeps it alive in the traceback until shutdown, where Arrow's threads can abort.
    try:
        schema = pq.read_schema(io.BytesIO(data))
    except (pa.ArrowInvalid, OSError) as error:
        if not data.startswith(_PARQUET_MAGIC) or "magic bytes" in str(error):
            raise DatasetError(f"{label} is not a Parquet file") from None
        raise DatasetError(
            f"{label} is a damaged Parquet file: {str(error).splitlines()[0]}"
        ) from None
    _check_column_names(schema.names, label)
    for field in schema:
        if pa.types.is_nested(field.type):
            raise DatasetError(
                f"{label}: column {field.name!r} holds nested values ({field.type}); "
                "flatten them first"
            )
    try:
        return pq.read_table(io.BytesIO(data)).to_pandas()
    except (pa.ArrowInvalid, OSError) as error:
        message = str(error).splitlines()[0]
    raise DatasetError(f"{label} is a damaged Parquet file: {message}")

"""Read an uploaded or local dataset (CSV, JSON array of records, Parquet) into its canonical table.

The canonical table is what the broker measures *and* what it delivers: the writer in
:mod:`broker.datasets.writing` serializes exactly these values, so anything a file format can carry
besides them (a Parquet index or file metadata, unused dictionary entries, a second spelling of a
value such as ``"F"`` quoted and unquoted, ``1`` and ``1.0``, ``0.0`` and ``-0.0``) is dropped
here and never reaches a destination. The rules, by format:

- **CSV**: every value is text as written (``"007"`` is not ``7``); an empty field is the
  category ``""``. UTF-8 only (a leading BOM is dropped); the delimiter is sniffed among
  ``, ; tab |``.
- **JSON** (an array of flat objects): a key missing from a record is a missing value. Per column,
  values of one JSON type keep it (text; integers; numbers, written as floats once one float is
  present, with ``-0.0`` as ``0.0``; booleans); a column mixing types becomes text
  (``1 -> "1"``, ``true -> "true"``) and the dataset's notes say so. Duplicate keys in an object,
  ``NaN`` and ``Infinity`` (not JSON) and nested values are refused.
- **Parquet**: file and pandas metadata are ignored (an index stored by pandas is an ordinary
  column, measured like the others); dictionary-encoded columns are decoded; integer and boolean
  columns keep their type (nullable), floats turn ``-0.0`` into ``0.0`` and ``NaN`` into missing;
  nested types are refused.

Column names: two names with one :func:`broker.names.attribute_key` (case, look-alike letters,
invisible characters) are refused, as are names with control characters.

Every malformed input raises :class:`DatasetError` with a one-line message; input over a
:class:`ReadLimits` bound raises :class:`DatasetTooLarge`. Callers turn them into exit status 2
(CLI) or a 422 / 413 problem (API).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from broker.metrics.content import identifier_in_text
from broker.names import colliding_names

CSV, JSON, PARQUET = "csv", "json", "parquet"
FORMATS = (CSV, JSON, PARQUET)
MEDIA_TYPES = {
    CSV: "text/csv",
    JSON: "application/json",
    PARQUET: "application/vnd.apache.parquet",
}
_EXTENSIONS = {
    ".csv": CSV,
    ".tsv": CSV,
    ".txt": CSV,
    ".json": JSON,
    ".parquet": PARQUET,
    ".pq": PARQUET,
}
_DELIMITERS = ",;\t|"
MAX_NAME_LENGTH = 200
_PARQUET_MAGIC = b"PAR1"
# Parquet is decoded a row group at a time, strings kept as dictionaries until their decoded size
# is known: a small file of one repeated long string must not be expanded before it is refused.
_POINTER_BYTES = 8


class DatasetError(ValueError):
    """The dataset cannot be read; the message is one line meant for the person who sent it."""


class DatasetTooLarge(DatasetError):
    """The dataset is over one of the :class:`ReadLimits` (columns, cells, decoded bytes)."""


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what one dataset may cost once decoded, whatever its size on the wire."""

    max_columns: int = 1_000
    max_cells: int = 20_000_000
    max_decoded_bytes: int = 1 << 30
    max_row_groups: int = 10_000
    max_cell_chars: int = 10_000


@dataclass(frozen=True, eq=False)
class Dataset:
    """A canonical table and how to write it again in the format it came in."""

    frame: pd.DataFrame
    format: str
    delimiter: str = ","
    schema: pa.Schema | None = None  # Parquet: the column types, without any metadata
    notes: tuple[str, ...] = field(default=())

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]


def detect_format(name: str | None, head: bytes) -> str:
    """The format named by the file's extension, else guessed from its first bytes."""
    suffix = Path(name or "").suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if suffix and suffix not in ("", ".dat"):
        raise DatasetError(f"Unsupported file type {suffix!r}: send CSV, JSON or Parquet")
    if head.startswith(_PARQUET_MAGIC):
        return PARQUET
    if head.lstrip()[:1] in (b"[", b"{"):
        return JSON
    return CSV


def read_dataset(
    data: bytes,
    name: str | None = None,
    data_format: str | None = None,
    limits: ReadLimits | None = None,
) -> Dataset:
    """Parse ``data`` (the file's bytes) as ``data_format`` or the format its name implies.

    Raises
    ------
    DatasetError
        Empty file, header only, ragged rows, bad UTF-8, duplicate or look-alike column names,
        a file that is not what its name says, nested JSON values.
    DatasetTooLarge
        More columns, cells or decoded bytes than ``limits`` allow.

    Examples
    --------
    >>> dataset = read_dataset(b'[{"age": 30, "sex": "F"}, {"age": 41.5, "sex": "M"}]', "a.json")
    >>> dataset.format, dataset.frame["age"].tolist()
    ('json', [30.0, 41.5])
    """
    label = name or "the dataset"
    limits = limits or ReadLimits()
    if not data.strip():
        raise DatasetError(f"{label} is empty")
    data_format = data_format or detect_format(name, data[:16])
    if data_format not in FORMATS:
        raise DatasetError(f"Unknown format {data_format!r}: use one of {', '.join(FORMATS)}")
    reader = {CSV: _read_csv, JSON: _read_json, PARQUET: _read_parquet}[data_format]
    dataset = reader(data, label, limits)
    frame = dataset.frame
    if len(frame.columns) == 0:
        raise DatasetError(f"{label} has no columns")
    if len(frame) == 0:
        raise DatasetError(f"{label} has a header but no data rows")
    _check_column_names(list(frame.columns), label)
    _check_size(len(frame), len(frame.columns), label, limits)
    return dataset


def read_path(path: str | Path, limits: ReadLimits | None = None) -> Dataset:
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
    return read_dataset(data, str(path), limits=limits)


def _check_size(rows: int, columns: int, label: str, limits: ReadLimits) -> None:
    if columns > limits.max_columns:
        raise DatasetTooLarge(
            f"{label} has {columns:,} columns; the broker accepts at most {limits.max_columns:,}"
        )
    if rows * columns > limits.max_cells:
        raise DatasetTooLarge(
            f"{label} has {rows:,} rows x {columns:,} columns = {rows * columns:,} cells; the "
            f"broker accepts at most {limits.max_cells:,}"
        )


def _check_column_names(columns: list, label: str) -> None:
    seen = set()
    for column in columns:
        if not isinstance(column, str) or column.strip() == "":
            raise DatasetError(f"{label} has a column without a name")
        if any(unicodedata.category(c) == "Cc" for c in column):
            raise DatasetError(f"{label}: column name {column!r} holds control characters")
        if len(column) > MAX_NAME_LENGTH:
            raise DatasetError(
                f"{label}: a column name is {len(column):,} characters long; at most "
                f"{MAX_NAME_LENGTH} are accepted"
            )
        if found := identifier_in_text(column):
            raise DatasetError(
                f"{label}: column name {column!r} holds what looks like {found}; column names "
                "cross the border with the data and are not measured: rename it"
            )
        if column in seen:
            raise DatasetError(f"{label} has the column name {column!r} more than once")
        seen.add(column)
    pair = colliding_names(columns)
    if pair:
        raise DatasetError(
            f"{label}: columns {pair[0]!r} and {pair[1]!r} differ only by case, look-alike "
            "letters or invisible characters; rename one of them"
        )


# CSV ---------------------------------------------------------------------------------------------


def _read_csv(data: bytes, label: str, limits: ReadLimits) -> Dataset:
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
    _check_size(0, len(header), label, limits)
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
    _check_size(table.num_rows, table.num_columns, label, limits)
    _check_cells(table, label, limits)
    return Dataset(table.to_pandas(), CSV, delimiter=delimiter)


def _sniff_delimiter(text: str) -> str:
    """The delimiter that splits the first records into the most fields, the same number each.

    Read with the csv module (linear time; the standard library's ``Sniffer`` guesses quotes
    with regular expressions that take quadratic time on a crafted line).
    """
    best, best_fields = ",", 1
    for delimiter in _DELIMITERS:
        try:
            rows = list(itertools.islice(csv.reader(io.StringIO(text), delimiter=delimiter), 20))
        except csv.Error:
            continue
        if len(rows) > 1 and not rows[-1]:
            rows = rows[:-1]
        counts = {len(row) for row in rows[:-1] or rows}  # the last may be cut off
        if len(counts) == 1 and (fields := counts.pop()) > best_fields:
            best, best_fields = delimiter, fields
    return best


def _explain_csv_error(message: str) -> str:
    first = message.strip().splitlines()[0]
    if "invalid UTF8" in first or "UTF-8" in first or "utf8" in first.lower():
        return "not valid UTF-8 text"
    if "Expected" in first and "columns" in first:
        return "ragged rows: " + first.removeprefix("CSV parse error: ")
    return first.removeprefix("CSV parse error: ")


# JSON --------------------------------------------------------------------------------------------


def _refuse_constant(name: str):
    raise DatasetError(f"{name} is not a JSON value (JSON has no NaN or infinity)")


def _object_without_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen = set()
        for key, _value in pairs:
            if key in seen:
                raise DatasetError(f"an object repeats the key {key!r}")
            seen.add(key)
    return record


def _read_json(data: bytes, label: str, limits: ReadLimits) -> Dataset:
    try:
        records = json.loads(
            data,
            parse_constant=_refuse_constant,
            object_pairs_hook=_object_without_duplicate_keys,
        )
    except DatasetError as error:
        raise DatasetError(f"{label}: {error}") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{label} is not valid UTF-8 text") from None
    except RecursionError:
        raise DatasetError(f"{label} is nested too deeply: send an array of flat records") from None
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
    columns: dict[str, list] = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise DatasetError(f"{label}: item {index} of the JSON array is not an object")
        for key in record:
            if key not in columns:
                _check_size(len(records), len(columns) + 1, label, limits)
                columns[key] = [None] * len(records)
            columns[key][index] = record[key]
    _check_size(len(records), len(columns), label, limits)
    frame, notes = {}, []
    for name, values in columns.items():
        frame[name], note = _json_column(name, values, label)
        if note:
            notes.append(note)
        if frame[name].dtype == object:
            longest = frame[name].map(lambda v: len(v) if isinstance(v, str) else 0).max()
            _check_cell_length(name, int(longest or 0), label, limits)
    return Dataset(pd.DataFrame(frame), JSON, notes=tuple(notes))


def _json_column(name: str, values: list, label: str) -> tuple[pd.Series, str | None]:
    """One column of JSON values in its canonical type (see the module docstring)."""
    series = pd.Series(values, dtype=object)
    kind = pd.api.types.infer_dtype(series, skipna=True)
    if kind in ("string", "empty"):
        return series, None
    if kind == "boolean":
        return series.astype("boolean"), None
    if kind == "integer":
        try:
            return series.astype("Int64"), None
        except (OverflowError, TypeError, ValueError):  # beyond 64 bits: Python ints, exact
            return series, None
    if kind in ("floating", "mixed-integer-float"):
        return series.astype("float64") + 0.0, None  # + 0.0 turns -0.0 into 0.0
    if series.map(lambda v: isinstance(v, dict | list)).any():
        raise DatasetError(
            f"{label}: column {name!r} holds nested objects or arrays; flatten them first"
        )
    # Mixed JSON types: written as text, so that one value has one spelling.
    text = series.map(lambda v: v if v is None or isinstance(v, str) else _json_text(v))
    return text, (
        f"column {name!r} mixes JSON types (text, numbers, booleans): it is measured and "
        "delivered as text"
    )


def _json_text(value) -> str:
    if isinstance(value, float):
        value += 0.0
    return json.dumps(value)


# Parquet -----------------------------------------------------------------------------------------


def _read_parquet(data: bytes, label: str, limits: ReadLimits) -> Dataset:
    # The metadata is checked before any table exists: an error raised while a table is alive
    # keeps it alive in the traceback until shutdown, where Arrow's threads can abort.
    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        metadata, schema = parquet.metadata, parquet.schema_arrow
    except (pa.ArrowInvalid, OSError) as error:
        if not data.startswith(_PARQUET_MAGIC) or "magic bytes" in str(error):
            raise DatasetError(f"{label} is not a Parquet file") from None
        raise DatasetError(
            f"{label} is a damaged Parquet file: {str(error).splitlines()[0]}"
        ) from None
    _check_column_names(schema.names, label)
    for column in schema:
        if pa.types.is_nested(column.type) or (
            pa.types.is_dictionary(column.type) and pa.types.is_nested(column.type.value_type)
        ):
            raise DatasetError(
                f"{label}: column {column.name!r} holds nested values ({column.type}); "
                "flatten them first"
            )
    _check_size(metadata.num_rows, metadata.num_columns, label, limits)
    if metadata.num_row_groups > limits.max_row_groups:
        raise DatasetTooLarge(
            f"{label} has {metadata.num_row_groups:,} row groups; the broker accepts at most "
            f"{limits.max_row_groups:,}"
        )
    declared = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if declared > limits.max_decoded_bytes:
        raise _too_large(label, declared, limits)
    strings = [c.name for c in schema if _is_text(c.type)]
    try:
        parquet = pq.ParquetFile(io.BytesIO(data), read_dictionary=strings)
        pieces, decoded = [], 0
        for index in range(metadata.num_row_groups):
            piece = parquet.read_row_group(index)
            decoded += _decoded_size(piece)
            if decoded > limits.max_decoded_bytes:
                raise _too_large(label, decoded, limits)
            pieces.append(piece)
        table = pa.concat_tables(pieces) if pieces else schema.empty_table()
        table = _canonical_table(table)
        _check_cells(table, label, limits)
        frame = table.to_pandas(ignore_metadata=True, types_mapper=_nullable_types.get)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as error:
        message = str(error).splitlines()[0]
    else:
        for name in frame.columns:
            if pd.api.types.is_float_dtype(frame[name].dtype):
                frame[name] = frame[name] + 0.0  # -0.0 -> 0.0
        return Dataset(frame, PARQUET, schema=table.schema)
    raise DatasetError(f"{label} is a damaged Parquet file: {message}")


def _check_cells(table: pa.Table, label: str, limits: ReadLimits) -> None:
    """No text cell longer than ``limits.max_cell_chars`` (it would carry a document, not a value,
    and every value is read whole to find identifiers in it)."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            lengths = pc.utf8_length(column)
        elif pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
            lengths = pc.binary_length(column)
        else:
            continue
        _check_cell_length(name, int(pc.max(lengths).as_py() or 0), label, limits)


def _check_cell_length(name: str, longest: int, label: str, limits: ReadLimits) -> None:
    if longest > limits.max_cell_chars:
        raise DatasetTooLarge(
            f"{label}: a value of column {name!r} is {longest:,} characters long; the broker "
            f"accepts at most {limits.max_cell_chars:,} (send documents by another channel)"
        )


def _too_large(label: str, size: int, limits: ReadLimits) -> DatasetTooLarge:
    return DatasetTooLarge(
        f"{label} decodes to more than {size / 2**20:,.0f} MiB; the broker accepts at most "
        f"{limits.max_decoded_bytes / 2**20:,.0f} MiB of decoded data"
    )


def _is_text(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type))
    )


def _decoded_size(table: pa.Table) -> int:
    """Bytes the table will take once every dictionary is expanded (computed without doing it)."""
    total = 0
    for column in table.columns:
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type):
                if len(chunk.dictionary):
                    lengths = pc.binary_length(chunk.dictionary).fill_null(0)
                    used = pc.take(lengths, chunk.indices.fill_null(0))
                    total += int(pc.sum(used).as_py() or 0)
                total += _POINTER_BYTES * len(chunk)
            else:
                total += chunk.nbytes + _POINTER_BYTES * len(chunk)
    return total


def _canonical_table(table: pa.Table) -> pa.Table:
    """Dictionaries decoded, and a schema without any metadata (file, pandas or field)."""
    columns, fields = [], []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        columns.append(column)
        fields.append(pa.field(name, column.type))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


_nullable_types = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.uint8(): pd.UInt8Dtype(),
    pa.uint16(): pd.UInt16Dtype(),
    pa.uint32(): pd.UInt32Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}

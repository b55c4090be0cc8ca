"""CSV into the canonical table (the rules are in :mod:`broker.datasets.reading`).

The header (its names, its number of columns) is checked before the body is parsed.
"""

from __future__ import annotations

import csv
import io
import itertools

import pyarrow as pa
import pyarrow.csv as pa_csv

from broker.datasets.column_names import check_column_names
from broker.datasets.dataset import CSV, Dataset, DatasetError
from broker.datasets.limits import ReadLimits, check_cells, check_size

_DELIMITERS = ",;\t|"


BOM = b"\xef\xbb\xbf"
HEAD_BYTES = 1 << 16
FILE_HEAD_BYTES = HEAD_BYTES + len(BOM)  # what an out-of-core reader reads of a file first


def csv_file_header(head: bytes, label: str, limits: ReadLimits) -> tuple[str, list[str]]:
    """:func:`csv_header` of a file's first :data:`FILE_HEAD_BYTES` bytes, its BOM dropped."""
    head = head[len(BOM) :] if head.startswith(BOM) else head[:HEAD_BYTES]
    return csv_header(head, label, limits)


def read_csv(data: bytes, label: str, limits: ReadLimits) -> Dataset:
    if data.startswith(BOM):
        data = data[len(BOM) :]
    delimiter, header = csv_header(data[:HEAD_BYTES], label, limits)
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
    check_size(table.num_rows, table.num_columns, label, limits)
    check_cells(table, label, limits)
    return Dataset(table.to_pandas(), CSV, delimiter=delimiter)


def csv_header(head: bytes, label: str, limits: ReadLimits) -> tuple[str, list[str]]:
    """The delimiter and the checked column names, from the first bytes of a CSV file (its BOM
    removed): what an out-of-core engine needs to read the rest exactly as this module does."""
    try:
        head_text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:  # not just a multi-byte character cut at the boundary
            raise DatasetError(f"{label} is not valid UTF-8 text (byte {error.start})") from None
        head_text = head[: error.start].decode("utf-8")
    first_line = head_text.splitlines()[0] if head_text else ""
    delimiter = _sniff_delimiter(head_text)
    header = next(csv.reader([first_line], delimiter=delimiter), [])
    check_column_names(header, label)
    check_size(0, len(header), label, limits)
    return delimiter, header


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

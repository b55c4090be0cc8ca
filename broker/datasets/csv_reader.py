"""CSV into the canonical table (the rules are in :mod:`broker.datasets.reading`).

The header (its names, its number of columns) is checked before the body is parsed.

A first column without a name is the row index pandas' ``to_csv`` writes by default: it is
dropped (neither measured nor delivered, and the dataset's notes say so) when its values are
exactly the row numbers 0, 1, ..., n-1; any other unnamed column is refused, to be named.
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
    delimiter, header = csv_header(data[:HEAD_BYTES], label, limits, row_index=True)
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
    notes: tuple[str, ...] = ()
    if header and header[0] == "":
        table, notes = _without_row_index(table, label)
    return Dataset(table.to_pandas(), CSV, delimiter=delimiter, notes=notes)


def _without_row_index(table: pa.Table, label: str) -> tuple[pa.Table, tuple[str, ...]]:
    """The table without its unnamed first column, which must hold exactly 0, 1, ..., n-1."""
    values = table.column(0)
    expected = pa.array([str(i) for i in range(table.num_rows)], type=pa.string())
    if not values.equals(pa.chunked_array([expected])):
        raise DatasetError(
            f"{label}: the first column has no name and does not hold the row numbers 0, 1, "
            "..., n-1 (the index pandas writes): name it in the header"
        )
    note = (
        f"the first column had no name and held the row numbers 0..{table.num_rows - 1} (the "
        "index pandas' to_csv writes): it was dropped, neither measured nor delivered"
    )
    return table.remove_column(0), (note,)


def csv_header(
    head: bytes, label: str, limits: ReadLimits, row_index: bool = False
) -> tuple[str, list[str]]:
    """The delimiter and the checked column names, from the first bytes of a CSV file (its BOM
    removed): what an out-of-core engine needs to read the rest exactly as this module does.

    With ``row_index``, a first column without a name is let through (the caller drops it if
    it is a row index, see the module docstring); without it, it is refused."""
    try:
        head_text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:  # not just a multi-byte character cut at the boundary
            raise DatasetError(f"{label} is not valid UTF-8 text (byte {error.start})") from None
        head_text = head[: error.start].decode("utf-8")
    first_line = head_text.splitlines()[0] if head_text else ""
    delimiter = _sniff_delimiter(head_text)
    header = next(csv.reader([first_line], delimiter=delimiter), [])
    unnamed_first = len(header) > 1 and header[0] == ""
    if unnamed_first and not row_index:
        raise DatasetError(
            f"{label}: the first column has no name (the index pandas' to_csv writes?): name it "
            "in the header, or write the file with to_csv(index=False)"
        )
    check_column_names(header[1:] if unnamed_first else header, label)
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

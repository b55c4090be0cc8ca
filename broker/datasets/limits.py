"""What one dataset may cost once decoded, whatever its size on the wire: :class:`ReadLimits`.

Each bound has its check here; the readers call them as early as the format allows (the CSV
header before the body, the Parquet metadata before any row group, each row group before the
next), and every check raises :class:`DatasetTooLarge`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from broker.datasets.dataset import DatasetError


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


def check_size(rows: int, columns: int, label: str, limits: ReadLimits) -> None:
    if columns > limits.max_columns:
        raise DatasetTooLarge(
            f"{label} has {columns:,} columns; the broker accepts at most {limits.max_columns:,}"
        )
    if rows * columns > limits.max_cells:
        raise DatasetTooLarge(
            f"{label} has {rows:,} rows x {columns:,} columns = {rows * columns:,} cells; the "
            f"broker accepts at most {limits.max_cells:,}"
        )


def check_row_groups(row_groups: int, label: str, limits: ReadLimits) -> None:
    if row_groups > limits.max_row_groups:
        raise DatasetTooLarge(
            f"{label} has {row_groups:,} row groups; the broker accepts at most "
            f"{limits.max_row_groups:,}"
        )


def check_decoded_bytes(size: int, label: str, limits: ReadLimits) -> None:
    if size > limits.max_decoded_bytes:
        raise DatasetTooLarge(
            f"{label} decodes to more than {size / 2**20:,.0f} MiB; the broker accepts at most "
            f"{limits.max_decoded_bytes / 2**20:,.0f} MiB of decoded data"
        )


def check_cells(table: pa.Table, label: str, limits: ReadLimits) -> None:
    """No text cell longer than ``limits.max_cell_chars`` (it would carry a document, not a value,
    and every value is read whole to find identifiers in it)."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            lengths = pc.utf8_length(column)
        elif pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
            lengths = pc.binary_length(column)
        else:
            continue
        check_cell_length(name, int(pc.max(lengths).as_py() or 0), label, limits)


def check_cell_length(name: str, longest: int, label: str, limits: ReadLimits) -> None:
    if longest > limits.max_cell_chars:
        raise DatasetTooLarge(
            f"{label}: a value of column {name!r} is {longest:,} characters long; the broker "
            f"accepts at most {limits.max_cell_chars:,} (send documents by another channel)"
        )

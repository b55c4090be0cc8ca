"""Parquet into the canonical table (the rules are in :mod:`broker.datasets.reading`).

Every bound is checked before the data it guards is decoded: the metadata (names, nested types,
shape, row groups, declared size) before any row group, and each row group's decoded size before
the next is read. Strings stay dictionaries until their decoded size is known: a small file of
one repeated long string must not be expanded before it is refused.
"""

from __future__ import annotations

import io

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from broker.datasets.column_names import check_column_names
from broker.datasets.dataset import PARQUET, Dataset, DatasetError
from broker.datasets.limits import (
    ReadLimits,
    check_cells,
    check_decoded_bytes,
    check_row_groups,
    check_size,
)

PARQUET_MAGIC = b"PAR1"
_POINTER_BYTES = 8


def read_parquet(data: bytes, label: str, limits: ReadLimits) -> Dataset:
    # The metadata is checked before any table exists: an error raised while a table is alive
    # keeps it alive in the traceback until shutdown, where Arrow's threads can abort.
    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        metadata, schema = parquet.metadata, parquet.schema_arrow
    except (pa.ArrowInvalid, OSError) as error:
        if not data.startswith(PARQUET_MAGIC) or "magic bytes" in str(error):
            raise DatasetError(f"{label} is not a Parquet file") from None
        raise DatasetError(
            f"{label} is a damaged Parquet file: {str(error).splitlines()[0]}"
        ) from None
    check_column_names(schema.names, label)
    for column in schema:
        if pa.types.is_nested(column.type) or (
            pa.types.is_dictionary(column.type) and pa.types.is_nested(column.type.value_type)
        ):
            raise DatasetError(
                f"{label}: column {column.name!r} holds nested values ({column.type}); "
                "flatten them first"
            )
    check_size(metadata.num_rows, metadata.num_columns, label, limits)
    check_row_groups(metadata.num_row_groups, label, limits)
    declared = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    check_decoded_bytes(declared, label, limits)
    strings = [c.name for c in schema if _is_text(c.type)]
    try:
        parquet = pq.ParquetFile(io.BytesIO(data), read_dictionary=strings)
        pieces, decoded = [], 0
        for index in range(metadata.num_row_groups):
            piece = parquet.read_row_group(index)
            decoded += _decoded_size(piece)
            check_decoded_bytes(decoded, label, limits)
            pieces.append(piece)
        table = pa.concat_tables(pieces) if pieces else schema.empty_table()
        table = _canonical_table(table)
        check_cells(table, label, limits)
        frame = table.to_pandas(ignore_metadata=True, types_mapper=_nullable_types.get)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as error:
        message = str(error).splitlines()[0]
    else:
        for name in frame.columns:
            if pd.api.types.is_float_dtype(frame[name].dtype):
                frame[name] = frame[name] + 0.0  # -0.0 -> 0.0
        return Dataset(frame, PARQUET, schema=table.schema)
    raise DatasetError(f"{label} is a damaged Parquet file: {message}")


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

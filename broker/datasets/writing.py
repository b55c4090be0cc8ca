"""Write a table in the format its dataset came in: the only bytes the broker ever delivers.

Guarantee (tested as a property): reading the written bytes with :func:`read_dataset` gives back
the same table, value for value and type for type. One value has one spelling (CSV quoting is
minimal and lines end with ``\\n``; JSON is compact UTF-8 with floats in their shortest form;
Parquet is written fresh, without an index, pandas metadata or any key-value metadata), so nothing
rides along besides the values that were measured.
"""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from broker.columns.missing import is_na
from broker.datasets.dataset import CSV, JSON, PARQUET, Dataset


def write_dataset(frame: pd.DataFrame, like: Dataset) -> bytes:
    """``frame`` serialized in ``like``'s format (its delimiter, its column types where they fit).

    Examples
    --------
    >>> from broker.datasets import read_dataset
    >>> dataset = read_dataset(b'a,b\\n"x",1\\nx,2\\n', "t.csv")
    >>> write_dataset(dataset.frame, dataset).decode()
    'a,b\\nx,1\\nx,2\\n'
    """
    writer = {CSV: _write_csv, JSON: _write_json, PARQUET: _write_parquet}[like.format]
    return writer(frame, like)


def _write_csv(frame: pd.DataFrame, like: Dataset) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=like.delimiter, lineterminator="\n")
    writer.writerow(frame.columns)
    columns = [_text(frame[name]) for name in frame.columns]
    writer.writerows(zip(*columns, strict=True))
    return out.getvalue().encode("utf-8")


def _text(values: pd.Series) -> list[str]:
    """CSV cells: text as is; anything else (a label after anonymization) as its text."""
    if pd.api.types.infer_dtype(values, skipna=False) == "string":  # all text, none missing
        return values.tolist()
    return ["" if is_na(v) else v if isinstance(v, str) else str(v) for v in values.tolist()]


def _write_json(frame: pd.DataFrame, like: Dataset) -> bytes:
    columns = [[None if is_na(v) else v for v in frame[name].tolist()] for name in frame]
    names = list(frame.columns)
    records = [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]
    return json.dumps(records, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _write_parquet(frame: pd.DataFrame, like: Dataset) -> bytes:
    known = {f.name: f.type for f in like.schema} if like.schema is not None else {}
    arrays, fields = [], []
    for name in frame.columns:
        array = _arrow_column(frame[name], known.get(name))
        arrays.append(array)
        fields.append(pa.field(name, array.type))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = io.BytesIO()
    pq.write_table(table, sink, store_schema=False)
    return sink.getvalue()


def _arrow_column(values: pd.Series, original: pa.DataType | None) -> pa.Array:
    """The column in its original type when its values still fit it, else as inferred."""
    if original is not None:
        try:
            return pa.array(values, type=original, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            pass  # generalized: labels such as "20-30" where numbers were
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(_text(values), type=pa.string())

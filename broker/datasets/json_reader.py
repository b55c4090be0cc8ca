"""A JSON array of flat records into the canonical table (rules in :mod:`broker.datasets.reading`).

The parser itself refuses duplicate keys and ``NaN``/``Infinity`` literals; each column then
takes its canonical type from the JSON types of its values (:func:`_json_column`).
"""

from __future__ import annotations

import json

import pandas as pd

from broker.datasets.dataset import JSON, Dataset, DatasetError
from broker.datasets.limits import ReadLimits, check_cell_length, check_size
from broker.wire import json_limits


def read_json(data: bytes, label: str, limits: ReadLimits) -> Dataset:
    try:
        records = json_limits.loads(
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
    except json_limits.JsonTooComplex as error:
        reason = "is nested too deeply" if "nested" in str(error) else "cannot be read"
        raise DatasetError(f"{label} {reason} ({error}): send an array of flat records") from None
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
                check_size(len(records), len(columns) + 1, label, limits)
                columns[key] = [None] * len(records)
            columns[key][index] = record[key]
    check_size(len(records), len(columns), label, limits)
    frame, notes = {}, []
    for name, values in columns.items():
        frame[name], note = _json_column(name, values, label)
        if note:
            notes.append(note)
        if frame[name].dtype == object:
            longest = frame[name].map(lambda v: len(v) if isinstance(v, str) else 0).max()
            check_cell_length(name, int(longest or 0), label, limits)
    return Dataset(pd.DataFrame(frame), JSON, notes=tuple(notes))


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


def _json_column(name: str, values: list, label: str) -> tuple[pd.Series, str | None]:
    """One column of JSON values in its canonical type (see :mod:`broker.datasets.reading`)."""
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

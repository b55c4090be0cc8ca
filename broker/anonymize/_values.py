"""Shared helpers: missing values, numbers as written in CSV, labels.

A value is *missing* as :mod:`broker.columns.missing` defines it (NA, or a blank string). Every
helper
works on the distinct values of a column (``pd.factorize``) and maps the answer back to the rows
with integer codes, so the cost per row is a few array operations.
"""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd

from broker.columns.missing import blank_strings
from broker.columns.numbers import numbers_of

SUPPRESSED = "*"
MISSING_LABEL = "NA"

_DATE_TYPES = (pd.Timestamp, datetime.datetime, datetime.date, np.datetime64)
_TIME_TYPES = (*_DATE_TYPES, pd.Timedelta, datetime.timedelta, np.timedelta64)


def factorize(values: pd.Series) -> tuple[np.ndarray, pd.Index | np.ndarray, np.ndarray]:
    """Codes per row, the distinct values, and which distinct values are missing.

    A missing value (NA or a blank string) gets code -1.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    blank = blank_strings(uniques)
    if blank.any():
        remap = np.where(blank, -1, np.cumsum(~blank) - 1)
        codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1)
        uniques = uniques[~blank]
    return codes.astype(np.int64, copy=False), uniques, blank


def is_missing(values: pd.Series) -> np.ndarray:
    """Boolean array: which rows hold a missing value (NA or blank string)."""
    codes, _uniques, _blank_uniques = factorize(values)
    return codes < 0


def parse_numbers(uniques, column: str, *, strict: bool = True) -> np.ndarray | None:
    """The distinct present values of ``column`` as floats.

    With ``strict`` a value that is not a finite number raises ``ValueError`` naming the column and
    the value; without, the answer is None.
    """
    values = pd.Series(np.asarray(uniques, dtype=object))
    kinds = values.map(type)
    if kinds.eq(bool).any() or kinds.map(lambda kind: issubclass(kind, _TIME_TYPES)).any():
        if strict:
            what = "booleans" if kinds.eq(bool).any() else "dates or durations"
            raise ValueError(f"Column {column!r} holds {what}, not numbers")
        return None
    numbers = numbers_of(values)
    bad = ~np.isfinite(numbers)
    if bad.any():
        if strict:
            raise ValueError(
                f"Column {column!r} is not numeric: value {values[bad].iloc[0]!r} is not a number"
            )
        return None
    return numbers


def parse_dates(uniques) -> tuple[np.ndarray, np.ndarray] | None:
    """Distinct present values as (int64 nanoseconds, text as written), or None if not all dates.

    Dates are datetime objects, or strings in ISO 8601 with a ``-`` (``"2024-03-17"``,
    ``"2024-03"``; a bare ``"2024"`` is a number, not a date). Text of a datetime object is
    ``YYYY-MM-DD`` when every value falls at midnight, else its ISO form.
    """
    values = pd.Series(np.asarray(uniques, dtype=object))
    if values.empty:
        return None
    kinds = values.map(type)
    try:
        with warnings.catch_warnings():
            # pandas warns on mixed time-zone offsets (and will raise): not one clock, not dates.
            warnings.simplefilter("error", FutureWarning)
            stamps, text = _stamps(values, kinds)
    except (ValueError, TypeError, OverflowError, FutureWarning):
        return None
    if stamps is None:
        return None
    if stamps.isna().any() or stamps.dt.tz is not None:
        return None
    nanoseconds = stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return nanoseconds, text.to_numpy(dtype=object)


def _stamps(values: pd.Series, kinds: pd.Series) -> tuple[pd.Series | None, pd.Series | None]:
    """Datetimes and their text as written, or (None, None) when the values are not dates."""
    if kinds.map(lambda kind: issubclass(kind, _DATE_TYPES)).all():
        stamps = pd.to_datetime(values)
        if not pd.api.types.is_datetime64_any_dtype(stamps):  # mixed time-zone offsets
            return None, None
        midnight = (stamps == stamps.dt.normalize()).all()
        text = stamps.dt.strftime("%Y-%m-%d") if midnight else stamps.map(pd.Timestamp.isoformat)
        return stamps, text
    if kinds.eq(str).all() and values.str.contains("-").all():
        stamps = pd.to_datetime(values, format="ISO8601", errors="coerce")
        if not pd.api.types.is_datetime64_any_dtype(stamps):  # mixed time-zone offsets
            return None, None
        return stamps, values
    return None, None


def numeric_column(values: pd.Series) -> bool:
    """Whether every present value of ``values`` parses as a finite number (and one is present)."""
    _codes, uniques, _blank = factorize(values)
    return len(uniques) > 0 and parse_numbers(uniques, "", strict=False) is not None


def ordered(values: pd.Series) -> bool:
    """Whether the present values of ``values`` are all numbers or all dates (and one is present).

    Ordered values can be generalized into ranges; other values only into sets or prefixes.
    """
    _codes, uniques, _blank = factorize(values)
    if not len(uniques):
        return False
    return parse_numbers(uniques, "", strict=False) is not None or parse_dates(uniques) is not None


def format_number(value: float) -> str:
    """Shortest plain writing of a number: ``28.0 -> '28'``, ``0.5 -> '0.5'``.

    Examples
    --------
    >>> format_number(28.0), format_number(-0.25), format_number(1e6)
    ('28', '-0.25', '1000000')
    """
    if value == 0:
        return "0"
    return np.format_float_positional(float(value), trim="-")


def labels_to_rows(
    labels: np.ndarray, codes: np.ndarray, original: pd.Series, keep_missing: bool = True
) -> pd.Series:
    """Rows' labels from per-code labels; code -1 (missing) keeps the original value."""
    labels = np.asarray(labels, dtype=object)
    if labels.size == 0:
        labels = np.array([None], dtype=object)
    out = labels[np.maximum(codes, 0)]
    if keep_missing and (codes < 0).any():
        out = out.copy()
        missing = codes < 0
        out[missing] = original.to_numpy(dtype=object)[missing]
    return pd.Series(out, index=original.index, name=original.name, dtype=object)

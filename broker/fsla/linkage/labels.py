"""Which raw values fall in a released label: each label read with the one grammar of
:mod:`broker.anonymize.labels`, each column's distinct values read once in every form a label
may test (see :mod:`broker.fsla.linkage`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from broker.anonymize.labels import Label, read_label
from broker.columns.missing import blank_strings
from broker.columns.numbers import numbers_of
from broker.columns.precision import read_date

_ISO_DATE = re.compile(r"\d{4}-\d{2}")  # a date read into ISO, to the month at least


@dataclass(frozen=True, eq=False)
class _Values:
    """A column's distinct values, read once in every form a label may test."""

    text: pd.Series
    numbers: np.ndarray
    missing: np.ndarray
    years: np.ndarray
    dates: pd.Series  # a date however written, in ISO (broker.columns.precision); else the text
    compact: pd.Series  # without blanks or hyphens, uppercase: a postcode as a mask reads it

    @classmethod
    def of(cls, values: pd.Series) -> _Values:
        values = pd.Series(np.asarray(values, dtype=object))
        missing = values.isna().to_numpy() | blank_strings(values)
        text = values.map(_text).where(~missing, "")
        numbers = numbers_of(text.where(~missing, None))
        pairs = zip(values, missing, strict=True)
        read = [None if absent else read_date(v).canonical for v, absent in pairs]
        dates = pd.Series([r or t for r, t in zip(read, text, strict=True)], dtype=object)
        dated = dates.str.match(_ISO_DATE.pattern).to_numpy(dtype=bool)
        years = np.where(dated, numbers_of(dates.str[:4]), np.nan)
        compact = text.str.replace(r"[\s\-]", "", regex=True).str.upper()
        return cls(text, numbers, missing, years, dates, compact)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, pd.Timestamp) and value == value.normalize():
        return value.strftime("%Y-%m-%d")
    return str(value)


def label_holds(label: Any, values: pd.Series | _Values) -> np.ndarray:
    """Which of ``values`` (raw, as written) fall in ``label`` (as released).

    Examples
    --------
    >>> ages = pd.Series(["25", "30", "41", None])
    >>> label_holds("30-39", ages).tolist(), label_holds("*", ages).tolist()
    ([False, True, False, False], [True, True, True, True])
    >>> label_holds("20-30, NA", ages).tolist()
    [True, True, False, True]
    >>> label_holds("570*", pd.Series(["57001", "58001"])).tolist()
    [True, False]
    >>> label_holds("2024-03", pd.Series(["2024-03-17", "17/03/2024", "2024-04-01"])).tolist()
    [True, True, False]
    >>> label_holds("90+", pd.Series(["93", "89"])).tolist()
    [True, False]
    """
    found = values if isinstance(values, _Values) else _Values.of(values)
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return found.missing.copy()
    if not isinstance(label, str):
        hit = (found.text == _text(label)).to_numpy()
        if isinstance(label, (int, float)) and not isinstance(label, bool):
            hit |= found.numbers == float(label)
        return hit & ~found.missing
    return _holds(read_label(label), found)


def _holds(label: Label, found: _Values) -> np.ndarray:
    """Which values fall in ``label``, under any of its readings."""
    if label.any:
        return np.ones(len(found.missing), dtype=bool)
    hit = (found.text == label.text).to_numpy() & ~found.missing
    if not label.text.strip():
        return hit | found.missing
    if label.missing:
        hit |= found.missing
    if label.number is not None:
        hit |= found.numbers == label.number
    if label.range is not None:
        low, high = label.range
        hit |= (found.numbers >= low) & (found.numbers <= high)
    if label.years is not None:
        hit |= (found.years >= label.years[0]) & (found.years <= label.years[1])
    if label.top is not None:
        hit |= found.numbers >= label.top
    if label.calendar is not None:
        unit = label.calendar
        following = found.dates.str[len(unit) : len(unit) + 1]
        hit |= (found.dates.str.startswith(unit) & following.isin(["", "-", "T", " "])).to_numpy()
    if label.prefix is not None:
        starts = found.text.str.startswith(label.prefix) | found.compact.str.startswith(
            label.prefix
        )
        hit |= starts.to_numpy() & ~found.missing
    for member in label.members:
        hit |= _holds(member, found)
    return hit

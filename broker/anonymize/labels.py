"""Class labels that say no more than the class allows (an anonymized file must not spell out
what it hides).

A quasi-identifier is *numeric* when every present value parses as a finite number (``"28"`` as
written in a CSV file counts), a *date* when it has a datetime dtype or every present value is an
ISO 8601 date string with a ``-`` (``"2024-03-17"``, ``"2024-03"``), else *categorical* (ordered
by the values as text). Labels say no more than the class allows (an anonymized file must not
spell out what it hides):

- numeric: the single value when the whole class (at least ``k`` rows) holds one, else a closed
  range ``"lo-hi"`` whose bounds lie on a 1-2-5 grid with a step of at least half the class's
  spread and at least 1/1000 of the column's span (:func:`grid_bounds`): ``25..40`` shows as
  ``"20-40"``, three phone numbers ``555 0123..555 0125`` as ``"5550000-5560000"``;
- date: the value as written when the class holds one, else the day, month (``"2024-03"``) or
  year the class falls in, else a range of years on the same grid (``"2020/2024"``);
- categorical: the sorted set of the class's values joined by ``", "`` (``"F, M"``), naming only
  values that at least ``k`` rows of the table hold; rarer ones show as one ``*`` (an e-mail, a
  village of one), and a class naming more than 16 values shows ``*`` alone.

Missing values (NA or a blank string) order after every other value and are written ``"NA"`` in a
label (``"20-30, NA"``; a class holding only missing values shows ``"NA"``).

The grammar. Every label the broker releases is written with the functions of this module and
read back with :func:`read_label` (the linkage check, :mod:`broker.fsla.linkage`, reads earlier
releases' labels with it), so the two cannot drift; a round-trip property test holds them
together. A label is one of: a value as written (a category, a number); ``*`` (anything, a
suppressed value); ``NA`` (a missing value); a closed range of numbers ``lo-hi``
(:func:`range_label`); a range of years ``first/last`` (:func:`years_label`); a calendar unit
``2024``, ``2024-03`` or ``2024-03-17`` (a date's prefix); a top category ``90+``
(:func:`top_label`); a masked prefix ``570*`` (:func:`mask_label`); or a set of these joined by
``", "`` (:func:`set_label`). A category that itself holds ``", "`` reads as a set of its parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from broker.anonymize._values import MISSING_LABEL, SUPPRESSED, format_number
from broker.anonymize.cuts import DATE, NUMERIC, Dimension

# --- the grammar: written and read here ----------------------------------------------------------

ANY = SUPPRESSED  # "*": any value (a suppressed one)
MISSING = MISSING_LABEL  # "NA": a missing value
SEPARATOR = ", "  # between the members of a set
_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_RANGE = re.compile(rf"({_NUMBER})-({_NUMBER})")
_YEARS = re.compile(r"(\d{4})/(\d{4})")
_CALENDAR = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?")
_TOP = re.compile(r"(\d+)\+")


def range_label(low: float, high: float) -> str:
    """``"lo-hi"``, or the single number when ``low == high``.

    Examples
    --------
    >>> range_label(20, 30), range_label(5, 5), range_label(-5, -2.5)
    ('20-30', '5', '-5--2.5')
    """
    if low == high:
        return format_number(low)
    return f"{format_number(low)}-{format_number(high)}"


def years_label(first: int, last: int) -> str:
    """The years ``first`` to ``last``, both included: ``"2020/2024"``."""
    return f"{first}/{last}"


def top_label(lowest: int) -> str:
    """The top category of everything from ``lowest`` on: ``"90+"``."""
    return f"{lowest}+"


def mask_label(prefix: str) -> str:
    """``prefix`` followed by anything: ``"570*"`` (``"*"`` alone for an empty prefix)."""
    return f"{prefix}{ANY}"


def set_label(members: Iterable[str]) -> str:
    """Members joined: ``"F, M"``."""
    return SEPARATOR.join(members)


@dataclass(frozen=True)
class Label:
    """A released label read back: every reading it allows (a label such as ``"2020"`` is both
    a number and a calendar year; the linkage check tests each)."""

    text: str
    any: bool = False
    missing: bool = False
    number: float | None = None
    range: tuple[float, float] | None = None
    years: tuple[int, int] | None = None
    calendar: str | None = None
    top: int | None = None
    prefix: str | None = None
    members: tuple[Label, ...] = ()

    @property
    def plain(self) -> bool:
        """Whether the label holds exactly the values written as it is (a category)."""
        return (
            bool(self.text.strip())
            and not self.any
            and not self.missing
            and self.number is None
            and self.range is None
            and self.years is None
            and self.calendar is None
            and self.top is None
            and self.prefix is None
            and not self.members
        )


def read_label(label: str) -> Label:
    """Every reading of ``label`` the grammar allows (see the module docstring).

    Examples
    --------
    >>> read_label("30-39").range, read_label("2020/2024").years, read_label("90+").top
    ((30.0, 39.0), (2020, 2024), 90)
    >>> [m.text for m in read_label("20-30, NA").members], read_label("570*").prefix
    (['20-30', 'NA'], '570')
    """
    number = float(label) if re.fullmatch(_NUMBER, label) else None
    ranged = _RANGE.fullmatch(label)
    bounds = (float(ranged[1]), float(ranged[2])) if ranged else None
    years = _YEARS.fullmatch(label)
    top = _TOP.fullmatch(label)
    masked = len(label) > 1 and label.endswith(ANY) and SEPARATOR not in label.rstrip(ANY)
    prefix = label.rstrip(ANY) if masked and label.rstrip(ANY) else None
    members = (
        tuple(read_label(part) for part in label.split(SEPARATOR)) if SEPARATOR in label else ()
    )
    return Label(
        text=label,
        any=label == ANY,
        missing=label == MISSING,
        number=number,
        range=bounds if bounds and bounds[0] <= bounds[1] else None,
        years=(int(years[1]), int(years[2])) if years else None,
        calendar=label if _CALENDAR.fullmatch(label) else None,
        top=int(top[1]) if top else None,
        prefix=prefix,
        members=members,
    )


def number_of(label: Any) -> float | None:
    """The number a released label is, when it is one (it then holds the values equal to it)."""
    if isinstance(label, bool):
        return None
    if isinstance(label, (int, float, np.integer, np.floating)):
        return float(label) if np.isfinite(label) else None
    if isinstance(label, str):
        return read_label(label).number
    return None


# --- labels of classes -----------------------------------------------------------------------

# Categorical label sets are found with per-class bitmasks up to this many categories.
_BITMASK_CATEGORIES = 256
# A class naming more categories than this is labelled "*": such a list would describe no one.
_SET_LABEL_NAMES = 16
# Range labels use a grid step of at least 1/_GRID_CELLS of the column's span, so that values
# packed close together (sequential ids, phone numbers) are not spelled out by their class.
_GRID_CELLS = 1_000


def class_labels(
    dimension: Dimension,
    codes: np.ndarray,
    starts: np.ndarray,
    k: int,
    people: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """Label of every class from its rows' codes (rows grouped by class, classes from starts).

    A label never states a value more precisely than its class allows (see the module
    docstring): numeric bounds sit on a coarse grid, dates on calendar units, and a category is
    named only when at least ``k`` rows of the table hold it.
    """
    if dimension.kind == NUMERIC:
        return _grid_labels(dimension, codes, starts)
    if dimension.kind == DATE:
        return _calendar_labels(dimension, codes, starts)
    return _set_labels(dimension, codes, starts, k, people)


def _extremes(dimension: Dimension, codes, starts):
    """Per class: lowest and highest present code (-1 when none) and whether one is missing."""
    missing_code = len(dimension.values)
    missing = codes == missing_code
    low = np.minimum.reduceat(codes, starts)
    high = np.maximum.reduceat(np.where(missing, -1, codes), starts)
    has_missing = np.maximum.reduceat(missing, starts) if dimension.has_missing else None
    return low, high, high >= 0, has_missing


def _with_missing(labels: np.ndarray, present: np.ndarray, has_missing) -> np.ndarray:
    labels = np.where(present, labels, "")
    if has_missing is not None:
        with_missing = np.where(present, labels + SEPARATOR + MISSING, MISSING)
        labels = np.where(has_missing, with_missing, labels)
    return labels.astype(object)


def grid_bounds(
    low: np.ndarray, high: np.ndarray, min_step: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """The narrowest interval on a 1-2-5 grid whose step is at least half of ``high - low``
    (and at least ``min_step``) that holds ``[low, high]``.

    The bounds are grid points, not values of the data: the exact values of a class (a phone
    number, a salary) cannot be read off its label, only the stretch of the grid that holds them.

    Examples
    --------
    >>> low, high = grid_bounds(np.array([25.0, 42, 5550123]), np.array([40.0, 64, 5550999]))
    >>> low.tolist(), high.tolist()
    ([20.0, 40.0, 5550000.0], [40.0, 80.0, 5551000.0])
    >>> [b.tolist() for b in grid_bounds(np.array([5550123.0]), np.array([5550125.0]), 1e4)]
    [[5550000.0], [5560000.0]]

    Where no finite grid holds the class (an overflowing spread), the bounds are infinite, and
    the caller shows nothing of the class: this fails closed, never on the class's own values.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _grid_bounds(low, high, min_step)


def _grid_bounds(low, high, min_step):
    # No grid finer than a millionth of the values' magnitude (nor than the smallest float).
    floor = np.maximum(np.maximum(np.abs(low), np.abs(high)) * 1e-6, np.finfo(float).tiny)
    spread = np.maximum(np.maximum(high - low, 2 * min_step), floor)
    exponent = np.floor(np.log10(spread / 2))
    best_low, best_high = np.full(low.shape, -np.inf), np.full(low.shape, np.inf)
    best_width = np.full(low.shape, np.inf)
    for shift in (0, 1):
        for mantissa in (1.0, 2.0, 5.0):
            step = mantissa * 10.0 ** (exponent + shift)
            ok = step >= spread / 2
            lo = np.floor(low / step) * step
            hi = np.ceil(high / step) * step
            hi = np.where(hi <= lo, lo + step, hi)
            width = np.where(ok & np.isfinite(lo) & np.isfinite(hi), hi - lo, np.inf)
            better = width < best_width
            best_low = np.where(better, lo, best_low)
            best_high = np.where(better, hi, best_high)
            best_width = np.where(better, width, best_width)
    # Grid points computed in floating point (0.1 * 3) are rounded to the step's decimals.
    finite = np.isfinite(best_width)
    scale = np.where(finite, 10.0 ** np.clip(-np.floor(np.log10(best_width)) + 1, 0, 15), 1.0)
    rounded_low = np.where(finite, np.round(best_low * scale) / scale + 0.0, -np.inf)
    rounded_high = np.where(finite, np.round(best_high * scale) / scale + 0.0, np.inf)
    return rounded_low, rounded_high


def _grid_labels(dimension: Dimension, codes, starts) -> np.ndarray:
    low, high, present, has_missing = _extremes(dimension, codes, starts)
    values = dimension.values.astype(float)
    low_value = values[np.where(present, low, 0)] if values.size else np.zeros(low.shape)
    high_value = values[np.maximum(high, 0)] if values.size else np.zeros(low.shape)
    # A value is shown as such only when every row of the class holds it (>= k rows): with a
    # missing value beside it, it may be one person's.
    whole = present if has_missing is None else present & ~has_missing
    single = (low_value == high_value) & whole
    # Halves first: the span of values near the largest floats must not overflow to infinity.
    half_span = float(values[-1] / 2 - values[0] / 2) if values.size else 0.0
    grid_low, grid_high = grid_bounds(low_value, high_value, half_span / (_GRID_CELLS / 2))
    pairs = np.stack([np.where(single, low_value, grid_low), grid_high, single])
    unique, inverse = np.unique(pairs, axis=1, return_inverse=True)
    written = [
        format_number(a)
        if one
        else range_label(a, b)
        if np.isfinite(a) and np.isfinite(b)
        else ANY  # no grid holds the class: say nothing of it
        for a, b, one in unique.T
    ]
    labels = np.asarray(written, dtype=object)[inverse.reshape(-1)]
    return _with_missing(labels, present, has_missing)


def _calendar_labels(dimension: Dimension, codes, starts) -> np.ndarray:
    """Dates: the value when the class holds one, else its day, month, year or years."""
    low, high, present, has_missing = _extremes(dimension, codes, starts)
    nanoseconds = dimension.position[: len(dimension.values)].astype("int64")
    if not nanoseconds.size:
        return _with_missing(np.full(low.shape, "", dtype=object), present, has_missing)
    first = pd.DatetimeIndex(nanoseconds[np.where(present, low, 0)].astype("datetime64[ns]"))
    last = pd.DatetimeIndex(nanoseconds[np.maximum(high, 0)].astype("datetime64[ns]"))
    same_year = first.year == last.year
    same_month = same_year & (first.month == last.month)
    same_day = same_month & (first.day == last.day)
    years_low, years_high = grid_bounds(
        first.year.to_numpy(dtype=float), last.year.to_numpy(dtype=float) + 1
    )
    years = [years_label(int(a), int(b) - 1) for a, b in zip(years_low, years_high, strict=True)]
    whole = present if has_missing is None else present & ~has_missing
    labels = np.where(
        (low == high) & whole,  # the value itself only when every row of the class holds it
        dimension.values[np.where(present, low, 0)],
        np.where(
            same_day,
            first.strftime("%Y-%m-%d"),
            np.where(
                same_month,
                first.strftime("%Y-%m"),
                np.where(same_year, first.strftime("%Y"), years),
            ),
        ),
    )
    return _with_missing(labels.astype(object), present, has_missing)


def _holders(dimension: Dimension, people: Sequence[np.ndarray]) -> np.ndarray:
    """How many rows, or with ``people`` how many people (the fewest any labelling sees), hold
    each category of the dimension."""
    counts = np.bincount(dimension.codes, minlength=dimension.card)
    for labelling in people:
        _, persons = np.unique(labelling, return_inverse=True)
        pairs = np.unique(dimension.codes * (persons.max() + 1) + persons)
        holders = np.bincount(pairs // (persons.max() + 1), minlength=dimension.card)
        counts = np.minimum(counts, holders)
    return counts


def _set_labels(
    dimension: Dimension, codes, starts, k: int, people: Sequence[np.ndarray] = ()
) -> np.ndarray:
    """Categories: the sorted set of a class's values, naming only values held by >= k people
    (rows, without ``people``).

    Rarer values (an e-mail, a village of one) show as one ``*``, and a class of more than
    :data:`_SET_LABEL_NAMES` named values as ``*`` alone: a label lists what many rows share,
    never what would single one out.
    """
    frequency = _holders(dimension, people)
    rare_code = dimension.card
    codes = np.where(frequency[codes] >= k, codes, rare_code)
    card = dimension.card + 1
    names = np.append(np.append(dimension.values.astype(object), MISSING), ANY)
    if not dimension.has_missing:
        names = np.delete(names, len(dimension.values))
    class_of_row = np.repeat(np.arange(starts.size), np.diff(np.append(starts, codes.size)))
    pairs = np.unique(class_of_row * card + codes)
    pair_class, pair_code = pairs // card, pairs % card
    named = np.bincount(pair_class, minlength=starts.size)
    if card <= _BITMASK_CATEGORIES:
        words = (card + 63) // 64
        masks = np.empty((starts.size, words), dtype=np.uint64)
        bit = np.left_shift(np.uint64(1), (codes % 64).astype(np.uint64))
        for word in range(words):
            in_word = np.where(codes // 64 == word, bit, np.uint64(0))
            masks[:, word] = np.bitwise_or.reduceat(in_word, starts)
        unique_masks, inverse = np.unique(masks, axis=0, return_inverse=True)
        bits = np.unpackbits(unique_masks.astype("<u8").view(np.uint8), axis=1, bitorder="little")
        label_row, member = np.nonzero(bits)
        bounds = np.searchsorted(label_row, np.arange(1, unique_masks.shape[0]))
        labels = [set_label(group) for group in np.split(names[member], bounds)]
        labels = np.asarray(labels, dtype=object)[inverse.reshape(-1)]
    else:  # many categories: the distinct (class, code) pairs, joined per class
        joined = pd.Series(names[pair_code]).groupby(pair_class, sort=True).agg(set_label)
        labels = joined.to_numpy(dtype=object)
    return np.where(named > _SET_LABEL_NAMES, ANY, labels).astype(object)

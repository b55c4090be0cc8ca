"""Generalization: replace values with coarser ones that still say something true.

- Numbers to ranges of a fixed width (``28 -> "20-30"``) or to quantile bins.
- Dates to their month (``"2024-03"``) or year (``"2024"``).
- Codes to a prefix (``"57001" -> "570*"``).
- Categories to their parent in a hierarchy given by the policy or the request.
- Identifying precision (:mod:`broker.columns.precision`): dates however written to their year or
  month, postcodes however written to a prefix, ages over a cap to one top category (``90+``).

Values are often strings as written in a CSV file (``"28"``): numeric generalizations parse them
with :func:`pandas.to_numeric` and raise ``ValueError`` naming the column when a present value is
not a number. Missing values (NA, or a blank string) are left as they are by every function here:
a missing value is already as general as it gets. Each function parses the column's distinct values
once and maps the answer back to the rows, so the cost per row is an array lookup.

Every function returns a new frame (the input is untouched) in which the generalized column holds
strings (object dtype), index and other columns unchanged.

Each generalization is a map from a column's distinct values to labels, so it acts on counts as
well as on rows (:class:`~broker.engines.base.RecodePlan`); quantile bins depend on how many rows
hold each value too, which the column's count table gives (:func:`quantile_labels`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from broker.anonymize._values import (
    SUPPRESSED,
    factorize,
    labels_to_rows,
    parse_numbers,
)
from broker.anonymize.labels import range_label
from broker.columns.precision import SAFE_HARBOR, age_label, births, date_labels, postcode_label
from broker.columns.roles import require_columns

DATE_LEVELS = ("month", "year")
UNKNOWN_ERROR = "error"
UNKNOWN_SUPPRESS = "suppress"


def generalize_range(
    frame: pd.DataFrame, column: str, width: float, origin: float = 0.0
) -> pd.DataFrame:
    """Numbers to ranges of ``width``: ``x`` becomes ``"lo-hi"`` with ``lo <= x < hi``.

    The ranges are ``[origin + i * width, origin + (i + 1) * width)``; the label writes both ends,
    so ``"20-30"`` holds 20 to 29.99..., and 30 goes to ``"30-40"`` (upper end excluded).

    Parameters
    ----------
    frame : DataFrame
    column : str
        Every present value must parse as a finite number (``"28"``, ``28``, ``"2.5e1"``).
    width : float
        Positive width of every range.
    origin : float, default 0
        Where the ranges start; ``origin=5, width=10`` gives ``"25-35"``.

    Returns
    -------
    DataFrame

    Raises
    ------
    ValueError
        If ``column`` is missing or holds a value that is not a number (named in the message), or
        ``width`` is not positive.

    Examples
    --------
    >>> frame = pd.DataFrame({"Age": ["28", "30", "51", ""]})
    >>> generalize_range(frame, "Age", 10)["Age"].tolist()
    ['20-30', '30-40', '50-60', '']
    """
    require_columns(frame.columns, [column])
    if not (isinstance(width, int | float) and math.isfinite(width) and width > 0):
        raise ValueError(f"The range width for column {column!r} must be positive, got {width!r}")
    codes, uniques, _blank = factorize(frame[column])
    numbers = parse_numbers(uniques, column)
    low = origin + np.floor((numbers - origin) / width) * width
    # Round away float residue (0.1 * 3 = 0.30000000000000004) before writing the ends.
    starts, which = np.unique(np.round(low, 10), return_inverse=True)
    ends = np.round(starts + width, 10)
    written = [range_label(lo, hi) for lo, hi in zip(starts, ends, strict=True)]
    return _replace(frame, column, np.asarray(written, dtype=object)[which], codes)


def generalize_quantiles(frame: pd.DataFrame, column: str, bins: int) -> pd.DataFrame:
    """Numbers to ``bins`` quantile bins, each written as the closed range of the values in it.

    Bin edges are the row quantiles at ``0, 1/bins, ..., 1`` (as :func:`pandas.qcut`, intervals
    ``(e_i, e_{i+1}]``, the first closed); equal edges merge, so heavy ties give fewer bins. The
    label is ``"lo-hi"`` where lo and hi are the smallest and largest value present in the bin
    (a bin holding one distinct value is written as that value). The result depends on the data:
    replaying on the same data gives the same labels.

    Parameters
    ----------
    frame : DataFrame
    column : str
        Every present value must parse as a finite number.
    bins : int
        At least 1.

    Returns
    -------
    DataFrame

    Raises
    ------
    ValueError
        If ``column`` is missing or not numeric (named in the message), or ``bins < 1``.

    Examples
    --------
    >>> frame = pd.DataFrame({"income": ["10", "20", "30", "40", "50", "60"]})
    >>> generalize_quantiles(frame, "income", 2)["income"].tolist()
    ['10-30', '10-30', '10-30', '40-60', '40-60', '40-60']
    """
    require_columns(frame.columns, [column])
    if not isinstance(bins, int | np.integer) or bins < 1:
        raise ValueError(f"The number of bins for column {column!r} must be >= 1, got {bins!r}")
    codes, uniques, _blank = factorize(frame[column])
    numbers = parse_numbers(uniques, column)
    if numbers.size == 0:
        return _replace(frame, column, [], codes)
    row_values = numbers[codes[codes >= 0]]
    edges = np.quantile(row_values, np.linspace(0, 1, int(bins) + 1))
    return _replace(frame, column, _bin_labels(numbers, edges), codes)


def quantile_labels(numbers: np.ndarray, rows: np.ndarray, bins: int) -> np.ndarray:
    """The labels :func:`generalize_quantiles` gives distinct values ``numbers`` held by ``rows``
    rows each, from those counts alone (a column's count table, not its rows).

    The edges are numpy's default (``"linear"``) quantiles of the rows, computed as numpy
    computes them: the two order statistics around each virtual index ``(N - 1) q``, found in
    the cumulative counts, and numpy's interpolation between them, so the bins are the same.

    Examples
    --------
    >>> quantile_labels(np.array([10.0, 20, 30, 40]), np.array([1, 1, 3, 1]), 2).tolist()
    ['10-30', '10-30', '10-30', '40']
    """
    order = np.argsort(numbers, kind="stable")
    cumulative = np.cumsum(rows[order])
    total = int(cumulative[-1])
    virtual = (total - 1) * np.linspace(0, 1, int(bins) + 1)
    last = virtual >= total - 1
    previous = np.where(last, total - 1, np.floor(virtual)).astype(np.int64)
    following = np.where(last, total - 1, previous + 1)
    below = numbers[order][np.searchsorted(cumulative, previous, side="right")]
    above = numbers[order][np.searchsorted(cumulative, following, side="right")]
    gamma = np.where(last, 0.0, virtual - previous)
    step = above - below
    edges = np.where(gamma >= 0.5, above - step * (1 - gamma), below + step * gamma)
    return _bin_labels(numbers, edges)


def _bin_labels(numbers: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each value's bin label: bins ``(e_i, e_{i+1}]`` (the first closed, equal edges merged),
    written as the closed range of the values present in the bin."""
    edges = np.unique(edges)
    bin_of_value = np.searchsorted(edges[1:-1], numbers, side="left")
    count = int(bin_of_value.max()) + 1
    low = np.full(count, np.inf)
    high = np.full(count, -np.inf)
    np.minimum.at(low, bin_of_value, numbers)
    np.maximum.at(high, bin_of_value, numbers)
    bin_labels = [range_label(lo, hi) if lo <= hi else "" for lo, hi in zip(low, high, strict=True)]
    return np.asarray(bin_labels, dtype=object)[bin_of_value]


def generalize_date(frame: pd.DataFrame, column: str, level: str = "month") -> pd.DataFrame:
    """Dates to their month (``"2024-03"``) or year (``"2024"``).

    Values may be datetimes or strings in ISO 8601 (``"2024-03-17"``, ``"2024-03-17T10:00"``).
    Other writings such as ``"03/04/2024"`` are refused rather than guessed (day or month first?).

    Parameters
    ----------
    frame : DataFrame
    column : str
    level : {"month", "year"}

    Returns
    -------
    DataFrame

    Raises
    ------
    ValueError
        If ``column`` is missing, a present value is not an ISO 8601 date (the message names the
        column and the value), or ``level`` is unknown.

    Examples
    --------
    >>> frame = pd.DataFrame({"admitted": ["2024-03-17", "2023-12-01", ""]})
    >>> generalize_date(frame, "admitted")["admitted"].tolist()
    ['2024-03', '2023-12', '']
    >>> generalize_date(frame, "admitted", "year")["admitted"].tolist()
    ['2024', '2023', '']
    """
    require_columns(frame.columns, [column])
    if level not in DATE_LEVELS:
        raise ValueError(f"Date level for column {column!r} must be one of {DATE_LEVELS}")
    codes, uniques, _blank = factorize(frame[column])
    values = pd.Series(np.asarray(uniques, dtype=object))
    dates = pd.to_datetime(values, errors="coerce", format="ISO8601", utc=False)
    bad = dates.isna().to_numpy()
    if bad.any():
        raise ValueError(
            f"Column {column!r} is not a date column: value {values[bad].iloc[0]!r} is not an "
            "ISO 8601 date (YYYY-MM-DD)"
        )
    labels = dates.dt.strftime("%Y-%m" if level == "month" else "%Y").tolist()
    return _replace(frame, column, labels, codes)


def generalize_prefix(
    frame: pd.DataFrame, column: str, keep: int, token: str = SUPPRESSED
) -> pd.DataFrame:
    """Codes to their first ``keep`` characters followed by ``"*"`` (``"57001" -> "570*"``).

    Values are taken as written (a number ``57001`` as ``"57001"``). A value of ``keep``
    characters or fewer is left as it is: it has nothing to hide beyond its prefix.

    Parameters
    ----------
    frame : DataFrame
    column : str
    keep : int
        Leading characters kept, ``>= 0`` (0 masks every present value).
    token : str, default "*"

    Returns
    -------
    DataFrame

    Raises
    ------
    ValueError
        If ``column`` is missing or ``keep`` is negative.

    Examples
    --------
    >>> frame = pd.DataFrame({"zip": ["57001", "57140", "99", None], "NIN": [25580917] * 4})
    >>> generalize_prefix(frame, "zip", 3)["zip"].tolist()
    ['570*', '571*', '99', None]
    >>> generalize_prefix(frame, "NIN", 2)["NIN"].iloc[0]
    '25*'
    """
    require_columns(frame.columns, [column])
    if not isinstance(keep, int | np.integer) or keep < 0:
        raise ValueError(f"The prefix length for column {column!r} must be >= 0, got {keep!r}")
    codes, uniques, _blank = factorize(frame[column])
    text = pd.Series(np.asarray(uniques, dtype=object)).astype(str)
    labels = text.where(text.str.len() <= keep, text.str[: int(keep)] + token).tolist()
    return _replace(frame, column, labels, codes)


def generalize_hierarchy(
    frame: pd.DataFrame,
    column: str,
    hierarchy: Mapping[str, str],
    levels: int = 1,
    unknown: str = UNKNOWN_ERROR,
) -> pd.DataFrame:
    """Categories to their ancestor ``levels`` steps up a hierarchy (value -> parent), or to
    their label at level ``levels`` of a level table (value -> [level 1, level 2, ...], the
    form ARX writes: :mod:`broker.anonymize.hierarchies`; past its last level, the last).

    Values are looked up as written (``str(value)``). At the first step every present value must
    have a parent; a value without one is *unknown*: with ``unknown="error"`` (the default) that is
    a ``ValueError`` naming the column and the value, so a policy's hierarchy with a gap is noticed
    rather than leaking the value; with ``unknown="suppress"`` it becomes ``"*"``. From the second
    step on, a value that has no parent is a root and stays as it is.

    Parameters
    ----------
    frame : DataFrame
    column : str
    hierarchy : mapping of str to str, or of str to a sequence of str
        Each value's parent, e.g. ``{"Dakar": "Senegal", "Senegal": "West Africa"}``, or each
        value's labels from level 1 up, e.g. ``{"Dakar": ["Senegal", "West Africa"]}``.
    levels : int, default 1
        Steps up the hierarchy, ``>= 1``.
    unknown : {"error", "suppress"}

    Returns
    -------
    DataFrame

    Raises
    ------
    ValueError
        If ``column`` is missing, ``levels < 1``, or a value is unknown and ``unknown="error"``.

    Examples
    --------
    >>> tree = {"Dakar": "Senegal", "Thies": "Senegal", "Lyon": "France",
    ...         "Senegal": "Africa", "France": "Europe"}
    >>> frame = pd.DataFrame({"city": ["Dakar", "Lyon", "Thies"]})
    >>> generalize_hierarchy(frame, "city", tree)["city"].tolist()
    ['Senegal', 'France', 'Senegal']
    >>> generalize_hierarchy(frame, "city", tree, levels=2)["city"].tolist()
    ['Africa', 'Europe', 'Africa']
    >>> table = {"Dakar": ["SN", "*"], "Thies": ["SN", "*"], "Lyon": ["FR", "*"]}
    >>> generalize_hierarchy(frame, "city", table)["city"].tolist()
    ['SN', 'FR', 'SN']
    """
    require_columns(frame.columns, [column])
    if not isinstance(levels, int | np.integer) or levels < 1:
        raise ValueError(f"Hierarchy levels for column {column!r} must be >= 1, got {levels!r}")
    if unknown not in (UNKNOWN_ERROR, UNKNOWN_SUPPRESS):
        raise ValueError(f"unknown must be 'error' or 'suppress' for column {column!r}")
    codes, uniques, _blank = factorize(frame[column])
    current = pd.Series(np.asarray(uniques, dtype=object)).astype(str)
    if is_level_table(hierarchy):
        top = {
            str(key): [str(label) for label in row][: int(levels)] for key, row in hierarchy.items()
        }
        stepped = current.map({key: row[-1] for key, row in top.items() if row})
        unknown_values = stepped.isna().to_numpy()
        if unknown_values.any() and unknown == UNKNOWN_ERROR:
            raise ValueError(
                f"Value {current[unknown_values].iloc[0]!r} of column {column!r} is not in the "
                "hierarchy"
            )
        return _replace(frame, column, stepped.where(~unknown_values, SUPPRESSED).tolist(), codes)
    parents = {str(key): str(value) for key, value in hierarchy.items()}
    stepped = current.map(parents)
    unknown_values = stepped.isna().to_numpy()
    if unknown_values.any() and unknown == UNKNOWN_ERROR:
        raise ValueError(
            f"Value {current[unknown_values].iloc[0]!r} of column {column!r} is not in the "
            "hierarchy"
        )
    current = stepped.where(~unknown_values, SUPPRESSED)
    for _step in range(int(levels) - 1):
        stepped = current.map(parents)
        if stepped.isna().all():
            break
        current = stepped.where(stepped.notna(), current)
    return _replace(frame, column, current.tolist(), codes)


def is_level_table(hierarchy: Mapping) -> bool:
    """Whether ``hierarchy`` gives each value its labels by level (lists), not its parent."""
    return any(isinstance(row, list | tuple) for row in hierarchy.values())


def coarsen_dates(frame: pd.DataFrame, column: str, level: str = "year") -> pd.DataFrame:
    """Dates written any way :mod:`broker.columns.precision` reads (ISO, day first, month names,
    with a time) to their year (or month); a value with a digit that reads as no date is masked
    (``*``: its precision is unknown). Missing and digit-free values stay. In a column of
    birth dates (its name says birth), the years that may tell an age over 89 leave as one top
    category (``1800/1936`` in 2026), as Safe Harbor aggregates them.

    >>> frame = pd.DataFrame({"born": ["1983-04-12", "12/04/1983", "12 avril 1983", "n/a"]})
    >>> coarsen_dates(frame, "born")["born"].tolist()
    ['1983', '1983', '1983', 'n/a']
    """
    require_columns(frame.columns, [column])
    if level not in DATE_LEVELS:
        raise ValueError(f"Date level for column {column!r} must be one of {DATE_LEVELS}")
    codes, uniques, _blank = factorize(frame[column])
    max_age = SAFE_HARBOR.age if births(column) else None
    labels = date_labels(pd.Series(np.asarray(uniques, dtype=object)), level, max_age)
    return _replace(frame, column, labels, codes)


def truncate_postcodes(frame: pd.DataFrame, column: str, keep: int) -> pd.DataFrame:
    """Postcodes (blanks and hyphens removed, uppercase) to their first ``keep`` characters
    followed by ``*``; a shorter one stays as it is, one that reads as no postcode is masked.

    >>> frame = pd.DataFrame({"zip": ["75011", "75 011", "\u00a010200"]})
    >>> truncate_postcodes(frame, "zip", 3)["zip"].tolist()
    ['750*', '750*', '102*']
    """
    require_columns(frame.columns, [column])
    if not isinstance(keep, int | np.integer) or keep < 0:
        raise ValueError(f"The prefix length for column {column!r} must be >= 0, got {keep!r}")
    return _relabelled(frame, column, lambda value: postcode_label(value, int(keep)))


def top_code(frame: pd.DataFrame, column: str, max_age: int) -> pd.DataFrame:
    """Ages however written (``93``, ``93 ans``, full-width digits) as numbers up to
    ``max_age``, and older ones as one top category (``"90+"`` for 89); a value that reads as
    no age is masked.

    >>> frame = pd.DataFrame({"age": ["34", "93 ans", "\uff19\uff13", "92-99"]})
    >>> top_code(frame, "age", 89)["age"].tolist()
    ['34', '90+', '90+', '90+']
    """
    require_columns(frame.columns, [column])
    if not isinstance(max_age, int | np.integer) or max_age < 0:
        raise ValueError(f"The top age for column {column!r} must be >= 0, got {max_age!r}")
    return _relabelled(frame, column, lambda value: age_label(value, int(max_age)))


def _relabelled(frame: pd.DataFrame, column: str, label) -> pd.DataFrame:
    """``column`` with each distinct value replaced by ``label(value)`` (missing ones kept)."""
    codes, uniques, _blank = factorize(frame[column])
    labels = [label(value) for value in np.asarray(uniques, dtype=object).tolist()]
    return _replace(frame, column, labels, codes)


def _replace(frame: pd.DataFrame, column: str, labels, codes: np.ndarray) -> pd.DataFrame:
    out = frame.copy()
    out[column] = labels_to_rows(np.asarray(labels, dtype=object), codes, frame[column])
    return out

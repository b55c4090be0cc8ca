"""What a missing value is, written once for the whole broker.

A value is *missing* when pandas says so (None, NaN, NaT, pd.NA: what the readers give for an
empty JSON or Parquet cell) or when it is a string that is empty after stripping blanks (what a
CSV file holds for an empty field, since CSV values are read as text).

Where it matters:

- the transformations (generalization, Mondrian, masking) leave a missing value as it is, and a
  class label writes it ``NA``;
- the content checks (value kinds, direct identifiers) skip missing values;
- counting (every measure, every engine: :mod:`broker.engines.base`) keeps each value as written,
  so an NA cell is one category and a blank string another.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def is_missing(value: object) -> bool:
    """Whether one value is missing.

    Examples
    --------
    >>> [is_missing(v) for v in (None, float("nan"), pd.NA, "", "  ", "0", 0)]
    [True, True, True, True, True, False, False]
    """
    return is_na(value) or (isinstance(value, str) and not value.strip())


def is_na(value: object) -> bool:
    """Whether one value is pandas' missing value (None, NaN, NaT, pd.NA): an empty cell in
    JSON or Parquet. The writer keeps these apart from blank strings, which are values as written.
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and value != value


def blank_strings(values) -> np.ndarray:
    """Which of ``values`` (distinct values, NA already set apart) are blank strings."""
    array = values.to_numpy(dtype=object) if isinstance(values, pd.Series) else values
    array = np.asarray(array, dtype=object).ravel()
    return np.fromiter(
        (type(v) is str and not v.strip() for v in array), dtype=bool, count=len(array)
    )

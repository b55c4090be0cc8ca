"""What reading sender text as numbers means, written once: ``pd.to_numeric`` with the one guard
it needs.

pandas 2.3's number parser crashes the whole process (a segmentation fault, not an exception) on
some text with an exponent of five digits or more (``"4e4920323432353234373736"``), and any cell
of any upload can hold such text. No finite number is written so, so such text is not a number,
and it never reaches the parser. Every reading of sender text as numbers calls
:func:`numbers_of`; ``tests/test_layering.py`` checks that nothing else calls ``pd.to_numeric``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

_HUGE_EXPONENT = re.compile(r"[eE]\s*[+-]?\s*\d{5,}")


def numbers_of(values) -> np.ndarray:
    """``pd.to_numeric(values, errors="coerce")`` as floats, missing where a value is not a
    number; text with a huge exponent is not a number (and never reaches pandas' parser).
    Every reading of sender text as numbers goes through here.

    >>> numbers_of(["28", "1e3", "x", "4e4920323432353234373736"]).tolist()
    [28.0, 1000.0, nan, nan]
    """
    array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        array = array.ravel()
    huge = np.fromiter(
        (isinstance(v, str) and _HUGE_EXPONENT.search(v) is not None for v in array),
        dtype=bool,
        count=len(array),
    )
    if huge.any():
        array = np.where(huge, None, array)
    numbers = pd.to_numeric(array, errors="coerce")  # an array in, an array out: no Series
    if numbers.dtype == object:  # missing values pandas could not make NaN
        return pd.Series(numbers, dtype=object).to_numpy(dtype=float, na_value=np.nan)
    return numbers.astype(float)

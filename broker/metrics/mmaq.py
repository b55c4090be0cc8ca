"""Shannon index, stabilizer and Mmaq of an attribute or a combination of attributes.

Naming: for one attribute (or one combination, whose categories are the distinct tuples) with N
rows and S categories of sizes n_1..n_S, p_i = n_i / N:

- Shannon index ``H = -sum p_i ln p_i``; normalized index ``Hn = H / ln N`` in [0, 1].
- Stabilizer ``P = prod p_i``, kept as ``log10 P = sum log10 n_i - S log10 N`` because P underflows
  float64 from a few hundred rows on (200 singletons give 10^-460.2).
- Mmaq (Gaye et al. 2024) ``= P`` when Hn = 1 (S = N), else ``P / (1 - Hn)``, with
  ``1 - Hn = sum n_i ln n_i / (N ln N)`` computed directly to avoid cancellation near Hn = 1.
  The paper writes H in nats, which makes 1 - H negative once S > e; the normalized index is the
  reading under which all of the paper's claims hold (docs/explanations/measures.md).
- Mmaq index ``= log10 Mmaq / (-N log10 N)`` in [0, 1]: 0 anonymous, 1 identifier; about the average
  prosecutor risk 1/k for equal classes of size k, whatever N is.

Class: ``anonymous`` when S = 1 (Mmaq = 1), ``identifier`` when S = N (Mmaq = N^-N; also N = 1),
``quasi_identifier`` otherwise (0 < Mmaq < 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.engines.pandas import PandasEngine

ANONYMOUS = "anonymous"
QUASI_IDENTIFIER = "quasi_identifier"
IDENTIFIER = "identifier"


@dataclass(frozen=True)
class MmaqMeasure:
    """The Mmaq family of figures for one attribute or attribute combination."""

    rows: int
    categories: int
    shannon: float
    shannon_normalized: float
    log10_stabilizer: float
    log10_mmaq: float
    mmaq_index: float
    attribute_class: str

    @property
    def mmaq(self) -> str:
        """Mmaq in scientific notation with 4 significant digits, exact even far below 1e-308."""
        return format_power_of_ten(self.log10_mmaq)

    def as_dict(self) -> dict:
        return {
            "rows": self.rows,
            "categories": self.categories,
            "shannon": self.shannon,
            "shannon_normalized": self.shannon_normalized,
            "log10_stabilizer": self.log10_stabilizer,
            "log10_mmaq": self.log10_mmaq,
            "mmaq": self.mmaq,
            "mmaq_index": self.mmaq_index,
            "class": self.attribute_class,
        }


def format_power_of_ten(log10_value: float, digits: int = 4) -> str:
    """Write ``10 ** log10_value`` as ``"6.223e-461"`` without ever forming the float.

    Examples
    --------
    >>> format_power_of_ten(-460.20599913279624)
    '6.223e-461'
    >>> format_power_of_ten(0.0)
    '1.000e+00'
    """
    exponent = math.floor(log10_value)
    mantissa = round(10 ** (log10_value - exponent), digits - 1)
    if mantissa >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    sign = "-" if exponent < 0 else "+"
    return f"{mantissa:.{digits - 1}f}e{sign}{abs(exponent):02d}"


def mmaq_from_counts(counts: Sequence[int] | np.ndarray) -> MmaqMeasure:
    """Mmaq figures from category sizes n_1..n_S.

    Parameters
    ----------
    counts : array of positive int
        The size of each category; their sum is the number of rows N.

    Returns
    -------
    MmaqMeasure

    Raises
    ------
    ValueError
        If there are no rows (N = 0 has no measure) or a count is not positive.

    Examples
    --------
    >>> m = mmaq_from_counts([5, 4])
    >>> round(m.log10_mmaq, 4), m.attribute_class
    (-0.4446, 'quasi_identifier')
    >>> mmaq_from_counts([1] * 200).mmaq
    '6.223e-461'
    """
    # Sorted so that the float sums depend on the multiset of counts only, not on category order
    # (counts already ascending, as a search's near-unique sets come, are not copied).
    n = np.asarray(counts, dtype=np.int64)
    if n.size > 1 and not (n[1:] >= n[:-1]).all():
        n = np.sort(n)
    if n.size == 0 or n.sum() == 0:
        raise ValueError("The dataset has no rows: Mmaq is not defined for N = 0")
    if (n <= 0).any():
        raise ValueError("Category counts must be positive")
    rows, categories = int(n.sum()), int(n.size)
    if rows == 1:
        # One row identifies its owner: S = N = 1, Mmaq = N^-N = 1.
        return MmaqMeasure(1, 1, 0.0, 1.0, 0.0, 0.0, 1.0, IDENTIFIER)

    log_rows = math.log(rows)
    logs = np.log(n)
    logs *= n  # in place: one temporary array the size of the counts, not two
    n_log_n = float(np.sum(logs))  # sum n_i ln n_i, 0 for singletons
    del logs
    one_minus_hn = n_log_n / (rows * log_rows)
    shannon = log_rows - n_log_n / rows
    log10_stabilizer = float(np.sum(np.log10(n))) - categories * math.log10(rows)

    if categories == rows:
        attribute_class = IDENTIFIER
        log10_mmaq = log10_stabilizer
        one_minus_hn = 0.0
    else:
        attribute_class = ANONYMOUS if categories == 1 else QUASI_IDENTIFIER
        log10_mmaq = log10_stabilizer - math.log10(one_minus_hn)
    if categories == 1:
        log10_stabilizer = log10_mmaq = 0.0  # exactly: P = 1 and 1 - Hn = 1

    mmaq_index = log10_mmaq / (-rows * math.log10(rows))
    return MmaqMeasure(
        rows=rows,
        categories=categories,
        shannon=shannon,
        shannon_normalized=1.0 - one_minus_hn,
        log10_stabilizer=log10_stabilizer,
        log10_mmaq=log10_mmaq,
        mmaq_index=min(max(0.0, mmaq_index), 1.0),  # 0.0 first: never "-0.0"
        attribute_class=attribute_class,
    )


def mmaq(frame: pd.DataFrame, columns: str | Sequence[str]) -> MmaqMeasure:
    """Mmaq figures of one column, or of the combination of several columns.

    Examples
    --------
    >>> frame = pd.DataFrame({"sex": list("FFFFFMMMM")})
    >>> mmaq(frame, "sex").mmaq
    '3.592e-01'
    """
    columns = [columns] if isinstance(columns, str) else list(columns)
    return mmaq_from_counts(PandasEngine(frame, columns).counts([columns])[0].rows)

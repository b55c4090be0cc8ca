"""Information loss of an anonymized frame against its original.

Naming: the *original* frame has N rows; the *anonymized* one keeps some of them (matched by
index label; the others are *suppressed*) with generalized or masked values, and may lack columns.
For one attribute, x is a row's original value and y its published one.

- **Non-uniform entropy** (De Waal and Willenborg 1999; normalized as in Prasser, Bild and Kuhn,
  "A benchmark of globally-optimal anonymization methods for biomedical data", and ARX). The loss
  of attribute j is ``L_j = sum over rows of -log2 P(x | y)``, in bits: how much is still unknown
  about the original value once the published one is read. For a published row,
  ``P(x | y) = n_xy / n_y`` counted over the published rows (the empirical conditional entropy,
  ``N_kept * H(X | Y)``). A suppressed row, or every row when the column is dropped, counts as
  generalized to the whole domain: ``P(x | y) = n_x / N`` over the original table. The most an
  attribute can lose is therefore ``max_j = N * H(X)`` (everything suppressed). **Utility** is the
  share kept, in percent: ``100 * (1 - sum_j L_j / sum_j max_j)`` (100 when every attribute is
  constant, since nothing can be lost). Values compare as written; a missing value is a category.
- **Discernibility metric** (Bayardo and Agrawal 2005): ``sum over classes |E|^2`` over the
  published rows' classes on the given columns, plus ``N`` for each suppressed row (a suppressed
  row is indistinguishable from the whole table). Lower is better; the floor is N (every row
  unique, nothing generalized).
- **Suppressed cell share**: cells of the original (N x its columns) that do not reach the output
  as written: every cell of a dropped column or of a suppressed row, and each published cell that
  reads ``"*"`` where the original did not. Generalized cells are not counted here.

Row-level on purpose: the loss compares each row's original value with its published one, so it
needs counts over a row-aligned join of the two tables (the index here; a stable row id in an
engine that does not hold the rows in memory), not the count tables of either alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.anonymize._values import SUPPRESSED
from broker.columns.roles import require_columns
from broker.engines.codes import Grouping, combine, encode_column


@dataclass(frozen=True)
class InformationLoss:
    """What an anonymization cost; see the module docstring for the definitions.

    Attributes
    ----------
    utility_percent : float
        Non-uniform entropy kept over the measured attributes, 0 to 100.
    attribute_utility_percent : dict of str to float
        The same per attribute.
    discernibility : int
    suppressed_rows : int
    suppressed_cell_share : float
        0 to 1.
    """

    utility_percent: float
    attribute_utility_percent: dict[str, float]
    discernibility: int
    suppressed_rows: int
    suppressed_cell_share: float

    def as_dict(self) -> dict:
        return {
            "utility_percent": self.utility_percent,
            "attribute_utility_percent": dict(self.attribute_utility_percent),
            "discernibility": self.discernibility,
            "suppressed_rows": self.suppressed_rows,
            "suppressed_cell_share": self.suppressed_cell_share,
        }


def information_loss(
    original: pd.DataFrame,
    anonymized: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    class_columns: Sequence[str] | None = None,
) -> InformationLoss:
    """Non-uniform entropy utility, discernibility and suppression of ``anonymized``.

    Parameters
    ----------
    original : DataFrame
        The data before anonymization; its index labels must be unique.
    anonymized : DataFrame
        The published rows, index labels taken from ``original``; rows of ``original`` that are
        absent count as suppressed.
    quasi_identifiers : sequence of str
        Attributes whose utility is measured (columns of ``original``; one absent from
        ``anonymized`` counts as fully suppressed).
    class_columns : sequence of str, optional
        Columns forming the equivalence classes for the discernibility metric; default the
        quasi-identifiers present in ``anonymized``. No such column: one class.

    Returns
    -------
    InformationLoss

    Raises
    ------
    ValueError
        If a quasi-identifier is not a column of ``original`` (named), the original has no rows or
        a repeated index label, or ``anonymized`` holds a row label ``original`` lacks.

    Examples
    --------
    Four rows, ages 20, 20, 30, 40 (H = 1.5 bits, so at most 6 bits to lose); publishing
    ``"20-30"`` for the first three loses ``3 * H(1/3 of 30, 2/3 of 20) = 2.755`` bits:

    >>> original = pd.DataFrame({"age": ["20", "20", "30", "40"]})
    >>> anonymized = pd.DataFrame({"age": ["20-30", "20-30", "20-30", "40"]})
    >>> loss = information_loss(original, anonymized, ["age"])
    >>> round(loss.utility_percent, 2), loss.discernibility, loss.suppressed_rows
    (54.09, 10, 0)
    """
    quasi_identifiers = list(quasi_identifiers)
    require_columns(original.columns, quasi_identifiers, "Quasi-identifier")
    rows = len(original)
    if rows == 0:
        raise ValueError("The original dataset has no rows: information loss is not defined")
    if not original.index.is_unique:
        raise ValueError("The original dataset's row labels repeat: rows cannot be matched")
    positions = original.index.get_indexer(anonymized.index)
    if (positions < 0).any():
        unknown = anonymized.index[positions < 0].tolist()[0]
        raise ValueError(f"Row {unknown!r} of the anonymized data is not in the original")
    kept = np.zeros(rows, dtype=bool)
    kept[positions] = True
    suppressed = rows - int(kept.sum())

    lost_bits, most_bits, per_attribute = 0.0, 0.0, {}
    for name in quasi_identifiers:
        loss, most = _entropy_loss(original[name], anonymized.get(name), positions)
        lost_bits += loss
        most_bits += most
        per_attribute[name] = 100.0 if most <= 0 else 100.0 * (1.0 - loss / most)
    utility = 100.0 if most_bits <= 0 else 100.0 * (1.0 - lost_bits / most_bits)

    if class_columns is None:
        class_columns = [name for name in quasi_identifiers if name in anonymized.columns]
    require_columns(anonymized.columns, class_columns, "Class column")
    if len(anonymized) == 0:
        squares = 0
    elif class_columns:
        grouping = combine([encode_column(anonymized[name]) for name in class_columns])
        squares = int(np.sum(grouping.counts().astype(np.int64) ** 2))
    else:
        squares = len(anonymized) ** 2
    discernibility = squares + suppressed * rows

    return InformationLoss(
        utility_percent=float(min(max(utility, 0.0), 100.0)),
        attribute_utility_percent={
            k: float(min(max(v, 0.0), 100.0)) for k, v in per_attribute.items()
        },
        discernibility=int(discernibility),
        suppressed_rows=suppressed,
        suppressed_cell_share=_suppressed_cells(original, anonymized, positions, suppressed),
    )


def _entropy_loss(
    original: pd.Series, published: pd.Series | None, positions: np.ndarray
) -> tuple[float, float]:
    """(bits lost, most bits that could be lost) for one attribute."""
    x = encode_column(original)
    counts = x.counts()
    rows = counts.sum()
    # -log2 p(x) per category; a suppressed row costs this.
    surprise = np.log2(rows) - np.log2(counts)
    most = float(np.sum(counts * surprise))
    kept = np.zeros(rows, dtype=bool)
    kept[positions] = True
    suppressed_cost = float(np.sum(surprise[x.codes[~kept]]))
    if published is None:
        return most, most
    if positions.size == 0:
        return suppressed_cost, most
    y = encode_column(published.reset_index(drop=True))
    pairs = combine([y, Grouping(x.codes[positions], x.categories)])
    n_xy = pairs.counts()
    n_y = y.counts()
    # For each (x, y) pair present: n_xy * log2(n_y / n_xy).
    some_row = np.empty(pairs.categories, dtype=np.int64)
    some_row[pairs.codes] = np.arange(pairs.codes.size)
    pair_y = y.codes[some_row]
    kept_cost = float(np.sum(n_xy * (np.log2(n_y[pair_y]) - np.log2(n_xy))))
    return kept_cost + suppressed_cost, most


def _suppressed_cells(
    original: pd.DataFrame, anonymized: pd.DataFrame, positions: np.ndarray, suppressed: int
) -> float:
    columns = list(original.columns)
    total = len(original) * len(columns)
    if total == 0:
        return 0.0
    present = [name for name in columns if name in anonymized.columns]
    lost = (len(columns) - len(present)) * len(original) + suppressed * len(present)
    for name in present:
        masked = _is_suppressed(anonymized[name].to_numpy(dtype=object))
        if masked.any():
            was = _is_suppressed(original[name].to_numpy(dtype=object)[positions[masked]])
            lost += int(masked.sum() - was.sum())
    return lost / total


def _is_suppressed(values: np.ndarray) -> np.ndarray:
    """Which cells hold ``*``; compared cell by cell as text, so that pd.NA (ambiguous in a
    boolean test) and numbers are simply not ``*``."""
    return np.fromiter((isinstance(v, str) and v == SUPPRESSED for v in values), bool, len(values))

"""Suppression: remove a column, or replace its values with ``"*"``.

Both functions return a new frame and leave their input untouched; the row index is kept so the
output lines up with the original (information loss is measured by joining on it).

Row-level: masking chosen rows needs the rows. Dropping a column or masking it whole is also a
:class:`~broker.engines.base.RecodePlan` that an engine applies while it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from broker.anonymize._values import SUPPRESSED
from broker.columns.roles import require_columns


def drop_columns(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame`` without ``columns``.

    Parameters
    ----------
    frame : DataFrame
    columns : sequence of str
        Columns to remove; each must exist.

    Returns
    -------
    DataFrame
        A new frame; the input is not modified.

    Raises
    ------
    ValueError
        If a column is not in ``frame`` (the message names it).

    Examples
    --------
    >>> frame = pd.DataFrame({"NIN": ["1", "2"], "Age": ["28", "51"]})
    >>> drop_columns(frame, ["NIN"]).columns.tolist()
    ['Age']
    """
    columns = [columns] if isinstance(columns, str) else list(columns)
    require_columns(frame.columns, columns)
    return frame.drop(columns=columns)


def mask(
    frame: pd.DataFrame,
    column: str,
    rows: Sequence | np.ndarray | pd.Series | None = None,
    token: str = SUPPRESSED,
) -> pd.DataFrame:
    """Replace the values of ``column`` with ``token`` (``"*"``), in every row or in ``rows``.

    Parameters
    ----------
    frame : DataFrame
    column : str
    rows : boolean mask (array or Series aligned on the index) or sequence of index labels, optional
        Which rows to mask; all of them when omitted. Missing values in masked rows are masked
        too (a masked cell no longer says whether it was missing).
    token : str, default "*"

    Returns
    -------
    DataFrame
        A new frame in which ``column`` has object dtype.

    Raises
    ------
    ValueError
        If ``column`` is not in ``frame``, a row label is unknown, or a boolean mask has the wrong
        length.

    Examples
    --------
    >>> frame = pd.DataFrame({"Name": ["Khady", "Fatou", "Cheikh"], "Age": [28, 51, 34]})
    >>> mask(frame, "Name")["Name"].tolist()
    ['*', '*', '*']
    >>> mask(frame, "Age", rows=[1])["Age"].tolist()
    [28, '*', 34]
    """
    require_columns(frame.columns, [column])
    out = frame.copy()
    values = out[column].astype(object)
    selected = np.ones(len(out), dtype=bool) if rows is None else _row_selection(out, column, rows)
    values = values.where(~selected, token)
    out[column] = values
    return out


def _row_selection(frame: pd.DataFrame, column: str, rows) -> np.ndarray:
    if isinstance(rows, pd.Series) and rows.dtype == bool:
        aligned = rows.reindex(frame.index)
        if aligned.isna().any():
            raise ValueError(f"The row mask for column {column!r} does not cover every row")
        return aligned.to_numpy(dtype=bool)
    array = np.asarray(rows)
    if array.dtype == bool:
        if array.shape != (len(frame),):
            raise ValueError(
                f"The row mask for column {column!r} has {array.size} entries for {len(frame)} rows"
            )
        return array
    if not frame.index.is_unique:
        raise ValueError(
            f"The dataset's row labels repeat: give the rows to mask in column {column!r} as a "
            "boolean mask"
        )
    positions = frame.index.get_indexer(pd.Index(array))
    if (positions < 0).any():
        unknown = array[positions < 0][0]
        unknown = unknown.item() if isinstance(unknown, np.generic) else unknown
        raise ValueError(f"Row {unknown!r} to mask in column {column!r} is not in the dataset")
    selected = np.zeros(len(frame), dtype=bool)
    selected[positions] = True
    return selected

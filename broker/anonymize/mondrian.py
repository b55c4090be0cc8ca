"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt and Ramakrishnan, ICDE 2006).

Strict multidimensional partitioning (the paper's Figure 4): the table is cut at the median of
its widest quasi-identifier, again and again, while both halves keep at least ``k`` rows (and
``l`` distinct values of every sensitive attribute); each partition that cannot be cut becomes
an equivalence class, whose rows then share every quasi-identifier label.

The cuts are :mod:`broker.anonymize.cuts`; the labels, which name ranges on a grid and only
categories that k people hold, are :mod:`broker.anonymize.labels`.

Suppression. Every partition Mondrian creates is allowed, so a row can only be left without a class
when the whole table fails the condition: fewer than ``k`` rows, or fewer than ``l`` distinct values
of a sensitive attribute. Those rows (all of them) are suppressed, that is removed from the output,
if their share is within ``max_suppression``; otherwise :class:`AnonymizationError` (a
``ValueError``) is raised, saying why.

Row-level today: the cuts run on each row's integer codes. Because a cut only compares values,
Mondrian could run on the weighted distinct quasi-identifier tuples (a count table) while they fit
in memory, and hand the engine the class labels as a recode plan; the output shuffle and writing
stay with the engine that holds the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.anonymize.cuts import (
    AnonymizationError,
    check_arguments,
    check_suppression,
    mondrian_classes,
)
from broker.anonymize.labels import class_labels

__all__ = ["AnonymizationError", "MondrianResult", "mondrian"]


@dataclass(frozen=True, eq=False)
class MondrianResult:
    """A k-anonymous (and optionally distinct l-diverse) version of a frame.

    Attributes
    ----------
    frame : DataFrame
        The output rows, index kept; suppressed rows are absent. Quasi-identifier columns hold
        the class labels (strings); other columns are unchanged.
    quasi_identifiers, sensitive : tuple of str
    k : int
    l : int or None
    classes : int
        Number of equivalence classes formed.
    suppressed_rows : int
    class_ids : ndarray of int
        For each input row (in input order), its class id in ``[0, classes)``, or -1 when the row
        was suppressed.
    """

    frame: pd.DataFrame
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    k: int
    l: int | None
    classes: int
    suppressed_rows: int
    class_ids: np.ndarray


def mondrian(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    k: int,
    *,
    sensitive: Sequence[str] = (),
    l: int | None = None,
    max_suppression: float = 0.0,
    people: Sequence[np.ndarray] = (),
) -> MondrianResult:
    """k-anonymize ``frame`` on ``quasi_identifiers`` with strict Mondrian partitioning.

    ``people``: labellings of ``frame``'s rows by person (one code per row each, such as a person
    key and identical rows); every class then holds at least ``k`` people by each (a cut that
    would leave a half with fewer is not made), and a category is named in a label only when at
    least ``k`` people hold it, counted by the labelling that sees the fewest.

    Parameters
    ----------
    frame : DataFrame
    quasi_identifiers : sequence of str
        The columns generalized into class labels (ranges or sets).
    k : int
        Every class gets at least ``k`` rows.
    sensitive : sequence of str, optional
        Sensitive attributes for the l condition (left unchanged in the output).
    l : int, optional
        When given, every class also holds at least ``l`` distinct values of each sensitive
        attribute (distinct l-diversity; a missing value counts as a value, as in
        :mod:`broker.metrics`).
    max_suppression : float, default 0
        Largest share of rows (0 to 1) that may be suppressed (removed) when they cannot be
        placed in a class; see the module docstring for when that happens.

    Returns
    -------
    MondrianResult

    Raises
    ------
    AnonymizationError
        If more rows would have to be suppressed than ``max_suppression`` allows (e.g. fewer rows
        than ``k``). It is a ``ValueError``.
    ValueError
        On bad arguments: unknown column (named), k < 1, l without sensitive attributes, a column
        both quasi-identifier and sensitive, no rows.

    Examples
    --------
    The paper's Table 1 (the median cut of nine ages leaves halves of five and four rows, which
    k = 3 cannot cut again; the paper prints three classes of three):

    >>> frame = pd.DataFrame({
    ...     "Age": ["28", "51", "34", "63", "40", "30", "42", "25", "64"],
    ...     "Gender": ["F", "F", "M", "F", "M", "M", "M", "F", "F"],
    ...     "Disease": ["Hep C", "Malaria", "Syphilis", "Measles", "VIH", "TB", "Gono",
    ...                 "Cholera", "Meningitis"]})
    >>> result = mondrian(frame, ["Age", "Gender"], k=3)
    >>> sorted(set(zip(result.frame["Age"], result.frame["Gender"])))
    [('20-40', 'F, M'), ('40-80', 'F, M')]
    >>> result.classes, result.suppressed_rows
    (2, 0)
    """
    quasi_identifiers, sensitive = check_arguments(
        frame, quasi_identifiers, k, sensitive, l, max_suppression
    )
    class_ids, classes, dimensions = mondrian_classes(
        frame, quasi_identifiers, k, sensitive, l, people
    )
    suppressed = int((class_ids < 0).sum())
    held = min((len(np.unique(labelling)) for labelling in people), default=None)
    check_suppression(suppressed, len(frame), max_suppression, k, sensitive, l, held)

    out = frame.copy()
    kept = class_ids >= 0
    if classes:
        order = np.argsort(class_ids[kept], kind="stable")
        kept_positions = np.flatnonzero(kept)[order]
        sizes = np.bincount(class_ids[kept], minlength=classes)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        for dimension in dimensions:
            labels = class_labels(dimension, dimension.codes[kept_positions], starts, k, people)
            column = np.empty(len(frame), dtype=object)
            column[kept] = labels[class_ids[kept]]
            out[dimension.name] = pd.Series(column, index=frame.index, dtype=object)
    out = out[kept] if suppressed else out
    return MondrianResult(
        frame=out,
        quasi_identifiers=tuple(quasi_identifiers),
        sensitive=tuple(sensitive),
        k=int(k),
        l=None if l is None else int(l),
        classes=classes,
        suppressed_rows=suppressed,
        class_ids=class_ids,
    )

"""Generalization hierarchies sent with a transfer: ARX files, one per column, read and checked.

``POST /v1/transfers`` takes them as repeated ``hierarchy`` file parts, each named for its
column (``education.csv``: ARX's format, :mod:`broker.anonymize.hierarchies`). What the intake
checks, before any job, each failure a 422 ``invalid-hierarchy`` naming the file and the line:
at most :data:`~broker.anonymize.hierarchies.MAX_HIERARCHIES` files of at most
:data:`~broker.anonymize.hierarchies.MAX_UPLOAD_BYTES` each, within the hierarchy bounds
(values, levels, characters), two files never for one column (names compared folded), and labels
that say no more than their class and hold no direct identifier
(:func:`~broker.anonymize.hierarchies.safe_labels`). Once the table is open, :func:`resolved`
holds each file to a column of the table (named exactly as the table names it) and to every
value of that column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import BinaryIO

import pandas as pd

from broker.anonymize.hierarchies import (
    MAX_HIERARCHIES,
    MAX_UPLOAD_BYTES,
    HierarchyError,
    bounded,
    read_hierarchy,
    safe_labels,
)
from broker.columns.names import attribute_key
from broker.columns.roles import RoleError, require_columns
from broker.errors import InvalidHierarchy, UnknownColumn
from broker.fsla.hierarchies import uncovered
from broker.identifiers.short_text import identifier_in_text

SUFFIX = ".csv"


def read_parts(parts: Sequence[tuple[str | None, BinaryIO]]) -> dict[str, dict[str, list[str]]]:
    """The ``hierarchy`` parts of a request, as (file name, file) pairs: column -> level table
    (labels as sent; :func:`broker.fsla.hierarchies.followed` re-labels what it must)."""
    if len(parts) > MAX_HIERARCHIES:
        raise InvalidHierarchy(
            f"{len(parts)} hierarchy files, more than {MAX_HIERARCHIES}: one per quasi-identifier"
        )
    tables: dict[str, dict[str, list[str]]] = {}
    folded: dict[str, str] = {}
    for filename, file in parts:
        name = filename or ""
        label = f"hierarchy file {name[:200]!r}"
        column = name[: -len(SUFFIX)] if name.casefold().endswith(SUFFIX) else ""
        if not column.strip() or "/" in column or "\\" in column:
            raise InvalidHierarchy(
                f"{label}: name each hierarchy file for its column, e.g. `education.csv`"
            )
        earlier = folded.setdefault(attribute_key(column), column)
        if earlier != column or column in tables:
            raise InvalidHierarchy(
                f"{label}: a hierarchy for {earlier!r} is already given (column names are "
                "compared without regard to case, look-alike letters or invisible characters)"
            )
        data = file.read(MAX_UPLOAD_BYTES + 1)
        try:
            hierarchy = bounded(read_hierarchy(data, label, MAX_UPLOAD_BYTES), label)
            safe_labels(hierarchy, label, identifier_in_text)
        except HierarchyError as error:
            raise InvalidHierarchy(str(error)) from None
        tables[column] = hierarchy.table()
    return tables


def resolved(
    tables: Mapping[str, Mapping[str, Sequence[str]]],
    columns: Sequence[str],
    values,
) -> dict[str, dict[str, list[str]]]:
    """``tables`` held to the table of ``columns`` (``values(column)``: its distinct values):
    each names one of its columns as written (a name that differs only by case, look-alike
    letters or invisible characters is refused, naming the column) and covers every value."""
    try:
        require_columns(columns, list(tables), "Hierarchy column")
    except RoleError as error:
        raise UnknownColumn(f"{error} (hierarchy files are named for their column)") from None
    for column, table in tables.items():
        present: pd.Series = values(column)
        gap = uncovered(table, present)
        if gap:
            raise InvalidHierarchy(f"hierarchy file '{column}{SUFFIX}' {gap}")
    return {column: {v: list(row) for v, row in table.items()} for column, table in tables.items()}

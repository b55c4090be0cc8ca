"""Partition: publish linked tables instead of one (Gadad and Sowmyarani 2022, after Anatomy).

Anatomy (Xiao and Tao 2006) breaks the link between who a row is and what its sensitive value is,
without generalizing the quasi-identifiers. The partition method:

1. Splits the table vertically into a *quasi-identifier table* (every column that is not
   sensitive) and one *sensitive table* per group of dependent sensitive attributes (by default
   each sensitive attribute is its own group; attributes that must stay together, such as a
   diagnosis and its treatment, form one group).
2. Partitions the rows horizontally, for each sensitive group, with Mondrian over the
   quasi-identifiers at ``k`` (and, when asked, at least ``l`` distinct values of every attribute of
   the group), and numbers the partitions ``1..G``: the *group ids*.
3. Publishes the quasi-identifier table, exact, with one column of group ids per sensitive group
   (``group_Disease``) in place of the sensitive values, and each sensitive table as
   ``group_id`` plus the group's attributes, its rows sorted by group id then value so that row
   order does not link back.

A reader who finds a person in the quasi-identifier table learns only their group: the multiset of
at least ``k`` sensitive values (at least ``l`` distinct ones when asked). What partition does *not*
do is hide that the person is in the data: the quasi-identifier table keeps the exact values, so its
own k-anonymity is that of the original. Rows that cannot be placed (the whole table fails the
condition, see :mod:`broker.anonymize.mondrian`) are suppressed from every table within
``max_suppression``, else :class:`~broker.anonymize.mondrian.AnonymizationError` is raised.

Row-level on purpose: each row is given a group id and split across tables, which only an
engine that holds the rows can do; the counts of :mod:`broker.engines.base` do not suffice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.anonymize.cuts import check_arguments, check_suppression, mondrian_classes

QUASI_IDENTIFIER_TABLE = "quasi_identifiers"
GROUP_ID = "group_id"


@dataclass(frozen=True)
class Link:
    """``table.column`` holds ids found in ``references.referenced_column`` (one to many)."""

    table: str
    column: str
    references: str
    referenced_column: str

    def as_dict(self) -> dict:
        return {
            "table": self.table,
            "column": self.column,
            "references": self.references,
            "referenced_column": self.referenced_column,
        }


@dataclass(frozen=True, eq=False)
class PartitionResult:
    """The linked tables of a partition.

    Attributes
    ----------
    tables : dict of str to DataFrame
        ``"quasi_identifiers"`` (index of the input kept, suppressed rows absent) and one
        ``"sensitive_<name>"`` per group, ``<name>`` its attributes joined by ``"_"``
        (index 0..n-1: row order means nothing).
    links : tuple of Link
        One per sensitive table, from its ``group_<name>`` column in the quasi-identifier table.
    groups : dict of str to int
        Number of groups per sensitive table.
    suppressed_rows : int
    k : int
    l : int or None
    """

    tables: dict[str, pd.DataFrame]
    links: tuple[Link, ...]
    groups: dict[str, int]
    suppressed_rows: int
    k: int
    l: int | None


def partition(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    sensitive: Sequence[str] = (),
    *,
    k: int,
    groups: Sequence[Sequence[str]] | None = None,
    l: int | None = None,
    max_suppression: float = 0.0,
) -> PartitionResult:
    """Split ``frame`` into a quasi-identifier table and linked sensitive tables.

    Parameters
    ----------
    frame : DataFrame
    quasi_identifiers : sequence of str
        Dimensions along which Mondrian forms the groups.
    sensitive : sequence of str
        Sensitive attributes, each its own group unless ``groups`` is given.
    k : int
        Every group holds at least ``k`` rows.
    groups : sequence of sequence of str, optional
        Groups of dependent sensitive attributes, e.g. ``[["Disease", "Treatment"], ["HIV"]]``;
        replaces ``sensitive`` (giving both is allowed if they name the same attributes).
    l : int, optional
        Every group also holds at least ``l`` distinct values of each of its attributes.
    max_suppression : float, default 0
        Largest share of rows that may be suppressed.

    Returns
    -------
    PartitionResult

    Raises
    ------
    AnonymizationError
        If more rows than ``max_suppression`` allows cannot be placed (a ``ValueError``).
    ValueError
        Unknown column (named), a sensitive attribute in two groups or also a quasi-identifier,
        no sensitive attribute, or a ``group_<name>`` column that already exists.

    Examples
    --------
    >>> frame = pd.DataFrame({
    ...     "Age": ["28", "51", "34", "63", "40", "30"], "Gender": list("FFMFMM"),
    ...     "Disease": ["flu", "hiv", "flu", "cold", "hiv", "cold"]})
    >>> result = partition(frame, ["Age", "Gender"], ["Disease"], k=3)
    >>> result.tables["quasi_identifiers"].columns.tolist()
    ['Age', 'Gender', 'group_Disease']
    >>> result.tables["quasi_identifiers"]["group_Disease"].tolist()
    [1, 2, 1, 2, 2, 1]
    >>> result.tables["sensitive_Disease"].values.tolist()
    [[1, 'cold'], [1, 'flu'], [1, 'flu'], [2, 'cold'], [2, 'hiv'], [2, 'hiv']]
    """
    groups = _sensitive_groups(sensitive, groups)
    attributes = [name for group in groups for name in group]
    quasi_identifiers, _ = check_arguments(
        frame, quasi_identifiers, k, attributes, l, max_suppression
    )
    names = {"_".join(group): group for group in groups}
    for name in names:
        if f"group_{name}" in frame.columns:
            raise ValueError(f"Column 'group_{name}' already exists: it would hold the group ids")

    ids, suppressed = {}, np.zeros(len(frame), dtype=bool)
    for name, group in names.items():
        class_ids, _classes, _dims = mondrian_classes(frame, quasi_identifiers, k, group, l)
        ids[name] = class_ids
        suppressed |= class_ids < 0
    count = int(suppressed.sum())
    check_suppression(count, len(frame), max_suppression, k, attributes, l)

    kept = ~suppressed
    published = frame.loc[kept, [c for c in frame.columns if c not in attributes]].copy()
    tables, links, group_counts = {QUASI_IDENTIFIER_TABLE: published}, [], {}
    for name, group in names.items():
        group_ids = _renumber(ids[name][kept])
        published[f"group_{name}"] = group_ids
        table = frame.loc[kept, group].reset_index(drop=True)
        table.insert(0, GROUP_ID, group_ids)
        tables[f"sensitive_{name}"] = _sorted(table, group)
        links.append(Link(QUASI_IDENTIFIER_TABLE, f"group_{name}", f"sensitive_{name}", GROUP_ID))
        group_counts[f"sensitive_{name}"] = int(group_ids.max()) if group_ids.size else 0
    return PartitionResult(
        tables=tables,
        links=tuple(links),
        groups=group_counts,
        suppressed_rows=count,
        k=int(k),
        l=None if l is None else int(l),
    )


def _sensitive_groups(sensitive, groups) -> list[list[str]]:
    sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    if groups is None:
        result = [[name] for name in sensitive]
    else:
        result = [[group] if isinstance(group, str) else list(group) for group in groups]
        grouped = [name for group in result for name in group]
        if sensitive and sorted(set(sensitive)) != sorted(set(grouped)):
            raise ValueError(
                "The sensitive attributes and the groups name different columns: "
                f"{sorted(set(sensitive) ^ set(grouped))}"
            )
    if not result or any(not group for group in result):
        raise ValueError("Partition needs at least one sensitive attribute in every group")
    seen: set[str] = set()
    for group in result:
        for name in group:
            if name in seen:
                raise ValueError(f"Sensitive attribute {name!r} is in more than one group")
            seen.add(name)
    return result


def _renumber(class_ids: np.ndarray) -> np.ndarray:
    """Group ids 1..G in order of first appearance (class ids carry the split order)."""
    _first, inverse = np.unique(class_ids, return_inverse=True)
    order = np.argsort(np.unique(inverse, return_index=True)[1], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return (rank[inverse] + 1).astype(np.int64)


def _sorted(table: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Rows by group id, then by each attribute's value as text (stable, mixed types allowed)."""
    keys = [pd.factorize(table[name].astype(str), sort=True)[0] for name in reversed(group)]
    order = np.lexsort((*keys, table[GROUP_ID].to_numpy()))
    return table.iloc[order].reset_index(drop=True)

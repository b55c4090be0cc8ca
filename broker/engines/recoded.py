"""A recode plan seen through the counts of the table it recodes: the recoded table, unread.

A generalization maps each column's distinct values to labels (:class:`RecodePlan`), so the count
table of any column set of the recoded table is the source's count table of the same set with
each tuple's codes mapped to label codes, and the tuples that meet added up. No row is read
again and nothing is copied: a table counted out of core is verified and measured after its
anonymization from the counts its first pass made.

People stay who they were. Identical rows of the table as sent agree on every column, so they
lie in one tuple of any column set, and the people of tuples that merge add up; the rows of a
rare tuple counted as one person in the worst case (:mod:`broker.engines.people`) may lie in
several tuples, which their count table says (``person_groups``), so that person counts once
where they merge. With a person key one person's rows can lie in two tuples that merge, so
:class:`Recoded` refuses such a source; those engines recode their rows instead.

Writing the recoded table is the source engine's work: it applies the plan to the rows while it
streams them out (:func:`broker.engines.duckdb.write`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from broker.columns.roles import require_columns
from broker.engines.base import (
    IDENTICAL_ROWS,
    WORST_CASE,
    CountTable,
    Engine,
    PlansCounts,
    RecentTables,
    RecodePlan,
    composed,
    dictionary_of,
)
from broker.engines.people import RareTuples


class Recoded:
    """The table ``source`` holds with ``plan`` applied, answered from ``source``'s counts.

    Examples
    --------
    >>> from broker.engines.pandas import PandasEngine
    >>> frame = pd.DataFrame({"age": ["21", "24", "35", "38"], "sex": list("FMFM")})
    >>> plan = RecodePlan(labels={"age": {"21": "20-29", "24": "20-29"}}, drop=("sex",))
    >>> recoded = Recoded(PandasEngine(frame), plan)
    >>> recoded.columns, recoded.dictionary("age").tolist()
    (['age'], ['20-29', '35', '38'])
    >>> sorted(recoded.counts([["age"]])[0].rows.tolist())
    [1, 1, 2]
    """

    def __init__(self, source: Engine, plan: RecodePlan):
        # ``recode_plan``, not ``plan``: plan() is how a report announces its column sets.
        if source.people_counted_by not in (IDENTICAL_ROWS, WORST_CASE):
            raise ValueError(
                "A recode seen through counts needs people counted as identical rows: with a "
                "person key, recode the rows"
            )
        require_columns(source.columns, [*plan.labels, *plan.drop])
        self.source = source
        self.recode_plan = plan
        self._names = [name for name in source.columns if name not in plan.drop]
        self._relabellings: dict[str, tuple[np.ndarray, pd.Series]] = {}
        # A table here is small once merged, but counting it again relabels the source's,
        # which may hold a million tuples: the classes released after the checks and the
        # report of what leaves are still here when the release is counted.
        self._recent = RecentTables(kept=4)

    @property
    def columns(self) -> list[str]:
        return list(self._names)

    @property
    def rows(self) -> int:
        return self.source.rows

    @property
    def people_counted_by(self) -> str:
        return self.source.people_counted_by

    def assume_worst(self, quasi_identifiers: Sequence[str]) -> None:
        """People are the source's rows': nothing to assume here."""

    @property
    def rare(self) -> RareTuples | None:
        return self.source.rare

    def forget_counts(self) -> None:
        """Let go of the count tables kept here and by the source, if it keeps any."""
        self._recent.clear()
        forget = getattr(self.source, "forget_counts", None)
        if forget is not None:
            forget()

    def plan(self, column_sets: Sequence[Sequence[str]], people: bool = True) -> None:
        """Have the source count these sets in one pass, if it reads in passes."""
        for columns in column_sets:
            require_columns(self._names, columns)
        if isinstance(self.source, PlansCounts):
            self.source.plan(column_sets, people)

    def dictionary(self, column: str) -> pd.Series:
        require_columns(self._names, [column])
        found = self._relabelling(column)
        return self.source.dictionary(column) if found is None else found[1]

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        for columns in column_sets:
            require_columns(self._names, columns)
        return [self._count_table(list(columns), people) for columns in column_sets]

    def _count_table(self, columns: list[str], people: bool) -> CountTable:
        found = self._recent.get(columns, people)
        if found is None:
            [table] = self.source.counts([columns], people)
            found = self._recent.keep(self._relabel(table))
        return found

    def tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        return [table.rows for table in self.counts(column_sets)]

    def duplicate_rows(self) -> int:
        """Rows identical to an earlier row on every column of the recoded table (a column of
        one value cannot tell rows apart, so the source is asked only for the others)."""
        telling = [name for name in self._names if len(self.dictionary(name)) > 1]
        return self.rows - self.counts([telling])[0].size

    def recode(self, plan: RecodePlan) -> Recoded:
        """The plans composed: one recode of the source."""
        require_columns(self._names, [*plan.labels, *plan.drop])
        return Recoded(self.source, composed(self.recode_plan, plan, self.source.dictionary))

    def _relabelling(self, column: str) -> tuple[np.ndarray, pd.Series] | None:
        """Each source code's label code in ``column``, and the labels (None: not relabelled)."""
        labels = self.recode_plan.labels.get(column)
        if not labels:
            return None
        if column not in self._relabellings:
            values = self.source.dictionary(column).tolist()
            mapped = np.empty(len(values), dtype=object)
            mapped[:] = [labels.get(value, value) for value in values]
            codes, uniques = pd.factorize(mapped, use_na_sentinel=False)
            found = (codes.astype(np.int64), dictionary_of(pd.Series(uniques, dtype=object)))
            self._relabellings[column] = found
        return self._relabellings[column]

    def _relabel(self, table: CountTable) -> CountTable:
        relabellings = [self._relabelling(name) for name in table.columns]
        if all(found is None for found in relabellings):
            return table
        codes, widths = [], []
        for name, found in zip(table.columns, relabellings, strict=True):
            own = table.codes(name)
            if found is None:
                codes.append(own)
                widths.append(int(own.max()) + 1 if own.size else 1)
            else:  # a million tuples' label codes, each in the smallest type that holds them
                codes.append(found[0].astype(_smallest(len(found[1])))[own])
                widths.append(len(found[1]))
        return table.merged(codes, widths)


def _smallest(width: int) -> np.dtype:
    """The smallest signed integer type holding codes below ``width``."""
    return next(
        np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64) if width <= np.iinfo(t).max
    )

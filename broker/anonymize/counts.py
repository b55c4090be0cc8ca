"""Plan a generalization on an engine's count tables, for data too large to load.

k, l and t of a generalized table depend only on its table of distinct (quasi-identifiers,
sensitive value) tuples with their counts, and a generalization maps each column's distinct
values to labels. So :func:`plan_on_engine` asks the engine once for the count table of the
quasi-identifiers with each sensitive attribute, climbs the same ladders as the frame path
(:func:`broker.anonymize.ladder.climb`) on those counts, re-aggregated for each candidate
generalization (no rows are read again), and hands the engine the chosen generalization as a
:class:`~broker.engines.base.RecodePlan`. The recoded table is measured again from the engine's
own counts before it is offered; writing it (shuffled) is the engine's job.

Mondrian and the partition method need the whole table: they cut rows, not distinct values.
Above ``whole_table_rows`` rows they are refused with a reason naming the bound and
generalization, which works at any size; below it, the rows are loaded and the frame planner runs.

Limits: nothing is suppressed (a generalization maps values; suppressing the rows of small
classes is not a value map), information loss is not measured (it needs a row-aligned join of
input and output), and the caller's acceptance check of a frame does not apply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from broker.anonymize.ladder import climb, labels_of, rungs
from broker.anonymize.planner import plan_remedy
from broker.anonymize.steps import GENERALIZATION, MONDRIAN, PARTITION, Step
from broker.anonymize.target import Remedy, Target
from broker.anonymize.verify import Check, describe, verify_counts
from broker.engines.base import CountTable, Engine, RecodePlan, dictionary_of
from broker.metrics.mmaq import mmaq_from_counts

# Mondrian and the partition method load the rows; above this many they are refused.
WHOLE_TABLE_ROWS = 1_000_000


def plan_on_engine(
    engine: Engine,
    target: Target,
    method: str = GENERALIZATION,
    whole_table_rows: int = WHOLE_TABLE_ROWS,
    load: Callable[[], pd.DataFrame] | None = None,
    deadline: float | None = None,
) -> Remedy:
    """Make the table ``engine`` holds meet ``target``, planned on its count tables.

    Parameters
    ----------
    engine : Engine
    target : Target
    method : {"generalization", "mondrian", "partition"}
    whole_table_rows : int
        The most rows Mondrian and the partition method may load into memory.
    load : callable, optional
        Gives the table as a frame, for Mondrian and the partition method at or below
        ``whole_table_rows`` rows (required for them).
    deadline : float, optional
        A ``time.monotonic()`` instant after which the search stops.

    Returns
    -------
    Remedy
        For generalization: ``recode`` (the plan) and ``engine`` (the recoded table, verified on
        its own counts) when satisfied; ``frame`` is None. For Mondrian and partition above the
        bound: not satisfied, ``reason`` names the bound and generalization.

    Raises
    ------
    ValueError
        A malformed target (as :func:`~broker.anonymize.plan_remedy`), an unknown method, or
        Mondrian or partition within the bound without ``load``.

    Examples
    --------
    >>> from broker.engines.pandas import PandasEngine
    >>> frame = pd.DataFrame({"age": ["21", "24", "35", "38", "52", "57"], "sex": list("FMFMFM")})
    >>> remedy = plan_on_engine(PandasEngine(frame), Target(quasi_identifiers=("age",), k=2))
    >>> remedy.satisfied, [(s.method, s.parameters) for s in remedy.steps]
    (True, [('quantile', {'bins': 2})])
    >>> sorted(remedy.recode.labels["age"].items())[:2]
    [('21', '21-35'), ('24', '21-35')]
    >>> plan_on_engine(PandasEngine(frame), Target(quasi_identifiers=("age",), k=2),
    ...                method="mondrian", whole_table_rows=5).reason  # doctest: +ELLIPSIS
    'mondrian needs the whole table in memory: 6 rows exceed the bound of 5; use ...'
    """
    if method in (MONDRIAN, PARTITION):
        if engine.rows > whole_table_rows:
            return Remedy(
                satisfied=False,
                reason=f"{method} needs the whole table in memory: {engine.rows:,} rows exceed "
                f"the bound of {whole_table_rows:,}; use generalization, which plans on counts",
                steps=(),
            )
        if load is None:
            raise ValueError(f"{method} needs the rows: give load")
        return plan_remedy(load(), target, method, deadline=deadline)
    if method != GENERALIZATION:
        raise ValueError(
            f"Unknown method {method!r}: expected one of {(GENERALIZATION, MONDRIAN, PARTITION)}"
        )
    target.check_table(engine.columns, engine.rows)
    return _generalize(engine, target, deadline)


def _generalize(engine: Engine, target: Target, deadline: float | None) -> Remedy:
    """The frame planner's generalization method (:mod:`broker.anonymize.planner`), on counts."""
    notes: list[str] = []
    drop = [name for name in target.drop if name in engine.columns]
    qis = [name for name in target.quasi_identifiers if name not in drop]
    sensitive = [name for name in target.sensitive if name not in drop]
    steps = [Step(name, "drop") for name in drop]
    labels: dict[str, np.ndarray] = {}  # each generalized column's label per dictionary code
    attempts = 1  # generalizations measured

    ignored = sorted(name for name in target.max_mmaq_index if name in sensitive)
    if ignored:
        notes.append(
            f"mmaq bounds on sensitive attributes {ignored} are not applied: sensitive attributes "
            "are judged by l and t (SPEC section 2)"
        )
    for name, bound in target.max_mmaq_index.items():
        if name in drop or name in qis or name in sensitive or name not in engine.columns:
            continue
        dictionary = engine.dictionary(name)
        rows = _rows_by_code(engine.counts([[name]])[0], name, len(dictionary))
        if mmaq_from_counts(rows).mmaq_index <= bound:
            continue
        step, labels[name] = _mildest(dictionary, rows, name, bound, target)
        steps.append(step)

    wants_anonymity = any(v is not None for v in (target.k, target.l, target.t))
    if wants_anonymity and not qis:
        return Remedy(
            satisfied=False,
            reason="k, l and t are measured on quasi-identifiers, and none is declared "
            "(or all dropped)",
            steps=tuple(steps),
            notes=tuple(notes),
        )
    if wants_anonymity or any(name in target.max_mmaq_index for name in qis):
        measured = sensitive if target.l is not None or target.t is not None else []
        tuples = _Tuples.of(engine, qis, measured)
        ladders = [
            rungs(tuples.dictionaries[name], name, target.hierarchies.get(name)) for name in qis
        ]

        def evaluate(levels: list[int]) -> list[Check]:
            view = tuples.generalized({q: (ladders[i], levels[i]) for i, q in enumerate(qis)})
            return verify_counts(view, target, qis, sensitive, drop)

        def distinct(i: int, level: int) -> int:
            return len(tuples.labels(qis[i], ladders[i], level)[1])

        levels, checks, out_of_time = climb(qis, ladders, evaluate, distinct, deadline)
        attempts = sum(levels) + 1
        for i, name in enumerate(qis):
            if levels[i]:
                steps.append(ladders[i][levels[i] - 1])
                codes, uniques = tuples.labels(name, ladders[i], levels[i])
                labels[name] = uniques.to_numpy(dtype=object)[codes]
        failing = [check for check in checks if not check.passed]
        if failing:
            return Remedy(
                satisfied=False,
                reason=describe(failing),
                steps=tuple(steps),
                checks=tuple(checks),
                notes=tuple(notes),
                attempts=attempts,
                out_of_time=out_of_time,
            )
    plan = RecodePlan(
        labels={name: _label_map(engine.dictionary(name), found) for name, found in labels.items()},
        drop=tuple(drop),
    )
    recoded = engine.recode(plan)
    checks = verify_counts(recoded, target, qis, sensitive, drop)
    failing = [check for check in checks if not check.passed]
    return Remedy(
        satisfied=not failing,
        reason=describe(failing) if failing else None,
        steps=tuple(steps),
        checks=tuple(checks),
        notes=tuple(notes),
        recode=plan if not failing else None,
        engine=recoded if not failing else None,
        attempts=attempts,
    )


def _mildest(dictionary, rows, name, bound, target) -> tuple[Step, np.ndarray]:
    """:func:`broker.anonymize.ladder.generalize_until` on a column's counts: the first rung
    whose labels bring the column's mmaq_index to ``bound`` or below (masking at worst)."""
    *ladder, masking = rungs(dictionary, name, target.hierarchies.get(name))
    for step in ladder:
        found = labels_of(step, dictionary, rows)
        codes, _uniques = pd.factorize(found, use_na_sentinel=False)
        if mmaq_from_counts(np.bincount(codes, weights=rows).astype(np.int64)).mmaq_index <= bound:
            return step, found
    return masking, labels_of(masking, dictionary, rows)


def _rows_by_code(table: CountTable, name: str, size: int) -> np.ndarray:
    """Rows per code of ``name`` (``size`` codes in its dictionary) from a table holding it."""
    return np.bincount(table.codes(name), weights=table.rows, minlength=size).astype(np.int64)


def _label_map(dictionary: pd.Series, labels: np.ndarray) -> dict:
    """value -> label for the values whose label differs from the value as written."""
    return {
        value: label
        for value, label in zip(dictionary.tolist(), labels.tolist(), strict=True)
        if label is not value and not (isinstance(label, str) and label == value)
    }


class _Tuples:
    """The count tables of the quasi-identifiers (with each sensitive attribute), generalized
    by relabelling their codes: the counts of any generalization without reading rows."""

    def __init__(self, tables, qis, sensitive, dictionaries, rows):
        self.tables = tables  # one per sensitive attribute (or one of the quasi-identifiers)
        self.qis = qis
        self.sensitive = sensitive
        self.dictionaries = dictionaries
        self.rows = rows
        self._labels: dict[tuple[str, int], tuple[np.ndarray, pd.Series]] = {}

    @classmethod
    def of(cls, engine: Engine, qis: Sequence[str], sensitive: Sequence[str]) -> _Tuples:
        column_sets = [[*qis, name] for name in sensitive] or [list(qis)]
        tables = engine.counts(column_sets)
        names = [*qis, *sensitive]
        dictionaries = {name: engine.dictionary(name) for name in names}
        return cls(tables, list(qis), list(sensitive), dictionaries, engine.rows)

    def labels(self, name: str, ladder: Sequence[Step], level: int) -> tuple[np.ndarray, pd.Series]:
        """Each dictionary code's label code at ``level`` of ``ladder``, and the labels."""
        key = (name, level)
        if key not in self._labels:
            dictionary = self.dictionaries[name]
            if level == 0:
                found = dictionary.to_numpy(dtype=object)
            else:
                rows = _rows_by_code(self.tables[0], name, len(dictionary))
                found = labels_of(ladder[level - 1], dictionary, rows)
            codes, uniques = pd.factorize(found, use_na_sentinel=False)
            self._labels[key] = (codes.astype(np.int64), dictionary_of(pd.Series(uniques)))
        return self._labels[key]

    def generalized(self, levels: dict[str, tuple[Sequence[Step], int]]) -> _Relabelled:
        """The tables with each quasi-identifier at its level (``name: (ladder, level)``)."""
        relabelled = {name: self.labels(name, *levels[name]) for name in self.qis}
        tables = []
        for table in self.tables:
            codes = {name: relabelled[name][0][table.codes(name)] for name in self.qis}
            codes.update({name: table.codes(name) for name in table.columns if name not in codes})
            tables.append(
                CountTable.of(table.columns, [codes[c] for c in table.columns], table.rows)
            )
        dictionaries = dict(self.dictionaries)
        dictionaries.update({name: found[1] for name, found in relabelled.items()})
        return _Relabelled(tables, dictionaries, self.rows)


class _Relabelled:
    """Relabelled count tables (a tuple may repeat) seen through what the measures read of the
    Engine protocol: ``columns``, ``rows``, ``dictionary`` and ``counts`` of any column set that
    one table holds, re-aggregated."""

    def __init__(self, tables: list[CountTable], dictionaries: dict[str, pd.Series], rows: int):
        self._tables = tables
        self._dictionaries = dictionaries
        self._rows = rows

    @property
    def columns(self) -> list[str]:
        return list(self._dictionaries)

    @property
    def rows(self) -> int:
        return self._rows

    def dictionary(self, column: str) -> pd.Series:
        return self._dictionaries[column]

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        """Re-aggregated count tables; ``people`` is not known here (rows stand in for it)."""
        return [self._count(list(columns)) for columns in column_sets]

    def _count(self, columns: list[str]) -> CountTable:
        table = next(t for t in self._tables if set(columns) <= set(t.columns))
        ids, classes = table.tuple_ids(columns)
        rows = np.bincount(ids, weights=table.rows, minlength=classes).astype(np.int64)
        first = np.zeros(classes, dtype=np.int64)
        first[ids[::-1]] = np.arange(ids.size - 1, -1, -1)
        return CountTable.of(columns, [table.codes(c)[first] for c in columns], rows)

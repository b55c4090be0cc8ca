"""The generalization planner: climb the generalization ladders on count tables.

k, l and t of a generalized table depend only on its table of distinct (quasi-identifiers,
sensitive value) tuples with their counts, and a generalization maps each column's distinct
values to labels. So :func:`generalize` asks an engine once for the count table of the
quasi-identifiers with each sensitive attribute, climbs the ladders
(:func:`broker.anonymize.ladder.climb`) on those counts, re-aggregated for each candidate
generalization (no rows are read again), and hands the engine the chosen generalization as a
:class:`~broker.engines.base.RecodePlan`. The recoded table is measured again from the engine's
own counts before it is offered; writing it (shuffled) is the engine's job.

This is the one generalization planner: a frame is planned on a
:class:`~broker.engines.pandas.PandasEngine` of it (:func:`broker.anonymize.planner.plan_remedy`),
a table too large to load on DuckDB's or Dask's counts
(:func:`broker.anonymize.planner.plan_on_engine`), and Mondrian's frame path takes the mildest
rung for the other attributes' mmaq bounds from :func:`bounded` too.

Limits: nothing is suppressed (a generalization maps values; suppressing the rows of small
classes is not a value map). Information loss and the caller's acceptance check need the rows:
the frame path adds them to the plan made here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from broker.anonymize.ladder import (
    climb,
    climbed_reason,
    labelled_rungs,
    labels_of,
    lowest_loss,
    optimal_reason,
    rungs,
)
from broker.anonymize.steps import Step
from broker.anonymize.target import Remedy, Target, dropped_because
from broker.anonymize.verify import Check, describe, verify_counts
from broker.engines.base import CountTable, Engine, Grouped, RecodePlan, composed, dictionary_of
from broker.metrics.mmaq import mmaq_from_counts


def generalize_engine(
    engine: Engine,
    target: Target,
    deadline: float | None = None,
    progress=None,
    optimal: bool = False,
) -> Remedy:
    """Plan a generalization of the table ``engine`` holds, as it is: its own drop and precision
    steps go into the plan the engine applies while it writes."""
    drop = [name for name in target.drop if name in engine.columns]
    qis = [name for name in target.quasi_identifiers if name not in drop]
    sensitive = [name for name in target.sensitive if name not in drop]
    steps = [Step(name, "drop", reason=dropped_because(target, name)) for name in drop]
    source, first = engine, RecodePlan()
    coarser = [s for s in target.precision if s.column in engine.columns and s.column not in drop]
    if coarser:  # dates, postcodes and ages made coarse first, whatever their role
        first = RecodePlan(
            labels={
                s.column: _label_map(
                    engine.dictionary(s.column),
                    labels_of(s, engine.dictionary(s.column), np.ones(1, dtype=np.int64)),
                )
                for s in coarser
            }
        )
        engine = engine.recode(first)
        steps += coarser
    remedy = generalize(
        engine, target, drop, qis, sensitive, steps, [], deadline, progress, optimal
    )
    if coarser and remedy.recode is not None:
        remedy = dataclasses.replace(
            remedy, recode=composed(first, remedy.recode, source.dictionary)
        )
    return remedy


def bounded(
    engine: Engine, target: Target, qis, sensitive, drop
) -> tuple[list[Step], list[str], dict[str, np.ndarray]]:
    """The mildest generalization of each other attribute over its ``max_mmaq_index`` bound.

    Quasi-identifiers are left to the climb; sensitive attributes are judged by l and t only
    (docs/explanations/measures.md), so their bounds are ignored, with a note saying so.
    Returns the steps, the notes and each generalized column's label by dictionary code.
    """
    notes = []
    ignored = sorted(name for name in target.max_mmaq_index if name in sensitive)
    if ignored:
        notes.append(
            f"mmaq bounds on sensitive attributes {ignored} are not applied: sensitive attributes "
            "are judged by l and t only"
        )
    steps, labels = [], {}
    for name, bound in target.max_mmaq_index.items():
        if name in drop or name in qis or name in sensitive or name not in engine.columns:
            continue
        dictionary = engine.dictionary(name)
        rows = _rows_by_code(engine.counts([[name]])[0], name, len(dictionary))
        before = mmaq_from_counts(rows).mmaq_index
        if before <= bound:
            continue
        step, labels[name] = _mildest(dictionary, rows, name, bound, target)
        steps.append(
            step.because(
                f"{name} has Mmaq index {before:.3g}, above the {bound:.3g} allowed: this is "
                "the mildest generalization that brings it under"
            )
        )
    return steps, notes, labels


def recode_plan(engine: Engine, labels: dict[str, np.ndarray], drop=()) -> RecodePlan:
    """The plan that gives each value of ``engine``'s columns its label (by dictionary code)."""
    return RecodePlan(
        labels={name: _label_map(engine.dictionary(name), found) for name, found in labels.items()},
        drop=tuple(drop),
    )


def generalize(
    engine: Engine,
    target: Target,
    drop: Sequence[str],
    qis: Sequence[str],
    sensitive: Sequence[str],
    steps: list[Step],
    notes: list[str],
    deadline: float | None = None,
    progress=None,
    optimal: bool = False,
) -> Remedy:
    """Climb the quasi-identifiers' ladders on ``engine``'s counts until every check passes
    (Datafly), or with ``optimal`` find the generalization of least information loss that
    passes (:func:`~broker.anonymize.ladder.lowest_loss`; a column given a hierarchy then
    climbs that hierarchy's levels only, as ARX does).

    ``steps`` and ``notes`` are those made before (drops, precision); ``drop`` names the
    columns the plan drops (the engine may hold them still). When satisfied, the remedy holds
    the plan (``recode``) and the recoded table, verified on its own counts (``engine``).
    """
    more_steps, more_notes, labels = bounded(engine, target, qis, sensitive, drop)
    steps, notes = [*steps, *more_steps], [*notes, *more_notes]
    attempts = 1  # generalizations measured (without a climb, the recoded table alone)
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
        tuples = _Tuples(engine, qis, measured)
        labelled = [
            labelled_rungs(tuples.dictionaries[name], name, target.hierarchies.get(name))
            for name in qis
        ]
        tuples.tried([pair for found in labelled for pair in found])
        ladders = [[step for step, _labels in found] for found in labelled]
        if optimal:  # a hierarchy is climbed alone; masking only if its top is not one label
            ladders = [
                _hierarchy_alone(ladder) if target.hierarchies.get(name) else ladder
                for name, ladder in zip(qis, ladders, strict=True)
            ]
        tuples.climbing(ladders)
        attempts = 0

        def evaluate(levels: list[int]) -> list[Check]:
            nonlocal attempts
            attempts += 1
            # The climb needs no check beyond the first failing k, l or t.
            view = _Generalized(tuples, levels)
            checks = verify_counts(view, target, qis, sensitive, drop, complete=False)
            if any(not check.passed and check.rule != "mmaq_index" for check in checks):
                tuples.keep(view)  # every generalization measured next is coarser
            return checks

        def distinct(i: int, level: int) -> int:
            return len(tuples.labels(i, level)[1])

        losses: dict[tuple[int, int], float] = {}

        def loss(i: int, level: int) -> float:
            if (i, level) not in losses:
                losses[(i, level)] = _entropy_loss(
                    tuples.by_code[qis[i]], tuples.labels(i, level)[0]
                )
            return losses[(i, level)]

        def measure(levels: list[int]) -> list[Check]:
            nonlocal attempts
            attempts += 1
            view = _Generalized(tuples, levels)
            return verify_counts(view, target, qis, sensitive, drop, complete=False)

        if optimal:
            levels, checks, out_of_time, _ = lowest_loss(ladders, measure, loss, deadline, progress)
            if out_of_time:
                return Remedy(
                    satisfied=False,
                    reason=f"the search for the generalization of least loss stopped after "
                    f"measuring {attempts:,} generalizations (its time or its budget ran out) "
                    "before one met the target: use --method generalization, which climbs one "
                    "rung at a time",
                    steps=tuple(steps),
                    notes=tuple(notes),
                    attempts=attempts,
                    out_of_time=True,
                )
        else:
            levels, checks, out_of_time = climb(
                qis, ladders, evaluate, distinct, deadline, progress, tuples.coarsening
            )
        bits = sum(loss(i, level) for i, level in enumerate(levels)) if optimal else 0.0
        for i, name in enumerate(qis):
            if levels[i]:
                rung = ladders[i][levels[i] - 1]
                why = (
                    optimal_reason(rung, levels[i], bits, attempts, target)
                    if optimal
                    else climbed_reason(
                        rung, distinct(i, 0), distinct(i, levels[i]), levels[i], target
                    )
                )
                steps.append(rung.because(why))
                codes, uniques = tuples.labels(i, levels[i])
                labels[name] = uniques.to_numpy(dtype=object)[codes]
        if not all(check.passed for check in checks):
            # The climb's checks end at the first failing k, l or t: say what else fails.
            checks = verify_counts(_Generalized(tuples, levels), target, qis, sensitive, drop)
            failing = [check for check in checks if not check.passed]
            return Remedy(
                satisfied=False,
                reason=describe(failing),
                steps=tuple(steps),
                checks=tuple(checks),
                notes=tuple(notes),
                attempts=attempts,
                out_of_time=out_of_time,
            )
    plan = recode_plan(engine, labels, drop)
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


def _hierarchy_alone(ladder: list[Step]) -> list[Step]:
    """A ladder that climbs its hierarchy's levels only, and masks last unless the hierarchy's
    top level already gives every value one label."""
    levels = [rung for rung in ladder if rung.method == "hierarchy"]
    if levels:
        table = levels[-1].parameters["hierarchy"]
        rows = [row for row in table.values() if isinstance(row, list | tuple)]
        if rows and len({row[-1] for row in rows}) == 1:
            return levels
    return [*levels, Step(ladder[-1].column, "mask")]


def _entropy_loss(rows: np.ndarray, labels: np.ndarray) -> float:
    """Non-uniform entropy a column loses when each value (``rows`` rows per dictionary code)
    is published as its label (``labels``, a label code per dictionary code): the sum over rows
    of ``-log2 P(value | label)``, in bits (:mod:`broker.anonymize.loss`)."""
    present = rows > 0
    per_label = np.bincount(labels[present], weights=rows[present])
    held = rows[present].astype(float)
    return float(np.sum(held * (np.log2(per_label[labels[present]]) - np.log2(held))))


def _mildest(dictionary, rows, name, bound, target) -> tuple[Step, np.ndarray]:
    """The first rung of ``name``'s ladder whose labels bring the column's mmaq_index to
    ``bound`` or below (masking at worst), judged on its counts (``rows`` by code)."""
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
    """The count tables of the quasi-identifiers with each sensitive attribute (or of the
    quasi-identifiers alone) as integer codes, and the count tables of any generalization of
    them, without reading rows.

    A rung maps each dictionary code of a column to a label code (:meth:`labels`), so a
    generalization relabels each tuple's codes by an array lookup; the relabelled tuples are
    counted by sorting one int64 key per tuple (the codes in mixed radix). When every rung's
    labels are a function of the labels of the rung below (:attr:`coarsening`), a coarser
    generalization is counted from the tuples of a finer one already counted (:meth:`keep`),
    which are fewer, rather than from the engine's.
    """

    def __init__(self, engine: Engine, qis: Sequence[str], sensitive: Sequence[str]):
        self.qis = list(qis)
        self.sensitive = list(sensitive)
        self.rows = engine.rows
        self.dictionaries = {name: engine.dictionary(name) for name in [*qis, *sensitive]}
        column_sets = [[*qis, name] for name in sensitive] or [list(qis)]
        tables = engine.counts(column_sets)
        self.by_code = {  # rows per dictionary code of each quasi-identifier
            name: _rows_by_code(tables[0], name, len(self.dictionaries[name])) for name in qis
        }
        self.values = {
            name: _present(name, _rows_by_code(table, name, len(self.dictionaries[name])))
            for name, table in zip(sensitive, tables[: len(sensitive)], strict=True)
        }
        # One per table: its levels, each column's codes (those of the sensitive attribute last)
        # and the rows of each tuple.
        self._engine_tables = [
            (None, [table.codes(name) for name in table.columns], table.rows) for table in tables
        ]
        self._kept = list(self._engine_tables)
        self._labels: dict[tuple[int, int], tuple[np.ndarray, pd.Series]] = {}
        self._tried: dict[int, tuple[Step, np.ndarray]] = {}  # id(rung) -> its labels, known
        self._unchanged: set[tuple[int, int]] = set()  # (i, level) whose label codes are codes
        self.ladders: list[list[Step]] = []
        self.coarsening = False

    def tried(self, rungs: Sequence[tuple[Step, np.ndarray | None]]) -> None:
        """The labels rungs gave each dictionary value when they were tried
        (:func:`~broker.anonymize.ladder.labelled_rungs`): not computed again."""
        known = {id(step): (step, labels) for step, labels in rungs if labels is not None}
        self._tried.update(known)

    def climbing(self, ladders: list[list[Step]]) -> None:
        """Set the ladders, and whether each rung coarsens the one below."""
        self.ladders = ladders
        self.coarsening = all(
            _function_of(self.labels(i, level)[0], self.labels(i, level + 1)[0])
            for i, ladder in enumerate(ladders)
            for level in range(len(ladder))
        )

    def labels(self, i: int, level: int) -> tuple[np.ndarray, pd.Series]:
        """Each dictionary code's label code at ``level`` of quasi-identifier ``i``'s ladder,
        and the labels."""
        key = (i, level)
        if key not in self._labels:
            name = self.qis[i]
            dictionary = self.dictionaries[name]
            step = self.ladders[i][level - 1] if level else None
            tried = self._tried.get(id(step))
            if level == 0:
                found = dictionary.to_numpy(dtype=object)
            elif tried is not None and tried[0] is step:
                found = tried[1]
            else:
                found = labels_of(step, dictionary, self.by_code[name])
            codes, uniques = pd.factorize(found, use_na_sentinel=False)
            self._labels[key] = (codes.astype(np.int32), dictionary_of(pd.Series(uniques)))
            if np.array_equal(codes, np.arange(len(dictionary))):
                self._unchanged.add(key)  # each value its own label code: nothing to relabel
        return self._labels[key]

    def counted(self, table: int, levels: tuple[int, ...]) -> _Counted:
        """The distinct tuples of ``table`` at ``levels``."""
        kept_levels, codes, rows = self._kept[table]
        if not (
            kept_levels is not None
            and self.coarsening
            and all(a <= b for a, b in zip(kept_levels, levels, strict=True))
        ):
            kept_levels, codes, rows = self._engine_tables[table]
            kept_levels = None
        relabelled = list(codes)
        for i, level in enumerate(levels):
            if kept_levels is None:
                label_codes = self.labels(i, level)[0]
                if (i, level) not in self._unchanged:
                    relabelled[i] = label_codes[codes[i]]
            elif level != kept_levels[i]:
                relabelled[i] = _map(self.labels(i, kept_levels[i])[0], self.labels(i, level)[0])[
                    codes[i]
                ]
        widths = [len(self.labels(i, level)[1]) for i, level in enumerate(levels)]
        widths += [len(self.dictionaries[name]) for name in self.sensitive[table : table + 1]]
        codes, rows, keys = _aggregate(relabelled, widths, rows)
        if not self.sensitive:
            return _Counted(codes, rows, np.arange(rows.size), np.arange(rows.size))
        # Sorted by key, the sensitive code its last digit: a class is a run of equal quotients.
        classes = keys // widths[-1]
        starts = np.ones(classes.size, dtype=bool)
        starts[1:] = classes[1:] != classes[:-1]
        return _Counted(codes, rows, np.flatnonzero(starts), np.cumsum(starts) - 1)

    def keep(self, view: _Generalized) -> None:
        """Count later generalizations from ``view``'s tuples: they will all be coarser."""
        for table, counted in view.tables.items():
            self._kept[table] = (view.levels, counted.codes, counted.rows)


@dataclasses.dataclass(frozen=True, eq=False)
class _Counted:
    """The distinct tuples of a generalized table, sorted: each column's codes (the sensitive
    attribute's last, if any), each tuple's rows, where each class of the quasi-identifiers
    starts and each tuple's class."""

    codes: list[np.ndarray]
    rows: np.ndarray
    starts: np.ndarray
    classes: np.ndarray


class _Generalized:
    """One generalization of :class:`_Tuples` seen through what
    :func:`~broker.anonymize.verify.verify_counts` reads of the Engine protocol: ``columns``,
    ``rows``, ``dictionary`` and the count tables of the classes, of (class, sensitive value)
    pairs, of a sensitive attribute and of one quasi-identifier, each counted when first asked.
    """

    def __init__(self, tuples: _Tuples, levels: Sequence[int]):
        self.tuples = tuples
        self.levels = tuple(levels)
        self.tables: dict[int, _Counted] = {}

    @property
    def columns(self) -> list[str]:
        return [*self.tuples.qis, *self.tuples.sensitive]

    @property
    def rows(self) -> int:
        return self.tuples.rows

    def dictionary(self, column: str) -> pd.Series:
        if column in self.tuples.qis:
            i = self.tuples.qis.index(column)
            return self.tuples.labels(i, self.levels[i])[1]
        return self.tuples.dictionaries[column]

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        """The count tables of ``column_sets``; ``people`` is not known here (rows stand in)."""
        return [self._count(tuple(columns)) for columns in column_sets]

    def _count(self, columns: tuple[str, ...]) -> CountTable:
        qis, sensitive = tuple(self.tuples.qis), self.tuples.sensitive
        if columns == qis:
            return self._classes()
        if columns[:-1] == qis and columns[-1] in sensitive:
            return self._pairs(sensitive.index(columns[-1]))
        if len(columns) == 1 and columns[0] in sensitive:
            return self.tuples.values[columns[0]]
        if len(columns) == 1 and columns[0] in qis:
            i = qis.index(columns[0])
            codes, labels = self.tuples.labels(i, self.levels[i])
            rows = np.bincount(codes, self.tuples.by_code[columns[0]], minlength=len(labels))
            return _present(columns[0], rows.astype(np.int64))
        raise ValueError(f"No count table of {list(columns)} in a generalization being planned")

    def _table(self, table: int) -> _Counted:
        if table not in self.tables:
            self.tables[table] = self.tuples.counted(table, self.levels)
        return self.tables[table]

    def _classes(self) -> CountTable:
        counted = self._table(0)
        qis = self.tuples.qis
        if not self.tuples.sensitive:
            return CountTable.of(qis, counted.codes, counted.rows)
        sizes = np.bincount(counted.classes, weights=counted.rows, minlength=counted.starts.size)
        # Each class's codes when a measure asks: k, which the climb checks first, needs sizes.
        codes = [lambda column=column: column[counted.starts] for column in counted.codes[:-1]]
        return CountTable.of(qis, codes, sizes.astype(np.int64))

    def _pairs(self, table: int) -> CountTable:
        counted = self._table(table)
        columns = (*self.tuples.qis, self.tuples.sensitive[table])
        pairs = CountTable.of(columns, counted.codes, counted.rows)
        prefix = (tuple(self.tuples.qis), lambda: (counted.classes, counted.starts.size))
        return dataclasses.replace(pairs, prefix=prefix)


def _aggregate(
    codes: list[np.ndarray], widths: list[int], rows: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The distinct tuples of ``codes`` (each column's codes lie in ``[0, width)``), sorted,
    with their rows and keys (:class:`~broker.engines.base.Grouped`), counted by sorting."""
    grouped = Grouped.of(codes, widths)
    if grouped.unmoved:  # the tuples were distinct and in order: the codes as they are
        return list(codes), grouped.added(rows), grouped.keys
    one = grouped.representatives()
    return [column[one] for column in codes], grouped.added(rows), grouped.keys


def _function_of(codes: np.ndarray, coarser: np.ndarray) -> bool:
    """Whether the label codes ``coarser`` (by dictionary code) are a function of ``codes``."""
    return bool((_map(codes, coarser)[codes] == coarser).all())


def _map(codes: np.ndarray, coarser: np.ndarray) -> np.ndarray:
    """Each label code of ``codes`` to a label code of ``coarser`` that a value holding it has."""
    mapped = np.zeros(int(codes.max()) + 1 if codes.size else 0, dtype=np.int32)
    mapped[codes] = coarser
    return mapped


def _present(name: str, rows: np.ndarray) -> CountTable:
    """The count table of one column from its rows by code (codes of no row left out)."""
    codes = np.flatnonzero(rows)
    return CountTable.of([name], [codes], rows[codes])

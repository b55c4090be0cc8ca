"""Find a verified remedy: the steps that make a dataset meet a target, and their result.

The broker calls :func:`plan_remedy` when a transfer fails its rules and anonymization may fix it,
and :func:`plan_on_engine` for a table it counts without loading; this module is the one entry,
and each dispatches by method.
The planner never guesses: after transforming, it measures the output again
(:mod:`broker.anonymize.verify`) and reports ``satisfied=True`` only when every figure meets the
target and, when the caller gave one, its own acceptance check passes.

Strategy (each step recorded as a :class:`~broker.anonymize.steps.Step`, replayable with
:func:`~broker.anonymize.steps.apply_steps`):

1. Drop the ``drop`` columns that are present (forbidden identifiers, never-leave attributes).
   A dropped column is also no longer a quasi-identifier or sensitive attribute. Then apply the
   ``precision`` steps (dates to the year, postcodes to a prefix, ages top-coded), whatever the
   column's role: the rules on identifying precision ask it of every column that leaves.
2. For each other attribute over its ``max_mmaq_index`` bound (not quasi-identifiers, which step 3
   handles; not sensitive ones, which are judged by l and t only (docs/explanations/measures.md),
   so their bounds are ignored), the mildest generalization that brings it under
   (:func:`broker.anonymize.counts.bounded`, on the column's counts).
3. When ``k``, ``l`` or ``t`` is asked, Mondrian on the quasi-identifiers with
   ``k0 = max(k, l, 2 if only t)`` and the distinct l condition on every sensitive attribute.
4. Verify. If t-closeness or a quasi-identifier's mmaq bound still fails, or the caller's
   acceptance check refuses the result, double k (up to the number of rows, where one class
   makes t = 0) and run again: :func:`_raise_k` is the one loop that does this.
5. Measure the information loss against the input.

With ``method="generalization"`` steps 2 and 3 are the one generalization planner's
(:func:`broker.anonymize.counts.generalize`), run on a
:class:`~broker.engines.pandas.PandasEngine` of the frame: it climbs the quasi-identifiers'
generalization ladders (:func:`~broker.anonymize.ladder.climb`: ranges, quantile bins, dates,
prefixes, the target's hierarchies, masking last), one rung of the attribute with the most
distinct labels at a time, until every check passes; nothing is suppressed and no k is raised.
The chosen :class:`~broker.engines.base.RecodePlan` is applied to the frame, whose information
loss is measured and which the caller's acceptance check may refuse. :func:`plan_on_engine`
runs the same planner on any engine's counts, without loading the rows.

With ``method="partition"`` step 3 builds linked tables instead (:mod:`broker.anonymize.partition`):
k, l and t are then verified in each sensitive table within its groups, and the quasi-identifier
table keeps its exact values (a note in the remedy says so).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from broker.anonymize.counts import bounded, generalize, generalize_engine, recode_plan
from broker.anonymize.limits import WHOLE_TABLE_ROWS
from broker.anonymize.loss import information_loss
from broker.anonymize.mondrian import AnonymizationError, mondrian
from broker.anonymize.partition import QUASI_IDENTIFIER_TABLE, partition
from broker.anonymize.steps import (
    GENERALIZATION,
    MONDRIAN,
    OPTIMAL,
    PARTITION,
    Step,
    apply_steps,
)
from broker.anonymize.suppression import drop_columns
from broker.anonymize.target import Acceptance, Remedy, Target, dropped_because
from broker.anonymize.verify import describe, verify, verify_partition
from broker.engines.base import Engine
from broker.engines.pandas import PandasEngine, recoded

METHODS = (MONDRIAN, PARTITION, GENERALIZATION, OPTIMAL)


def plan_remedy(
    frame: pd.DataFrame,
    target: Target,
    method: str = MONDRIAN,
    accept: Acceptance | None = None,
    deadline: float | None = None,
) -> Remedy:
    """Transform ``frame`` until it meets ``target``, verified by measuring the output.

    See the module docstring for the strategy.

    Parameters
    ----------
    frame : DataFrame
    target : Target
    method : {"mondrian", "partition", "generalization", "optimal"}
    accept : callable, optional
        The caller's acceptance check of a Mondrian or generalization result (see
        :data:`Acceptance`); a generalization it refuses is not offered.
    deadline : float, optional
        A ``time.monotonic()`` instant after which no new attempt starts.

    Returns
    -------
    Remedy
        ``satisfied`` tells whether the target was reached; when it was not, ``reason`` says why
        and ``frame``/``tables`` are None (nothing fit to leave).

    Raises
    ------
    ValueError
        A malformed target: a quasi-identifier, sensitive attribute or hierarchy column missing
        from ``frame`` (named), k or l below 1, t or max_suppression outside [0, 1], l or t without
        sensitive attributes, a column both quasi-identifier and sensitive; an empty frame or one
        whose row labels repeat; an unknown method.

    Examples
    --------
    >>> frame = pd.DataFrame({
    ...     "NIN": [str(i) for i in range(8)],
    ...     "Age": ["28", "51", "34", "63", "40", "30", "42", "25"],
    ...     "Gender": list("FFMFMMMF"),
    ...     "Disease": ["flu", "hiv", "flu", "cold", "hiv", "cold", "flu", "hiv"]})
    >>> target = Target(quasi_identifiers=("Age", "Gender"), sensitive=("Disease",),
    ...                 drop=("NIN",), k=2, l=2)
    >>> remedy = plan_remedy(frame, target)
    >>> remedy.satisfied, [(s.column, s.method) for s in remedy.steps]
    (True, [('NIN', 'drop'), (None, 'mondrian')])
    >>> all(check.passed for check in remedy.checks)
    True
    >>> plan_remedy(frame, Target(quasi_identifiers=("Age",), k=20)).reason  # doctest: +ELLIPSIS
    'Cannot anonymize: k = 20 needs at least 20 rows and the dataset has 8; ...'
    """
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}: expected one of {METHODS}")
    target.check(frame)
    drop = [name for name in target.drop if name in frame.columns]
    qis = [name for name in target.quasi_identifiers if name not in drop]
    sensitive = [name for name in target.sensitive if name not in drop]
    steps = [Step(name, "drop", reason=dropped_because(target, name)) for name in drop]
    work = drop_columns(frame, drop) if drop else frame
    coarser = [step for step in target.precision if step.column in work.columns]
    if coarser:
        work = apply_steps(work, coarser).frame
        steps += coarser

    if method in (GENERALIZATION, OPTIMAL):
        return _generalization(
            frame, work, target, qis, sensitive, drop, steps, accept, deadline, method == OPTIMAL
        )
    engine = PandasEngine(work)
    more_steps, notes, labels = bounded(engine, target, qis, sensitive, drop)
    steps += more_steps
    generalized = list(labels)
    if labels:
        work = recoded(work, recode_plan(engine, labels))

    wants_anonymity = any(v is not None for v in (target.k, target.l, target.t))
    qi_bounds = {n: b for n, b in target.max_mmaq_index.items() if n in qis}
    measured_columns = [n for n in target.quasi_identifiers if n in frame.columns] + generalized
    if (wants_anonymity or (method == PARTITION and sensitive)) and not qis:
        return _failed(
            "k, l and t are measured on quasi-identifiers, and none is declared (or all dropped)",
            steps,
            notes,
        )
    k0 = max(target.k or 1, target.l or 1, 2 if target.t is not None else 1)
    if method == PARTITION:
        if not sensitive:
            return _failed("Partition needs at least one sensitive attribute", steps, notes)
        notes.append(
            "partition hides each sensitive value among its group; the quasi-identifier table "
            "keeps exact values, so it does not hide who is in the data"
        )

        def attempt(k: int) -> Remedy:
            return _partition_at(frame, work, target, qis, sensitive, k, steps, notes)

        return _raise_k(attempt, k0, len(work), ("t",), None, deadline)
    if not wants_anonymity and not qi_bounds:
        checks = verify(work, target, qis, sensitive, drop, 0, len(frame))
        generalized_only = _finish(frame, work, steps, checks, 0, notes, measured_columns)
        # No k to raise: one attempt, still subject to the caller's acceptance.
        return _raise_k(lambda _k: generalized_only, 1, 1, (), accept, deadline)

    def attempt(k: int) -> Remedy:
        return _mondrian_at(
            frame, work, target, qis, sensitive, drop, k, steps, notes, measured_columns
        )

    # k rises up to one class of everyone: the rows, or the people when the target says who.
    everyone = min((len(np.unique(labelling)) for labelling in target.people), default=len(work))
    return _raise_k(attempt, k0, everyone, ("t", "mmaq_index"), accept, deadline)


def plan_on_engine(
    engine: Engine,
    target: Target,
    method: str = GENERALIZATION,
    whole_table_rows: int = WHOLE_TABLE_ROWS,
    load: Callable[[], pd.DataFrame] | None = None,
    deadline: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> Remedy:
    """Make the table ``engine`` holds meet ``target``, planned on its count tables.

    Generalization works at any size: it is planned on counts (:mod:`broker.anonymize.counts`).
    Mondrian and the partition method cut rows, so they need the whole table: above
    ``whole_table_rows`` rows they are refused with a reason naming the bound and
    generalization; below it, the rows are loaded and :func:`plan_remedy` runs.

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
    progress : callable, optional
        For generalization: called after each generalization measured, with how many have been.

    Returns
    -------
    Remedy
        For generalization: ``recode`` (the plan) and ``engine`` (the recoded table, verified on
        its own counts) when satisfied; ``frame`` and ``information_loss`` are None (the loss
        needs a row-aligned join of input and output), and no acceptance check of a frame
        applies. For Mondrian and partition above the bound: not satisfied, ``reason`` names the
        bound and generalization.

    Raises
    ------
    ValueError
        A malformed target (as :func:`plan_remedy`), an unknown method, or Mondrian or
        partition within the bound without ``load``.

    Examples
    --------
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
    if method not in (GENERALIZATION, OPTIMAL):
        raise ValueError(f"Unknown method {method!r}: expected one of {METHODS}")
    target.check_table(engine.columns, engine.rows)
    return generalize_engine(engine, target, deadline, progress, method == OPTIMAL)


def _raise_k(
    attempt: Callable[[int], Remedy],
    k: int,
    rows: int,
    growable: tuple[str, ...],
    accept: Acceptance | None,
    deadline: float | None,
) -> Remedy:
    """The one plan / verify / raise-k loop: try k, 2k, 4k, ... up to the number of rows.

    k is raised when every failed check is one that a larger k can fix (``growable``: t and the
    combination's mmaq bound shrink as classes grow) or when ``accept`` refuses the result;
    anything else (suppression over its limit, a rule no k fixes) ends the search.
    """
    tried, last, why, failed_at = 0, None, None, []
    while True:
        if last is not None and deadline is not None and time.monotonic() > deadline:
            return dataclasses.replace(last, satisfied=False, attempts=tried, out_of_time=True)
        last = _k_explained(attempt(k), why)
        tried += 1
        if last.satisfied:
            refusal = None if accept is None else accept(last.frame)
            if refusal is None:
                return _attempts(last, tried)
            last = _failed(refusal, last.steps, last.notes, last.checks)
        elif not last.checks or not all(c.rule in growable for c in last.checks if not c.passed):
            return _attempts(last, tried)
        if k >= rows:
            return _attempts(last, tried)
        failed_at.append(k)
        k = min(2 * k, rows)
        tried_ks = ", ".join(str(n) for n in failed_at)
        why = f"k raised from {failed_at[0]} to {k} because at k = {tried_ks} {_short(last.reason)}"


def _k_explained(remedy: Remedy, why: str | None) -> Remedy:
    """The attempt with its k-anonymizing step's reason prefixed by why k was raised."""
    if why is None or not remedy.steps or remedy.steps[-1].method not in (MONDRIAN, PARTITION):
        return remedy
    last = remedy.steps[-1]
    step = last.because(f"{why}; {last.reason}" if last.reason else why)
    return dataclasses.replace(remedy, steps=(*remedy.steps[:-1], step))


def _short(reason: str | None, limit: int = 300) -> str:
    text = (reason or "the result failed").removeprefix("anonymization could not reach ")
    text = text.removeprefix("compliance: ")
    text = f"the result still failed: {text}"
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def anonymity_reason(target: Target, qis, sensitive, k: int, work: pd.DataFrame) -> str:
    """Why a k-anonymizing step runs with ``k``: the rule behind k, and how far the data is
    from it (each quasi-identifier's distinct values against the rows)."""
    origin = target.reasons.get("k") or f"k = {target.k} is asked"
    shapes = ", ".join(f"{q} has {work[q].nunique(dropna=False):,} values" for q in qis)
    rows = len(work)
    parts = [
        f"{origin}; {shapes} in {rows:,} rows, so rows are grouped into classes of at "
        f"least {k} on {', '.join(qis)}"
    ]
    if target.l is not None and sensitive:
        parts.append(
            f"each class holds at least {target.l} distinct values of {', '.join(sensitive)}"
        )
    if target.t is not None and sensitive:
        parts.append(f"t <= {target.t:g} is checked on the result")
    return "; ".join(parts)


def _attempts(remedy: Remedy, tried: int) -> Remedy:
    return dataclasses.replace(remedy, attempts=tried)


def _mondrian_at(frame, work, target, qis, sensitive, drop, k, steps, notes, measured_columns):
    """One Mondrian attempt at ``k``, verified."""
    diverse = target.l is not None and bool(sensitive)
    step = Step(
        None,
        MONDRIAN,
        {
            "quasi_identifiers": list(qis),
            "k": k,
            "sensitive": list(sensitive) if diverse else [],
            "l": target.l if diverse else None,
            "max_suppression": target.max_suppression,
        },
        anonymity_reason(target, qis, sensitive, k, work),
    )
    try:
        result = mondrian(
            work,
            qis,
            k,
            sensitive=step.parameters["sensitive"],
            l=step.parameters["l"],
            max_suppression=target.max_suppression,
            people=target.people,
        )
    except AnonymizationError as error:
        return _failed(str(error), [*steps, step], notes)
    checks = verify(result.frame, target, qis, sensitive, drop, result.suppressed_rows, len(work))
    failing = [c for c in checks if not c.passed]
    if failing:
        return _failed(describe(failing, k), [*steps, step], notes, checks)
    return _finish(
        frame, result.frame, [*steps, step], checks, result.suppressed_rows, notes, measured_columns
    )


def _generalization(frame, work, target, qis, sensitive, drop, steps, accept, deadline, optimal):
    """The generalization planner on the counts of ``work``, its plan applied to the rows: the
    output's information loss against ``frame`` and the caller's acceptance added."""
    remedy = generalize(
        PandasEngine(work), target, drop, qis, sensitive, steps, [], deadline, optimal=optimal
    )
    if not remedy.satisfied:
        return remedy
    out = remedy.engine.frame
    measured = [n for n in target.quasi_identifiers if n in frame.columns]
    measured += [n for n in remedy.recode.labels if n not in qis]  # the bounded ones
    refusal = None if accept is None else accept(out)
    if refusal is not None:
        failed = _failed(refusal, remedy.steps, remedy.notes, remedy.checks)
        return dataclasses.replace(failed, attempts=remedy.attempts)
    return dataclasses.replace(
        remedy,
        frame=out,
        information_loss=information_loss(frame, out, measured),
        recode=None,
        engine=None,
    )


def _partition_at(frame, work, target, qis, sensitive, k, steps, notes):
    """One partition attempt at ``k``, verified in each sensitive table."""
    step = Step(
        None,
        PARTITION,
        {
            "quasi_identifiers": list(qis),
            "groups": [[name] for name in sensitive],
            "k": k,
            "l": target.l,
            "max_suppression": target.max_suppression,
        },
        anonymity_reason(target, qis, sensitive, k, work)
        + "; the sensitive values move to tables of their own, linked by group",
    )
    try:
        result = partition(
            work,
            qis,
            k=k,
            groups=step.parameters["groups"],
            l=target.l,
            max_suppression=target.max_suppression,
        )
    except AnonymizationError as error:
        return _failed(str(error), [*steps, step], notes)
    checks = verify_partition(result, target, qis, sensitive, len(work))
    failing = [c for c in checks if not c.passed]
    if failing:
        return _failed(describe(failing, k), [*steps, step], notes, checks)
    published = result.tables[QUASI_IDENTIFIER_TABLE]
    view = published.copy()
    for name in sensitive:
        view[name] = published[f"group_{name}"]
    measured = [n for n in target.quasi_identifiers if n in frame.columns]
    loss = information_loss(
        frame,
        view,
        [*measured, *sensitive],
        class_columns=[f"group_{name}" for name in sensitive],
    )
    return Remedy(
        satisfied=True,
        reason=None,
        steps=(*steps, step),
        tables=result.tables,
        links=result.links,
        suppressed_rows=result.suppressed_rows,
        information_loss=loss,
        checks=tuple(checks),
        notes=tuple(notes),
    )


def _failed(reason, steps, notes, checks=()) -> Remedy:
    return Remedy(
        satisfied=False,
        reason=reason,
        steps=tuple(steps),
        checks=tuple(checks),
        notes=tuple(notes),
    )


def _finish(original, out, steps, checks, suppressed, notes, measured_columns) -> Remedy:
    failing = [c for c in checks if not c.passed]
    if failing:
        return _failed(describe(failing), steps, notes, checks)
    return Remedy(
        satisfied=True,
        reason=None,
        steps=tuple(steps),
        frame=out,
        suppressed_rows=suppressed,
        information_loss=information_loss(original, out, measured_columns),
        checks=tuple(checks),
        notes=tuple(notes),
    )

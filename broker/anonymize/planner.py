"""Find a verified remedy: the steps that make a dataset meet a target, and their result.

The broker calls :func:`plan_remedy` when a transfer fails its rules and anonymization may fix it.
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
   (:mod:`broker.anonymize.ladder`).
3. When ``k``, ``l`` or ``t`` is asked, Mondrian on the quasi-identifiers with
   ``k0 = max(k, l, 2 if only t)`` and the distinct l condition on every sensitive attribute.
4. Verify. If t-closeness or a quasi-identifier's mmaq bound still fails, or the caller's
   acceptance check refuses the result, double k (up to the number of rows, where one class
   makes t = 0) and run again: :func:`_raise_k` is the one loop that does this, for both methods.
5. Measure the information loss against the input.

With ``method="generalization"`` step 3 climbs the quasi-identifiers' generalization ladders
instead (:func:`~broker.anonymize.ladder.climb`: ranges, quantile bins, dates, prefixes, the
target's hierarchies, masking last), one rung of the attribute with the most distinct labels at
a time, until every check passes; nothing is suppressed and no k is raised. Each rung maps a
column's distinct values to labels, so the same plan can be made on an engine's count tables
without loading the rows (:func:`broker.anonymize.counts.plan_on_engine`).

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

from broker.anonymize.ladder import climb, climbed_reason, generalize_until, rungs
from broker.anonymize.loss import information_loss
from broker.anonymize.mondrian import AnonymizationError, mondrian
from broker.anonymize.partition import QUASI_IDENTIFIER_TABLE, partition
from broker.anonymize.steps import GENERALIZATION, MONDRIAN, PARTITION, Step, apply_steps
from broker.anonymize.suppression import drop_columns
from broker.anonymize.target import Acceptance, Remedy, Target
from broker.anonymize.verify import describe, verify, verify_partition
from broker.metrics.mmaq import mmaq

METHODS = (MONDRIAN, PARTITION, GENERALIZATION)


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
    method : {"mondrian", "partition", "generalization"}
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
    notes: list[str] = []
    drop = [name for name in target.drop if name in frame.columns]
    qis = [name for name in target.quasi_identifiers if name not in drop]
    sensitive = [name for name in target.sensitive if name not in drop]
    steps = [Step(name, "drop", reason=dropped_because(target, name)) for name in drop]
    work = drop_columns(frame, drop) if drop else frame
    coarser = [step for step in target.precision if step.column in work.columns]
    if coarser:
        work = apply_steps(work, coarser).frame
        steps += coarser

    ignored = sorted(name for name in target.max_mmaq_index if name in sensitive)
    if ignored:
        notes.append(
            f"mmaq bounds on sensitive attributes {ignored} are not applied: sensitive attributes "
            "are judged by l and t only"
        )
    generalized = []
    for name, bound in target.max_mmaq_index.items():
        if name in drop or name in qis or name in sensitive or name not in work.columns:
            continue
        before = mmaq(work, name).mmaq_index
        if before <= bound:
            continue
        step, work = generalize_until(work, name, bound, target.hierarchies.get(name))
        steps.append(
            step.because(
                f"{name} has Mmaq index {before:.3g}, above the {bound:.3g} allowed: this is "
                "the mildest generalization that brings it under"
            )
        )
        generalized.append(name)

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
    if method == GENERALIZATION:
        return _generalization(
            frame,
            work,
            target,
            qis,
            sensitive,
            drop,
            steps,
            notes,
            measured_columns,
            accept,
            deadline,
        )
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


def dropped_because(target: Target, name: str) -> str:
    """Why ``name`` is dropped: the target's reason, else that it was asked."""
    return target.reasons.get(name) or f"{name} is one of the columns the target drops"


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


def _generalization(
    frame, work, target, qis, sensitive, drop, steps, notes, measured_columns, accept, deadline
):
    """Climb the quasi-identifiers' ladders on the rows until every check passes, verified."""
    climbing = any(v is not None for v in (target.k, target.l, target.t)) or any(
        name in target.max_mmaq_index for name in qis
    )
    ladders = [
        rungs(pd.Series(work[name].unique()), name, target.hierarchies.get(name))
        if climbing
        else []
        for name in qis
    ]
    columns: dict[tuple[int, int], pd.Series] = {}

    def column(i: int, level: int) -> pd.Series:
        if (i, level) not in columns:
            step = ladders[i][level - 1]
            columns[(i, level)] = apply_steps(work[[qis[i]]], [step]).frame[qis[i]]
        return columns[(i, level)]

    def generalized(levels: list[int]) -> pd.DataFrame:
        return work.assign(**{qis[i]: column(i, n) for i, n in enumerate(levels) if n})

    def evaluate(levels: list[int]) -> list:
        return verify(generalized(levels), target, qis, sensitive, drop, 0, len(frame))

    def distinct(i: int, level: int) -> int:
        values = work[qis[i]] if level == 0 else column(i, level)
        return len(pd.factorize(values, use_na_sentinel=False)[1])

    levels, checks, out_of_time = climb(qis, ladders, evaluate, distinct, deadline)
    steps = [
        *steps,
        *(
            ladders[i][n - 1].because(
                climbed_reason(ladders[i][n - 1], distinct(i, 0), distinct(i, n), n, target)
            )
            for i, n in enumerate(levels)
            if n
        ),
    ]
    out = generalized(levels)
    remedy = _finish(frame, out, steps, checks, 0, notes, measured_columns)
    refusal = None if accept is None or not remedy.satisfied else accept(out)
    if refusal is not None:
        remedy = _failed(refusal, steps, notes, checks)
    # Each rung climbed followed one evaluation; the last evaluation ended the search.
    return dataclasses.replace(remedy, attempts=sum(levels) + 1, out_of_time=out_of_time)


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

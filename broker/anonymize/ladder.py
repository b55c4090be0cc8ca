"""The generalization ladder: the mildest generalization that brings an attribute under a bound.

For an attribute over its ``max_mmaq_index`` bound, generalizations are tried from the mildest to
the strongest, and the first that brings its ``mmaq_index`` under the bound is kept:

- a hierarchy given by the target: 1, 2, ... levels up (unknown values -> ``"*"``);
- codes (digit strings of one length, at least 3, such as zip codes): shorter prefixes;
- numbers: quantile bins, the largest power of two below the number of distinct values, then
  half as many, ..., down to 2;
- ISO 8601 dates: month, then year;
- code-like text (no blanks, at most 32 characters): shorter prefixes;
- last resort, always enough: mask the whole column with ``"*"``.

The same ladders serve the generalization method, which climbs the quasi-identifiers' ladders
together until k, l and t hold (:func:`climb`). A rung is a map from a column's distinct values
to labels, so :func:`labels_of` gives its effect on a count table: the one generalization
planner (:mod:`broker.anonymize.counts`) chooses rungs on counts, for a frame as for a table
too large to load.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from broker.anonymize._values import factorize, numeric_column, parse_numbers
from broker.anonymize.generalization import generalize_date, is_level_table, quantile_labels
from broker.anonymize.steps import Step, apply_steps


def climbed_reason(step: Step, before: int, after: int, rung: int, target) -> str:
    """Why a quasi-identifier was generalized as far as ``step`` (its ``rung``-th rung)."""
    asked = [
        f"k = {target.k}" if target.k else "",
        f"l = {target.l}" if target.l else "",
        f"t <= {target.t:g}" if target.t is not None else "",
    ]
    goal = ", ".join(a for a in asked if a) or "its Mmaq bound"
    origin = target.reasons.get("k")
    return (
        f"{step.column} had {before:,} distinct values, {after:,} after this step (rung {rung} "
        f"of its generalization ladder): the quasi-identifier with the most distinct labels "
        f"climbs one rung at a time (Datafly) until {goal} holds"
        + (f" ({origin})" if origin else "")
    )


def rungs(values: pd.Series, name: str, hierarchy: Mapping | None) -> list[Step]:
    """The ladder of ``name`` that applies to ``values`` (each distinct value once is enough),
    mildest first, ending with masking the whole column."""
    return [step for step, _labels in labelled_rungs(values, name, hierarchy)]


def labelled_rungs(
    values: pd.Series, name: str, hierarchy: Mapping | None
) -> list[tuple[Step, np.ndarray | None]]:
    """:func:`rungs`, each with the labels it gives ``values`` as :func:`labels_of` finds them
    (a rung is tried on the values to know it applies): None for quantile bins, which weigh
    the values by their rows, and for the masking, not tried."""
    distinct = values.to_frame(name)
    applicable = []
    for step in _ladder(values, name, hierarchy):
        try:
            applied = apply_steps(distinct, [step])
        except ValueError:
            continue
        quantile = step.method == "quantile"
        applicable.append((step, None if quantile else applied.frame[name].to_numpy(dtype=object)))
    return [*applicable, (Step(name, "mask"), None)]


def labels_of(step: Step, dictionary: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The label ``step`` gives each distinct value of ``dictionary`` (held by ``rows`` rows
    each, by code): the step's effect on a count table. Raises ``ValueError`` as the step does.

    Examples
    --------
    >>> ages = pd.Series(["20", "30", "40", "50"])
    >>> labels_of(Step("age", "quantile", {"bins": 2}), ages, np.array([3, 1, 1, 1])).tolist()
    ['20', '30-50', '30-50', '30-50']
    """
    if step.method != "quantile":
        return (
            apply_steps(dictionary.to_frame(step.column), [step])
            .frame[step.column]
            .to_numpy(dtype=object)
        )
    codes, uniques, _blank = factorize(dictionary)
    numbers = parse_numbers(uniques, step.column)
    labels = dictionary.to_numpy(dtype=object, copy=True)
    present = codes >= 0
    if present.any():
        weights = np.bincount(codes[present], weights=rows[present], minlength=len(uniques))
        labels[present] = quantile_labels(numbers, weights, step.parameters["bins"])[codes[present]]
    return labels


def climb(
    names: Sequence[str],
    ladders: Sequence[Sequence[Step]],
    evaluate: Callable[[list[int]], list],
    distinct: Callable[[int, int], int],
    deadline: float | None = None,
    progress: Callable[[int], None] | None = None,
    coarsening: bool = False,
) -> tuple[list[int], list, bool]:
    """Climb the ladders, one rung at a time, until every check passes (Datafly, Sweeney 2002).

    ``levels[i]`` is how many rungs of ``ladders[i]`` the quasi-identifier ``names[i]`` has
    climbed; ``evaluate(levels)`` returns the checks of that generalization and
    ``distinct(i, level)`` the number of distinct labels of ``names[i]`` at ``level``. While a
    check fails, the attribute with the most distinct labels (the first on a tie) climbs one
    rung, among those whose own mmaq bound fails when only such bounds fail. The top of every
    ladder (masking) makes one class of the whole table, so the search ends, at worst there.
    ``progress``, when given, is called after each evaluation with the number made so far.

    While a k, l or t check fails, every attribute below its top may climb, so the rungs
    climbed until they pass are known before any is measured (:func:`_path`). When each rung's
    labels are a function of the labels of the rung below (``coarsening``: the caller checked),
    each rung on that path merges classes, so k and l only rise and t only falls along it, and
    the first rung where they pass is found by bisection, in about log2 of the path's length
    evaluations; the climb then goes on one rung at a time. The levels chosen are the same.

    Returns the levels, their checks and whether the ``deadline`` (a ``time.monotonic()``
    instant) stopped the search first.
    """
    evaluations = 0

    def measure(levels: list[int]) -> list:
        nonlocal evaluations
        checks = evaluate(levels)
        evaluations += 1
        if progress is not None:
            progress(evaluations)
        return checks

    if coarsening:
        levels, checks, out_of_time = _bisect(_path(ladders, distinct), measure, deadline)
        if out_of_time:
            return levels, checks, True
    else:
        levels = [0] * len(names)
        checks = measure(levels)
    while True:
        failing = [check for check in checks if not check.passed]
        if not failing:
            return levels, checks, False
        if deadline is not None and time.monotonic() > deadline:
            return levels, checks, True
        below_top = [i for i in range(len(names)) if levels[i] < len(ladders[i])]
        if all(check.rule == "mmaq_index" for check in failing):
            over = {check.attribute for check in failing}
            below_top = [i for i in below_top if names[i] in over]
        if not below_top:
            return levels, checks, False
        levels = list(levels)
        levels[_most_distinct(below_top, levels, distinct)] += 1
        checks = measure(levels)


def _most_distinct(candidates: list[int], levels: list[int], distinct) -> int:
    return max(candidates, key=lambda i: (distinct(i, levels[i]), -i))


def _path(ladders: Sequence[Sequence[Step]], distinct) -> list[list[int]]:
    """The levels :func:`climb` goes through while k, l or t fails: from no rung to the top of
    every ladder, each time one rung for the attribute with the most distinct labels."""
    levels = [0] * len(ladders)
    path = [levels]
    while below_top := [i for i in range(len(ladders)) if levels[i] < len(ladders[i])]:
        levels = list(levels)
        levels[_most_distinct(below_top, levels, distinct)] += 1
        path.append(levels)
    return path


def _anonymous(checks: list) -> bool:
    """No check fails but mmaq bounds: k, l and t hold."""
    return all(check.passed or check.rule == "mmaq_index" for check in checks)


def _bisect(path, measure, deadline) -> tuple[list[int], list, bool]:
    """The first levels of ``path`` whose checks are :func:`_anonymous` (the top when none),
    with their checks, and whether the deadline stopped the search (then the last failing levels
    measured)."""
    low, low_checks = 0, measure(path[0])
    if _anonymous(low_checks) or len(path) == 1:
        return path[0], low_checks, False
    high, high_checks = len(path) - 1, None  # the top, not measured yet
    while high - low > 1 or high_checks is None:
        if deadline is not None and time.monotonic() > deadline:
            return path[low], low_checks, True
        probe = high if high_checks is None else (low + high) // 2
        checks = measure(path[probe])
        if _anonymous(checks):
            high, high_checks = probe, checks
        elif probe == high:  # not even the top
            return path[high], checks, False
        else:
            low, low_checks = probe, checks
    return path[high], high_checks, False


def _ladder(values: pd.Series, name: str, hierarchy: Mapping | None) -> list[Step]:
    steps = []
    if hierarchy:
        depth = _hierarchy_depth(hierarchy)
        steps += [
            Step(
                name,
                "hierarchy",
                {"hierarchy": dict(hierarchy), "levels": n, "unknown": "suppress"},
            )
            for n in range(1, depth + 1)
        ]
    _codes, uniques, _blank = factorize(values)
    text = pd.Series(np.asarray(uniques, dtype=object)).astype(str)
    lengths = text.str.len()
    if len(uniques) and _is_code(text, lengths):
        steps += [Step(name, "prefix", {"keep": n}) for n in range(int(lengths.max()) - 1, 0, -1)]
    elif numeric_column(values):
        steps += [
            Step(name, "quantile", {"bins": 2**n}) for n in range(10, 0, -1) if 2**n < len(uniques)
        ]
    elif len(uniques) and _is_date(values, name):
        steps += [Step(name, "date", {"level": "month"}), Step(name, "date", {"level": "year"})]
    elif len(uniques) and lengths.max() <= 32 and not text.str.contains(r"\s").any():
        steps += [Step(name, "prefix", {"keep": n}) for n in range(int(lengths.max()) - 1, 0, -1)]
    return steps


def _is_code(text: pd.Series, lengths: pd.Series) -> bool:
    """Digit strings all of one length >= 3 (zip codes, NINs): prefixes, not ranges."""
    return bool(lengths.min() == lengths.max() >= 3 and text.str.fullmatch(r"\d+").all())


def _is_date(values: pd.Series, name: str) -> bool:
    try:
        generalize_date(values.to_frame(name), name, "month")
    except ValueError:
        return False
    return True


def _hierarchy_depth(hierarchy: Mapping) -> int:
    if is_level_table(hierarchy):
        return max((len(row) for row in hierarchy.values()), default=1)
    parents = {str(a): str(b) for a, b in hierarchy.items()}
    depth = 1
    for start in parents:
        node, steps = start, 0
        while node in parents and steps <= len(parents):
            node, steps = parents[node], steps + 1
        depth = max(depth, steps)
    return depth


MAX_EVALUATIONS = 100_000  # generalizations the optimal search measures at most


def lowest_loss(
    ladders: Sequence[Sequence[Step]],
    evaluate: Callable[[list[int]], list],
    loss: Callable[[int, int], float],
    deadline: float | None = None,
    progress: Callable[[int], None] | None = None,
    budget: int = MAX_EVALUATIONS,
) -> tuple[list[int], list, bool, int]:
    """The generalization of least information loss whose checks all pass: globally optimal
    full-domain generalization, as ARX finds it (Prasser, Kohlmayer et al., Flash, 2014).

    A generalization is one level per ladder; ``loss(i, level)`` is what level ``level`` of
    ladder ``i`` costs, and a generalization costs the sum (non-uniform entropy is a sum over
    attributes). The search is best-first: generalizations are measured in order of their
    cost, each once, starting from none, and a measured one that fails adds the generalizations
    one rung coarser on one ladder. The first that passes is then the cheapest that passes,
    whether or not the checks are monotone along the ladders; ties go to the smallest levels in
    order. Returns the levels, their checks, whether the deadline or the ``budget`` of
    measurements stopped the search first (then the levels are the coarsest, all masked, with
    no checks), and the number of measurements. When every generalization was measured and
    none passes, the levels are the coarsest with its failing checks, and the search did not
    stop early.
    """
    start = tuple(0 for _ in ladders)
    coarsest = tuple(len(ladder) for ladder in ladders)
    coarsest_checks: list = []
    frontier = [(0.0, start)]
    seen = {start}
    measured = 0
    while frontier:
        if measured >= budget or (deadline is not None and time.monotonic() > deadline):
            break
        _cost, levels = heapq.heappop(frontier)
        checks = evaluate(list(levels))
        measured += 1
        if progress is not None:
            progress(measured)
        if all(check.passed for check in checks):
            return list(levels), checks, False, measured
        if levels == coarsest:
            coarsest_checks = checks
        for i, ladder in enumerate(ladders):
            if levels[i] < len(ladder):
                coarser = (*levels[:i], levels[i] + 1, *levels[i + 1 :])
                if coarser not in seen:
                    seen.add(coarser)
                    cost = sum(loss(j, level) for j, level in enumerate(coarser))
                    heapq.heappush(frontier, (cost, coarser))
    if not frontier:  # every generalization measured, none passes: the coarsest says why
        return list(coarsest), coarsest_checks, False, measured
    return list(coarsest), [], True, measured


def optimal_reason(step: Step, rung: int, bits: float, measured: int, target) -> str:
    """Why a quasi-identifier was generalized to ``step`` by the optimal search."""
    asked = [
        f"k = {target.k}" if target.k else "",
        f"l = {target.l}" if target.l else "",
        f"t <= {target.t:g}" if target.t is not None else "",
    ]
    goal = ", ".join(a for a in asked if a) or "its Mmaq bound"
    return (
        f"rung {rung} of {step.column}'s generalization ladder, in the generalization of least "
        f"information loss that meets {goal} ({bits:,.2f} bits of non-uniform entropy in all; "
        f"{measured:,} generalizations measured, cheapest first)"
    )

"""Find a verified remedy: the steps that make a dataset meet a target, and their result.

The broker calls :func:`plan_remedy` when a transfer fails its rules and anonymization may fix it.
The planner never guesses: after transforming, it measures the output again with
:mod:`broker.metrics` and reports ``satisfied=True`` only when every figure meets the target.

Strategy (each step recorded as a :class:`Step`, replayable with :func:`apply_steps`):

1. Drop the ``drop`` columns that are present (forbidden identifiers, never-leave attributes).
   A dropped column is also no longer a quasi-identifier or sensitive attribute.
2. For each other attribute over its ``max_mmaq_index`` bound (not quasi-identifiers, which step 3
   handles; not sensitive ones, which SPEC section 2 judges by l and t only, so their bounds are
   ignored), try generalizations from the mildest to the strongest and keep the first that brings
   its ``mmaq_index`` under the bound:

   - a hierarchy given in ``target.hierarchies``: 1, 2, ... levels up (unknown values -> ``"*"``);
   - codes (digit strings of one length, at least 3, such as zip codes): shorter prefixes;
   - numbers: quantile bins, the largest power of two below the number of distinct values, then
     half as many, ..., down to 2;
   - ISO 8601 dates: month, then year;
   - code-like text (no blanks, at most 32 characters): shorter prefixes;
   - last resort, always enough: mask the whole column with ``"*"``.
3. When ``k``, ``l`` or ``t`` is asked, Mondrian on the quasi-identifiers with
   ``k0 = max(k, l, 2 if only t)`` and the distinct l condition on every sensitive attribute; if
   t-closeness or a quasi-identifier's mmaq bound still fails, double k (up to the number of rows,
   where one class makes t = 0) and run again.
4. Verify and measure the information loss against the input.

With ``method="partition"`` step 3 builds linked tables instead (:mod:`broker.anonymize.partition`):
k, l and t are then verified in each sensitive table within its groups, and the quasi-identifier
table keeps its exact values (a note in the remedy says so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from broker.anonymize._values import factorize, numeric_column
from broker.anonymize.generalization import (
    generalize_date,
    generalize_hierarchy,
    generalize_prefix,
    generalize_quantiles,
    generalize_range,
)
from broker.anonymize.loss import InformationLoss, information_loss
from broker.anonymize.mondrian import AnonymizationError, mondrian
from broker.anonymize.partition import (
    GROUP_ID,
    QUASI_IDENTIFIER_TABLE,
    Link,
    partition,
)
from broker.anonymize.suppression import drop_columns, mask
from broker.metrics.anonymity import k_anonymity, sensitive_measure
from broker.metrics.mmaq import mmaq
from broker.roles import require_columns, require_distinct_roles

MONDRIAN = "mondrian"
PARTITION = "partition"
METHODS = (MONDRIAN, PARTITION)


@dataclass(frozen=True)
class Target:
    """What the data that leaves must satisfy (the stricter of export and import rules)."""

    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    k: int | None = None
    l: int | None = None
    t: float | None = None
    max_mmaq_index: dict[str, float] = field(default_factory=dict)
    max_suppression: float = 0.05
    hierarchies: dict[str, dict[str, str]] = field(default_factory=dict)
    # Who each row of the frame is (labellings, one code per row), so that labels name only
    # categories that k people hold: a village of one person sent ten times stays unnamed.
    people: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class Step:
    """One transformation: ``method`` applied to ``column`` (None for Mondrian and partition).

    Methods and their parameters: ``drop`` {}, ``mask`` {"rows"?}, ``range`` {"width",
    "origin"?}, ``quantile`` {"bins"}, ``date`` {"level"}, ``prefix`` {"keep"}, ``hierarchy``
    {"hierarchy", "levels", "unknown"}, ``mondrian`` {"quasi_identifiers", "k", "sensitive",
    "l", "max_suppression"}, ``partition`` {"quasi_identifiers", "groups", "k", "l",
    "max_suppression"}.
    """

    column: str | None
    method: str
    parameters: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-serializable form (lists for sequences)."""
        return {
            "column": self.column,
            "method": self.method,
            "parameters": json.loads(json.dumps(self.parameters)),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Step:
        """The inverse of :meth:`as_dict`."""
        unknown = set(data) - {"column", "method", "parameters"}
        if unknown:
            raise ValueError(f"Unknown step field {sorted(unknown)[0]!r}")
        if "method" not in data:
            raise ValueError("A step needs a 'method'")
        return cls(data.get("column"), data["method"], dict(data.get("parameters") or {}))


@dataclass(frozen=True)
class Check:
    """One verified rule: ``measured`` against ``limit`` (None when not measurable)."""

    rule: str
    attribute: str | None
    limit: float | int | None
    measured: float | int | None
    passed: bool

    def as_dict(self) -> dict:
        return {
            "rule": self.rule,
            "attribute": self.attribute,
            "limit": self.limit,
            "measured": self.measured,
            "passed": self.passed,
        }


@dataclass(frozen=True, eq=False)
class Remedy:
    """The planner's answer.

    Attributes
    ----------
    satisfied : bool
        True only if every check passed on the re-measured output.
    reason : str or None
        Why the target could not be met (None when satisfied).
    steps : tuple of Step
        What was applied, in order.
    frame : DataFrame or None
        The data that may leave (method mondrian), None for partition or when not satisfied.
    tables : dict of str to DataFrame, or None
        The linked tables (method partition), None otherwise or when not satisfied.
    links : tuple of Link
    suppressed_rows : int
    information_loss : InformationLoss or None
        Against the input; None when nothing was produced.
    checks : tuple of Check
        Every verified rule of the last attempt, passed or not.
    notes : tuple of str
        What a reader should know (bounds ignored, what partition does not hide).
    """

    satisfied: bool
    reason: str | None
    steps: tuple[Step, ...]
    frame: pd.DataFrame | None = None
    tables: dict[str, pd.DataFrame] | None = None
    links: tuple[Link, ...] = ()
    suppressed_rows: int = 0
    information_loss: InformationLoss | None = None
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        """Everything but the data, JSON-serializable."""
        return {
            "satisfied": self.satisfied,
            "reason": self.reason,
            "steps": [step.as_dict() for step in self.steps],
            "links": [link.as_dict() for link in self.links],
            "suppressed_rows": self.suppressed_rows,
            "information_loss": self.information_loss.as_dict() if self.information_loss else None,
            "checks": [check.as_dict() for check in self.checks],
            "notes": list(self.notes),
        }


@dataclass(frozen=True, eq=False)
class Anonymized:
    """Result of :func:`apply_steps`: a frame, or linked tables when a partition step ran."""

    frame: pd.DataFrame | None
    tables: dict[str, pd.DataFrame] | None
    links: tuple[Link, ...]
    suppressed_rows: int


def apply_steps(frame: pd.DataFrame, steps: Sequence[Step | Mapping]) -> Anonymized:
    """Replay ``steps`` on ``frame``, deterministically.

    Mondrian and partition are deterministic, so replaying them re-runs them with the same
    parameters. Quantile bins are computed on the data, so they match on the same data.

    Parameters
    ----------
    frame : DataFrame
    steps : sequence of Step or of their ``as_dict()`` form

    Returns
    -------
    Anonymized

    Raises
    ------
    ValueError
        Unknown method, a step after a partition (which must come last), or the step's own
        errors (unknown column, non-numeric values, ...).

    Examples
    --------
    >>> frame = pd.DataFrame({"NIN": ["1", "2", "3"], "Age": ["28", "34", "51"]})
    >>> steps = [Step("NIN", "drop"), Step("Age", "range", {"width": 10})]
    >>> apply_steps(frame, steps).frame["Age"].tolist()
    ['20-30', '30-40', '50-60']
    """
    current, suppressed = frame, 0
    tables, links = None, ()
    for raw in steps:
        step = raw if isinstance(raw, Step) else Step.from_dict(raw)
        if tables is not None:
            raise ValueError("A partition step must be the last step")
        p = dict(step.parameters)
        method = step.method
        if method == "drop":
            current = drop_columns(current, [step.column])
        elif method == "mask":
            current = mask(current, step.column, p.get("rows"))
        elif method == "range":
            current = generalize_range(current, step.column, p["width"], p.get("origin", 0.0))
        elif method == "quantile":
            current = generalize_quantiles(current, step.column, p["bins"])
        elif method == "date":
            current = generalize_date(current, step.column, p.get("level", "month"))
        elif method == "prefix":
            current = generalize_prefix(current, step.column, p["keep"])
        elif method == "hierarchy":
            current = generalize_hierarchy(
                current, step.column, p["hierarchy"], p.get("levels", 1), p.get("unknown", "error")
            )
        elif method == MONDRIAN:
            result = mondrian(
                current,
                p["quasi_identifiers"],
                p["k"],
                sensitive=p.get("sensitive", ()),
                l=p.get("l"),
                max_suppression=p.get("max_suppression", 0.0),
            )
            current, suppressed = result.frame, suppressed + result.suppressed_rows
        elif method == PARTITION:
            result = partition(
                current,
                p["quasi_identifiers"],
                k=p["k"],
                groups=p["groups"],
                l=p.get("l"),
                max_suppression=p.get("max_suppression", 0.0),
            )
            tables, links = result.tables, result.links
            suppressed += result.suppressed_rows
        else:
            raise ValueError(f"Unknown anonymization method {method!r} for column {step.column!r}")
    if tables is not None:
        return Anonymized(None, tables, links, suppressed)
    return Anonymized(current, None, (), suppressed)


def plan_remedy(frame: pd.DataFrame, target: Target, method: str = MONDRIAN) -> Remedy:
    """Transform ``frame`` until it meets ``target``, verified by measuring the output.

    See the module docstring for the strategy.

    Parameters
    ----------
    frame : DataFrame
    target : Target
    method : {"mondrian", "partition"}

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
    _check_target(frame, target, method)
    notes: list[str] = []
    drop = [name for name in target.drop if name in frame.columns]
    qis = [name for name in target.quasi_identifiers if name not in drop]
    sensitive = [name for name in target.sensitive if name not in drop]
    steps = [Step(name, "drop") for name in drop]
    work = drop_columns(frame, drop) if drop else frame

    ignored = sorted(name for name in target.max_mmaq_index if name in sensitive)
    if ignored:
        notes.append(
            f"mmaq bounds on sensitive attributes {ignored} are not applied: sensitive attributes "
            "are judged by l and t (SPEC section 2)"
        )
    generalized = []
    for name, bound in target.max_mmaq_index.items():
        if name in drop or name in qis or name in sensitive or name not in work.columns:
            continue
        if mmaq(work, name).mmaq_index <= bound:
            continue
        step, work = _generalize_until(work, name, bound, target.hierarchies.get(name))
        steps.append(step)
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
    if method == PARTITION:
        return _plan_partition(frame, work, target, qis, sensitive, steps, notes, measured_columns)
    if not wants_anonymity and not qi_bounds:
        checks = _verify(work, target, qis, sensitive, drop, 0, len(frame))
        return _finish(frame, work, steps, checks, 0, notes, measured_columns)

    k = max(target.k or 1, target.l or 1, 2 if target.t is not None else 1)
    rows = len(work)
    diverse = target.l is not None and bool(sensitive)
    while True:
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
        checks = _verify(result.frame, target, qis, sensitive, drop, result.suppressed_rows, rows)
        failing = [c for c in checks if not c.passed]
        if not failing:
            return _finish(
                frame,
                result.frame,
                [*steps, step],
                checks,
                result.suppressed_rows,
                notes,
                measured_columns,
            )
        growable = all(c.rule in ("t", "mmaq_index") for c in failing)
        if not growable or k >= rows:
            return _failed(_describe(failing, k), [*steps, step], notes, checks)
        k = min(2 * k, rows)


def _plan_partition(frame, work, target, qis, sensitive, steps, notes, measured_columns):
    if not sensitive:
        return _failed("Partition needs at least one sensitive attribute", steps, notes)
    notes.append(
        "partition hides each sensitive value among its group; the quasi-identifier table keeps "
        "exact values, so it does not hide who is in the data"
    )
    k = max(target.k or 1, target.l or 1, 2 if target.t is not None else 1)
    rows = len(work)
    while True:
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
        checks = _verify_partition(result, target, qis, sensitive, rows)
        failing = [c for c in checks if not c.passed]
        if not failing:
            published = result.tables[QUASI_IDENTIFIER_TABLE]
            view = published.copy()
            for name in sensitive:
                view[name] = published[f"group_{name}"]
            loss = information_loss(
                frame,
                view,
                [*measured_columns, *sensitive],
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
        growable = all(c.rule == "t" for c in failing)
        if not growable or k >= rows:
            return _failed(_describe(failing, k), [*steps, step], notes, checks)
        k = min(2 * k, rows)


def _check_target(frame: pd.DataFrame, target: Target, method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}: expected one of {METHODS}")
    if len(frame) == 0:
        raise ValueError("The dataset has no rows: there is nothing to anonymize")
    require_columns(frame.columns, target.quasi_identifiers, "Quasi-identifier")
    require_columns(frame.columns, target.sensitive, "Sensitive attribute")
    require_columns(frame.columns, list(target.hierarchies), "Hierarchy column")
    require_distinct_roles(target.quasi_identifiers, target.sensitive)
    if not frame.index.is_unique:
        raise ValueError(
            "The dataset's row labels repeat: reset its index (rows are matched by label)"
        )
    for name, value in (("k", target.k), ("l", target.l)):
        if value is not None and (not isinstance(value, int | np.integer) or value < 1):
            raise ValueError(f"Target {name} must be an integer >= 1, got {value!r}")
    if target.t is not None and not 0.0 <= target.t <= 1.0:
        raise ValueError(f"Target t must be in [0, 1], got {target.t!r}")
    if not 0.0 <= target.max_suppression <= 1.0:
        raise ValueError(f"max_suppression must be in [0, 1], got {target.max_suppression!r}")
    for name, bound in target.max_mmaq_index.items():
        if not (isinstance(bound, int | float) and 0.0 <= bound <= 1.0):
            raise ValueError(f"The mmaq_index bound of column {name!r} must be in [0, 1]")
    if (target.l is not None or target.t is not None) and not target.sensitive:
        raise ValueError("Target l and t apply to sensitive attributes, and none is declared")


def _generalize_until(work, name, bound, hierarchy):
    """The mildest generalization of ``name`` that brings its mmaq_index to ``bound`` or below."""
    for step in _ladder(work[name], name, hierarchy):
        try:
            candidate = apply_steps(work, [step]).frame
        except ValueError:
            continue
        if mmaq(candidate, name).mmaq_index <= bound:
            return step, candidate
    step = Step(name, "mask")
    return step, mask(work, name)


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
    parents = {str(a): str(b) for a, b in hierarchy.items()}
    depth = 1
    for start in parents:
        node, steps = start, 0
        while node in parents and steps <= len(parents):
            node, steps = parents[node], steps + 1
        depth = max(depth, steps)
    return depth


def _sensitive_checks(table, classes, name, target) -> list[Check]:
    """The l and t checks of one sensitive attribute within ``classes`` (None when empty)."""
    measure = None if len(table) == 0 else sensitive_measure(table, classes, name)
    checks = []
    if target.l is not None:
        value = None if measure is None else measure.l_diversity
        checks.append(Check("l", name, target.l, value, value is not None and value >= target.l))
    if target.t is not None:
        value = None if measure is None else measure.t_closeness
        passed = value is not None and value <= target.t + 1e-12
        checks.append(Check("t", name, target.t, value, passed))
    return checks


def _verify(out, target, qis, sensitive, drop, suppressed, rows) -> list[Check]:
    checks = [Check("drop", name, None, None, name not in out.columns) for name in drop]
    checks.append(
        Check(
            "max_suppression",
            None,
            target.max_suppression,
            suppressed / rows,
            suppressed <= target.max_suppression * rows,
        )
    )
    empty = len(out) == 0
    if target.k is not None:
        k = None if empty else k_anonymity(out, qis).k
        checks.append(Check("k", None, target.k, k, k is not None and k >= target.k))
    for name in sensitive if (target.l is not None or target.t is not None) else ():
        checks += _sensitive_checks(out, qis, name, target)
    for name, bound in target.max_mmaq_index.items():
        if name in sensitive or name in drop or name not in out.columns:
            continue
        value = None if empty else mmaq(out, name).mmaq_index
        checks.append(Check("mmaq_index", name, bound, value, value is not None and value <= bound))
    return checks


def _verify_partition(result, target, qis, sensitive, rows) -> list[Check]:
    checks = [
        Check("drop", name, None, None, all(name not in t.columns for t in result.tables.values()))
        for name in target.drop
    ]
    suppressed = result.suppressed_rows
    checks.append(
        Check(
            "max_suppression",
            None,
            target.max_suppression,
            suppressed / rows,
            suppressed <= target.max_suppression * rows,
        )
    )
    for name in sensitive:
        table = result.tables[f"sensitive_{name}"]
        empty = len(table) == 0
        if target.k is not None:
            k = None if empty else k_anonymity(table, [GROUP_ID]).k
            checks.append(Check("k", name, target.k, k, k is not None and k >= target.k))
        checks += _sensitive_checks(table, [GROUP_ID], name, target)
    published = result.tables[QUASI_IDENTIFIER_TABLE]
    for name, bound in target.max_mmaq_index.items():
        if name in sensitive or name in target.drop or name not in published.columns:
            continue
        value = mmaq(published, name).mmaq_index if len(published) else None
        checks.append(Check("mmaq_index", name, bound, value, value is not None and value <= bound))
    return checks


def _describe(failing: Sequence[Check], k: int | None = None) -> str:
    parts = []
    for check in failing:
        where = f" of {check.attribute!r}" if check.attribute else ""
        measured = "not measurable" if check.measured is None else _number(check.measured)
        parts.append(f"{check.rule}{where} is {measured}, limit {_number(check.limit)}")
    at = "" if k is None else f" at k = {k}"
    return f"Target not reached{at}: " + "; ".join(parts)


def _number(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, float) and not math.isnan(value):
        return f"{value:.4g}"
    return str(value)


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
        return _failed(_describe(failing), steps, notes, checks)
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

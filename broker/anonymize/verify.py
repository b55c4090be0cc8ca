"""Verification: measure the anonymized output again and check every rule of the target.

The planner never trusts a method to have done its job: each check here re-measures the output
with :mod:`broker.metrics`, and a remedy is ``satisfied`` only when every check passed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from broker.anonymize.partition import GROUP_ID, QUASI_IDENTIFIER_TABLE
from broker.metrics.anonymity import (
    k_anonymity,
    k_anonymity_of,
    sensitive_measure,
    sensitive_measure_of,
)
from broker.metrics.mmaq import mmaq, mmaq_from_counts


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


def _sensitive_checks(table, classes, name, target) -> list[Check]:
    """The l and t checks of one sensitive attribute within ``classes`` (None when empty)."""
    measure = None if len(table) == 0 else sensitive_measure(table, classes, name)
    return _l_and_t(measure, name, target)


def _l_and_t(measure, name, target) -> list[Check]:
    checks = []
    if target.l is not None:
        value = None if measure is None else measure.l_diversity
        checks.append(Check("l", name, target.l, value, value is not None and value >= target.l))
    if target.t is not None:
        value = None if measure is None else measure.t_closeness
        passed = value is not None and value <= target.t + 1e-12
        checks.append(Check("t", name, target.t, value, passed))
    return checks


def verify(out, target, qis, sensitive, drop, suppressed, rows) -> list[Check]:
    """Every rule of ``target`` on the anonymized frame ``out`` (``rows``: the input's rows)."""
    checks = [Check("drop", name, None, None, name not in out.columns) for name in drop]
    checks.append(_suppression(target, suppressed, rows))
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


def verify_counts(engine, target, qis, sensitive, drop, complete=True) -> list[Check]:
    """:func:`verify` on a table an engine holds, from its count tables (nothing suppressed):
    the checks of a generalization planned on counts, and of the recoded table before it
    leaves. Unless ``complete``, they end with the first k, l or t check that fails (the
    climb needs no more)."""
    checks = [Check("drop", name, None, None, name not in engine.columns) for name in drop]
    checks.append(_suppression(target, 0, engine.rows))

    def stop() -> bool:
        return not complete and not all(check.passed for check in checks)

    if target.k is not None:
        k = k_anonymity_of(engine.counts([qis])[0]).k
        checks.append(Check("k", None, target.k, k, k >= target.k))
    for name in sensitive if (target.l is not None or target.t is not None) else ():
        if stop():
            return checks
        # In rows, as the climb counts them: people are the F-SLA evaluation's to count.
        checks += _l_and_t(sensitive_measure_of(engine, name, qis, people=False), name, target)
    if stop():
        return checks
    for name, bound in target.max_mmaq_index.items():
        if name in sensitive or name in drop or name not in engine.columns:
            continue
        value = mmaq_from_counts(engine.counts([[name]])[0].rows).mmaq_index
        checks.append(Check("mmaq_index", name, bound, value, value <= bound))
    return checks


def verify_partition(result, target, qis, sensitive, rows) -> list[Check]:
    """Every rule of ``target`` on linked tables: k, l and t within each sensitive table's
    groups."""
    checks = [
        Check("drop", name, None, None, all(name not in t.columns for t in result.tables.values()))
        for name in target.drop
    ]
    checks.append(_suppression(target, result.suppressed_rows, rows))
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


def _suppression(target, suppressed: int, rows: int) -> Check:
    allowed = suppressed <= target.max_suppression * rows
    return Check("max_suppression", None, target.max_suppression, suppressed / rows, allowed)


def describe(failing: Sequence[Check], k: int | None = None) -> str:
    """One sentence naming each failed rule, what was measured and the limit."""
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

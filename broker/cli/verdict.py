"""The verdict a report leads with, in words, and the ``--fail-if`` conditions a CI job sets.

A condition is ``NAME OP NUMBER`` (``k<5``, ``risk>0.2``), with NAME one of :data:`MEASURES`
and OP one of ``< <= > >= == !=``; it *holds* when the measured value satisfies it, and a
condition that holds makes the command exit 1 after printing its report.
"""

from __future__ import annotations

import argparse
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.metrics.report import AnalysisReport


IDENTIFIER = "identifier"

# name -> (what it is, what it needs, how to read it off a report); None when not measured.
MEASURES: dict[str, tuple[str, str, Callable[[AnalysisReport], float | None]]] = {
    "k": (
        "the smallest number of rows sharing one combination of quasi-identifier values",
        "--qi",
        lambda r: r.quasi_identifiers.anonymity.k if r.quasi_identifiers else None,
    ),
    "risk": (
        "the largest re-identification risk of a row, 1/k (prosecutor model)",
        "--qi",
        lambda r: (
            r.quasi_identifiers.anonymity.prosecutor_risk.max if r.quasi_identifiers else None
        ),
    ),
    "unique": (
        "the share of rows unique on the quasi-identifiers, 0 to 1",
        "--qi",
        lambda r: (
            r.quasi_identifiers.anonymity.prosecutor_risk.unique_share
            if r.quasi_identifiers
            else None
        ),
    ),
    "l": (
        "the smallest distinct l-diversity over the sensitive attributes",
        "--sensitive",
        lambda r: min(s.l_diversity for s in r.sensitive) if r.sensitive else None,
    ),
    "t": (
        "the largest t-closeness over the sensitive attributes, 0 to 1",
        "--sensitive",
        lambda r: max(s.t_closeness for s in r.sensitive) if r.sensitive else None,
    ),
    "identifiers": (
        "how many attributes, besides the declared sensitive ones, single out rows on their own "
        "(Mmaq class identifier)",
        "",
        lambda r: len(identifiers(r)),
    ),
}
OPERATORS = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
_CONDITION = re.compile(
    r"\s*([a-z]+)\s*(<=|>=|==|!=|<|>)\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*", re.ASCII
)


def identifiers(report: AnalysisReport) -> list[str]:
    """The attributes that single rows out on their own, by the broker's one definition
    (:func:`broker.fsla.identifying.identifying`, which a transfer's decision and remedy use):
    direct identifiers found in the values (e-mails, phone numbers, national ids), and the
    attributes not declared sensitive whose values are all distinct."""
    from broker.fsla.identifying import identifying

    sensitive = {s.name for s in report.sensitive}
    return [a.name for a in report.attributes if identifying(a, sensitive)]


@dataclass(frozen=True)
class Condition:
    name: str
    op: str
    limit: float
    text: str

    def value(self, report: AnalysisReport) -> float | None:
        return MEASURES[self.name][2](report)

    def holds(self, report: AnalysisReport) -> bool:
        value = self.value(report)
        return value is not None and OPERATORS[self.op](value, self.limit)

    def as_dict(self, report: AnalysisReport) -> dict:
        return {"condition": self.text, "value": self.value(report), "holds": self.holds(report)}


def condition(text: str) -> Condition:
    """``--fail-if`` parsed strictly: one measure, one operator, one number.

    Examples
    --------
    >>> condition("k<5")
    Condition(name='k', op='<', limit=5.0, text='k < 5')
    >>> condition("risk >= 0.2").text
    'risk >= 0.2'
    """
    match = _CONDITION.fullmatch(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a condition: write NAME OP NUMBER, such as k<5 or risk>0.2, with "
            f"NAME one of {', '.join(MEASURES)} and OP one of {' '.join(sorted(OPERATORS))}"
        )
    name, op, number = match.groups()
    if name not in MEASURES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown measure {name!r}; the measures are {', '.join(MEASURES)}"
        )
    return Condition(name, op, float(number), f"{name} {op} {float(number):g}")


def fail_if_help() -> str:
    listed = "; ".join(f"{name}: {what}" for name, (what, _, _) in MEASURES.items())
    return (
        "exit with status 1 (after the report) when CONDITION holds; repeatable, any one "
        "holding fails. CONDITION is NAME OP NUMBER, e.g. k<5 or risk>0.2, OP one of < <= > "
        f">= == !=. Names: {listed}. k, risk and unique need --qi; l and t need --sensitive"
    )


def check_conditions(conditions: Sequence[Condition], args: argparse.Namespace) -> None:
    """A condition on a measure the command will not take is a usage error, named."""
    from broker.cli.common import CommandError

    for cond in conditions:
        needs = MEASURES[cond.name][1]
        if needs == "--qi" and not args.qi:
            raise CommandError(
                f"--fail-if {cond.text!r} needs --qi (k and risk are measured on it)"
            )
        if needs == "--sensitive" and not args.sensitive:
            raise CommandError(f"--fail-if {cond.text!r} needs --sensitive")


@dataclass(frozen=True)
class Verdict:
    anonymous_enough: bool
    headline: str
    problems: tuple[str, ...]
    held: tuple[str, ...]

    def lines(self) -> list[str]:
        return [self.headline, *(f"  - {p}" for p in self.problems)]

    def as_dict(self) -> dict:
        return {
            "anonymous_enough": self.anonymous_enough,
            "headline": self.headline,
            "problems": list(self.problems),
            "fail_if_held": list(self.held),
        }


def verdict(report: AnalysisReport, conditions: Sequence[Condition] = ()) -> Verdict:
    """What a reader should take from the report first: the problems, most serious first."""
    problems = []
    singling_out = identifiers(report)
    qi = report.quasi_identifiers
    if qi is not None and qi.anonymity.k == 1:
        unique = round(qi.anonymity.prosecutor_risk.unique_share * report.rows)
        problems.append(
            f"k = 1 ({unique:,} of {report.rows:,} rows are unique on {', '.join(qi.attributes)})"
        )
    if singling_out:
        many = len(singling_out) > 1
        hint = "" if report.sensitive else " (declare the values to protect with --sensitive)"
        problems.append(
            f"{_count(len(singling_out), 'attribute')} {'single' if many else 'singles'} out "
            f"rows on {'their' if many else 'its'} own (identifiers in the values, or every value "
            f"distinct): "
            f"{', '.join(singling_out)}{hint}"
        )
    for measure in report.sensitive:
        if measure.l_diversity == 1:
            problems.append(
                f"{measure.name}: a class of rows holds one value only (l = 1), which anyone "
                "who knows the quasi-identifiers learns"
            )
    held = tuple(c.text for c in conditions if c.holds(report))
    for cond in conditions:
        if cond.holds(report):
            problems.append(
                f"--fail-if {cond.text} holds ({cond.name} = {_number(cond.value(report))})"
            )
    if problems:
        return Verdict(False, f"Not anonymous enough: {problems[0]}", tuple(problems[1:]), held)
    if qi is None:
        headline = (
            "No attribute singles out rows on its own; declare the quasi-identifiers (--qi) to "
            "measure k and the re-identification risk"
        )
    else:
        risk = qi.anonymity.prosecutor_risk.max
        headline = (
            f"k = {qi.anonymity.k} on {', '.join(qi.attributes)}: every row shares its values "
            f"with at least {qi.anonymity.k - 1} others (largest re-identification risk "
            f"{risk:.3g}); no attribute singles out rows on its own"
            + (" (besides the declared sensitive ones)" if report.sensitive else "")
        )
    return Verdict(True, headline, (), held)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _number(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

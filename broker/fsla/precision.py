"""F-SLA rules on identifying precision: how precise a date, a postcode or an age may leave.

The source. HIPAA's Safe Harbor de-identification method (45 CFR 164.514(b)(2)(i)) removes, of
each individual, "all elements of dates (except year) for dates directly related to an
individual, including birth date, admission date, discharge date, date of death; and all ages
over 89 and all elements of dates (including year) indicative of such age, except that such
ages and elements may be aggregated into a single category of age 90 or older" (item C) and
"all geographic subdivisions smaller than a State, including ... zip code ..., except for the
initial three digits of a zip code if, according to the current publicly available data from
the Bureau of the Census, the geographic unit formed by combining all zip codes with the same
three initial digits contains more than 20,000 people" (item B; the others become 000).
National statistical offices recode the same variables before release: global recoding of dates
and geography, top-coding of ages (A. Hundepool et al., *Statistical Disclosure Control*, Wiley,
2012, chapter 3, the methods of the European statistical system's handbook).

The rules, each a field of a rule set (:class:`broker.fsla.models.RuleSet`):

- ``max_date_precision``: ``year``, ``month`` or ``day``, the finest date that may leave;
- ``max_postcode_prefix``: the most characters of a postcode that may leave;
- ``max_age``: the highest age written as such (older ages leave as one category, ``90+``).

The check. Every column that leaves is read (:mod:`broker.columns.precision`, whatever its declared
role): dates are recognized by their values (or a name that says date), postcodes and ages by
name and values, each value read however it is written. A column fails when one of its values is
finer than the rule, or cannot be read (its precision is then unknown). Stricter wins across the
rule sets that apply, as each rule declares (:mod:`broker.fsla.stricter`): the coarsest date
level, the fewest characters, the lowest age. The remedy (:func:`remedy_steps`): the date
generalized to the year (or month), the postcode cut to its prefix followed by ``*``, ages
top-coded, an unreadable value masked; the anonymized table is measured and judged again, as
every remedy is.

What the broker cannot know: whether a postcode area is small. Safe Harbor turns the prefixes of
areas of 20,000 people or fewer into ``000``; the broker has no census of the members'
countries, so a record that needs it sets a shorter prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.anonymize.steps import Step
from broker.columns.precision import AGE, DATE, POSTCODE, Limits, bound, describe
from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.metrics.report import AnalysisReport, AttributeReport

FIELDS = ("max_date_precision", "max_postcode_prefix", "max_age")
_WHAT = {DATE: "dates", POSTCODE: "postcodes", AGE: "ages"}
_SOURCE = "HIPAA Safe Harbor, 45 CFR 164.514(b)(2)"


def limits_of(rule_set: RuleSet) -> Limits:
    return Limits(rule_set.max_date_precision, rule_set.max_postcode_prefix, rule_set.max_age)


def precision_rules(
    report: AnalysisReport, scope: str, jurisdiction: str, rule_set: RuleSet
) -> list[RuleResult]:
    """One failed result per column more precise than the rule set allows, or one passed
    result per rule set that sets a precision rule."""
    limits = limits_of(rule_set)
    if limits == Limits():
        return []
    where = f"{jurisdiction} ({scope})"
    failed = []
    for attribute in report.attributes:
        found = attribute.precision
        if found is None or not found.exceeds(limits):
            continue
        failed.append(
            RuleResult(
                _RULES[found.kind],
                scope,
                jurisdiction,
                False,
                _failure(attribute, limits, where),
                attribute.name,
                _measured(attribute),
                _threshold(found.kind, limits),
            )
        )
    if failed:
        return failed
    asked = "; ".join(
        _allowed(kind, limits) for kind in (DATE, POSTCODE, AGE) if _set(kind, limits)
    )
    return [
        RuleResult(
            "identifying_precision",
            scope,
            jurisdiction,
            True,
            f"no date, postcode or age is more precise than {where} allows ({asked})",
            threshold=asked,
        )
    ]


_RULES = {DATE: "max_date_precision", POSTCODE: "max_postcode_prefix", AGE: "max_age"}


def _set(kind: str, limits: Limits) -> bool:
    return _threshold(kind, limits) is not None


def _allowed(kind: str, limits: Limits) -> str:
    if kind == DATE:
        return f"dates to the {limits.date}"
    if kind == POSTCODE:
        return f"postcodes of {limits.postcode} characters"
    return f"ages up to {limits.age}, older as {limits.age + 1}+"


def _threshold(kind: str, limits: Limits):
    return {DATE: limits.date, POSTCODE: limits.postcode, AGE: limits.age}[kind]


def _measured(attribute: AttributeReport):
    found = attribute.precision
    if found.finest is None:
        return "unreadable"
    return found.as_dict()["finest"]


def _failure(attribute: AttributeReport, limits: Limits, where: str) -> str:
    found = attribute.precision
    name, what = attribute.name, _WHAT[found.kind]
    limit = bound(found.kind, limits)
    parts = []
    if found.finest is not None and found.finest > limit:
        parts.append(f"holds {what} {describe(found.kind, found.finest)}")
    if found.too_old(limits):
        parts.append(f"holds birth years that tell ages over {limits.age}")
    if found.unreadable:
        parts.append(
            f"holds {found.unreadable} value(s) the broker cannot read as {what} (their "
            "precision is unknown)"
        )
    return (
        f"{name!r} " + " and ".join(parts) + f"; {where} allows {_allowed(found.kind, limits)} "
        f"({_SOURCE}): {_REMEDY[found.kind]}"
    )


_REMEDY = {
    DATE: "the remedy generalizes them to the allowed level and masks what it cannot read",
    POSTCODE: "the remedy keeps their prefix followed by * and masks what it cannot read",
    AGE: "the remedy top-codes the older ages into one category and masks what it cannot read",
}


def remedy_steps(
    report: AnalysisReport, limits: Limits, dropped: Sequence[str] = ()
) -> tuple[Step, ...]:
    """The steps that bring every column within ``limits`` (none for a column dropped)."""
    steps = []
    for attribute in report.attributes:
        found = attribute.precision
        if attribute.name in dropped or found is None or not found.exceeds(limits):
            continue
        if found.kind == DATE:
            step = Step(attribute.name, "date_precision", {"level": limits.date})
        elif found.kind == POSTCODE:
            step = Step(attribute.name, "postcode_prefix", {"keep": limits.postcode})
        else:
            step = Step(attribute.name, "top_code", {"max_age": limits.age})
        steps.append(step.because(_reason(attribute, limits)))
    return tuple(steps)


def _reason(attribute: AttributeReport, limits: Limits) -> str:
    found = attribute.precision
    what = _WHAT[found.kind]
    told = "" if found.finest is None else f" {describe(found.kind, found.finest)}"
    return (
        f"{attribute.name} holds {what}{told}, and the rules allow {_allowed(found.kind, limits)} "
        f"({_SOURCE})"
    )

"""The rules themselves, one module per family: the gate (destination, purpose), the data rules
of one rule set, and the rules of an aggregate release.

Each family module holds its check (``check(judged) -> list[RuleResult]``), the rule-set fields
it judges (``RULES``), the paper it follows (``PAPER``), its words (each result's detail says
what was measured, what the rule set asks and what the remedy does) and its contribution to the
remedy (``k_sources(aim)``: the k it needs and why, which
:func:`broker.fsla.remedy.target_for` collects; diversity's ``l_needed``, Mmaq's
``index_bound``). Which rule sets apply and how they combine is :mod:`broker.fsla.evaluate`,
each rule's stricter direction :mod:`broker.fsla.stricter`.

- :mod:`~broker.fsla.rules.person`: a declared person key;
- :mod:`~broker.fsla.rules.precision`: dates, postcodes and ages (HIPAA's Safe Harbor);
- :mod:`~broker.fsla.rules.forbidden`: attributes a record forbids;
- :mod:`~broker.fsla.rules.identifiers`: attributes that identify on their own;
- :mod:`~broker.fsla.rules.mmaq`: Mmaq of each attribute and of the quasi-identifiers;
- :mod:`~broker.fsla.rules.k_anonymity`: k, in people;
- :mod:`~broker.fsla.rules.risk`: journalist and marketer risk, population uniqueness, expected
  re-identifications;
- :mod:`~broker.fsla.rules.suda`: DIS-SUDA of the riskiest record (special uniques);
- :mod:`~broker.fsla.rules.diversity`: l, recursive (c, l), alpha;
- :mod:`~broker.fsla.rules.closeness`: t, beta-likeness, delta-disclosure.

The linkage rule (an earlier release joined) is :mod:`broker.fsla.linkage.rule`; the gate and
aggregate releases are :mod:`~broker.fsla.rules.gate` and :mod:`~broker.fsla.rules.aggregate`.
"""

from __future__ import annotations

from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult, TransferContext
from broker.fsla.rules import (
    closeness,
    diversity,
    forbidden,
    identifiers,
    k_anonymity,
    mmaq,
    person,
    precision,
    risk,
    suda,
)
from broker.fsla.rules.aggregate import aggregate_instead, aggregate_rules
from broker.fsla.rules.base import Judged
from broker.fsla.rules.closeness import GROWING_K
from broker.fsla.rules.diversity import l_for
from broker.fsla.rules.gate import gate_rules
from broker.fsla.rules.risk import k_for
from broker.metrics.content import looks_sensitive
from broker.metrics.report import AnalysisReport

# In the order their results are listed.
FAMILIES = (
    person,
    precision,
    forbidden,
    identifiers,
    mmaq,
    k_anonymity,
    risk,
    suda,
    diversity,
    closeness,
)

__all__ = [
    "FAMILIES",
    "GROWING_K",
    "aggregate_instead",
    "aggregate_rules",
    "data_rules",
    "gate_rules",
    "k_for",
    "l_for",
]


def data_rules(
    report: AnalysisReport, context: TransferContext, scope: str, jurisdiction: str, rules_: RuleSet
) -> list[RuleResult]:
    """Every data rule ``rules_`` sets, judged on ``report``: each family's check in turn."""
    judged = Judged(report, context, scope, jurisdiction, rules_)
    results: list[RuleResult] = []
    noted = False
    for family in FAMILIES:
        if getattr(family, "SENSITIVE", False) and not noted:  # before the first such family
            results += _sensitive_declared(judged)
            noted = True
        results += family.check(judged)
    return results


def _sensitive_declared(j: Judged) -> list[RuleResult]:
    """A note (a passed rule) when the rule set judges sensitive attributes and the sender
    declared none: its l and t rules then check nothing. Undeclared columns are not let off
    (they are judged by Mmaq and k as quasi-identifiers or identifiers), but the sender likely
    forgot the `sensitive` field; the columns whose names look sensitive are named, as a guess."""
    asked = [
        name
        for family in FAMILIES
        if getattr(family, "SENSITIVE", False)
        for name in family.RULES
        if getattr(j.rules, name) is not None
    ]
    if not asked or j.context.sensitive:
        return []
    guessed = looks_sensitive([a.name for a in j.report.attributes])
    hint = (
        f"columns that look sensitive (a guess from their names): {', '.join(guessed)}"
        if guessed
        else "no column's name looks sensitive"
    )
    return [
        j.result(
            "sensitive_declared",
            True,
            f"{j.where} sets {', '.join(asked)} for sensitive attributes, and the request "
            f"declares none in the `sensitive` form field, so they check nothing; {hint}",
            ", ".join(guessed) or None,
            "none declared",
            ", ".join(asked),
        )
    ]

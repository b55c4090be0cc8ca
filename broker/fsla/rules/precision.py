"""Identifying precision (dates, postcodes, ages): the family's check, remedy and words live in
:mod:`broker.fsla.precision`, after HIPAA's Safe Harbor."""

from __future__ import annotations

from broker.fsla.precision import _SOURCE, FIELDS, precision_rules
from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Judged

RULES = FIELDS
PAPER = _SOURCE


def check(j: Judged) -> list[RuleResult]:
    return precision_rules(j.report, j.scope, j.jurisdiction, j.rules)

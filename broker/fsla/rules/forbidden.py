"""Forbidden attributes: names a record never lets pass, compared folded (case, look-alike
letters, invisible characters: :func:`broker.columns.names.attribute_key`). The remedy drops
them."""

from __future__ import annotations

from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Judged

RULES = ("forbidden_attributes",)
PAPER = None  # a record's own list


def check(j: Judged) -> list[RuleResult]:
    if not j.rules.forbidden_attributes:
        return []
    return j.per_attribute(
        "forbidden_attribute",
        [(a, a.name) for a in j.report.attributes if j.rules.forbids(a.name)],
        lambda a: f"{j.where} forbids the attribute {a.name!r} from passing: drop it",
        ", ".join(j.rules.forbidden_attributes),
        f"no attribute forbidden by {j.where} is present",
    )

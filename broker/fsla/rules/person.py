"""Person key: k counts people, not rows, when the sender names each row's person (a
pseudonymous column that never leaves); one person's rows sent several times, or repeated
visits, then cannot pass for several people (El Emam and Dankar 2008 count individuals, not
records, in *Protecting privacy using k-anonymity*)."""

from __future__ import annotations

from broker.fsla.results import RuleResult
from broker.fsla.rules.base import Judged

RULES = ("require_person_key",)
PAPER = "El Emam and Dankar 2008, Protecting privacy using k-anonymity (JAMIA 15(5))"


def check(j: Judged) -> list[RuleResult]:
    if not j.rules.require_person_key:
        return []
    key = j.context.person_key
    declared = key is not None
    return [
        j.result(
            "person_key_declared",
            declared,
            f"k counts people by the declared person key {key!r}"
            if declared
            else f"{j.where} requires a person key: send again with person_key naming the "
            "column that identifies each row's person (pseudonymous; it never leaves)",
            key,
            fixable=False,
        )
    ]

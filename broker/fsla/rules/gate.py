"""The gate: may data go to this destination, for this purpose, at all (no anonymization
helps when not)."""

from __future__ import annotations

from broker.fsla.models import FSLARecord
from broker.fsla.results import EXPORT, IMPORT, RuleResult, TransferContext


def gate_rules(
    context: TransferContext, source: FSLARecord, destination: FSLARecord
) -> list[RuleResult]:
    to = context.destination_jurisdiction
    rules = [
        RuleResult(
            "destination_allowed",
            EXPORT,
            source.jurisdiction,
            passed=source.allows_destination(to),
            measured=to,
            threshold=", ".join(source.allowed_destinations) or "domestic only",
            detail=(
                f"{source.jurisdiction} allows transfers to {to}"
                if source.allows_destination(to)
                else f"{source.jurisdiction} does not allow personal data to go to {to}"
            ),
            fixable=False,
        )
    ]
    checks = [(EXPORT, source)] + ([(IMPORT, destination)] if context.cross_border else [])
    for scope, record in checks:
        allowed = record.allows_purpose(context.purpose)
        rules.append(
            RuleResult(
                "purpose_allowed",
                scope,
                record.jurisdiction,
                passed=allowed,
                measured=context.purpose,
                threshold=", ".join(record.allowed_purposes),
                detail=(
                    f"{record.jurisdiction} allows the purpose {context.purpose!r}"
                    if allowed
                    else f"{record.jurisdiction} does not allow the purpose {context.purpose!r}"
                ),
                fixable=False,
            )
        )
    return rules

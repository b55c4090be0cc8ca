"""The one identifier detector: what in a piece of text, or a column's values, identifies people.

Pure: it imports nothing of the web, the database or the rest of the broker. Everything that
leaves the broker or is published through it is searched with it: a dataset's values (the
report's content classification), its column names, a catalog entry's text, the keys and labels
of aggregate releases and the paths of references (through
:func:`broker.identifiers.short_text.identifier_in_text`). What it finds, how each kind is checked
and how well (recall per kind and disguise, false positives on ordinary data) is explained in
docs/explanations/identifier-detection.md.
"""

from broker.identifiers.numbers import (
    EMAIL,
    IBAN,
    MEDIUM,
    NATIONAL_ID,
    PASSPORT,
    PAYMENT_CARD,
    PERSON_NAME,
    PHONE,
    STRONG,
    WEAK,
)
from broker.identifiers.patterns import DEVICE, LOCATION, VEHICLE
from broker.identifiers.scan import (
    DEFAULT_REGIONS,
    BudgetSpent,
    Finding,
    ScanBudget,
    column_verdict,
    scan,
    verdict,
)

__all__ = [
    "DEFAULT_REGIONS",
    "DEVICE",
    "EMAIL",
    "IBAN",
    "LOCATION",
    "MEDIUM",
    "NATIONAL_ID",
    "PASSPORT",
    "PAYMENT_CARD",
    "PERSON_NAME",
    "PHONE",
    "STRONG",
    "VEHICLE",
    "WEAK",
    "BudgetSpent",
    "Finding",
    "ScanBudget",
    "column_verdict",
    "scan",
    "verdict",
]

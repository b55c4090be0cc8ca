"""Warnings about a valid F-SLA record: what is allowed but probably not meant.

A record that fails validation is refused; these are the mistakes validation lets through, found
by reading the record beside the federation's other records (pure: records in, warnings out):

- ``unknown-destination``: ``allowed_destinations`` names a code with no F-SLA record, so no
  member can be there yet (a typo such as ``FRA`` for ``FR`` reads the same way);
- ``duplicate-purpose``, ``duplicate-attribute``: two spellings of one purpose, or of one
  forbidden attribute, in one list. Both are compared without regard to case (attributes also
  without regard to look-alike letters, :func:`broker.columns.names.attribute_key`), so the second
  spelling adds nothing and suggests a different meaning was intended;
- ``attribute-spelling``: one forbidden attribute spelled differently in two rule sets;
- ``no-common-purpose``: a destination this record allows whose own record allows none of this
  record's purposes, or a record allowing this one as a destination with no purpose in common.
  Cross-border, both records' purposes are checked, so every such transfer is refused;
- ``identifiers-never-pass``: ``identifiers_allowed`` is true but ``max_mmaq_index`` is below 1.
  An identifier (every value distinct) has Mmaq index 1, so it fails that rule anyway;
- ``domestic-stricter``: ``domestic_export`` asks more than ``cross_border_export`` on the same
  rule, so data leaves the country more easily than it moves inside it;
- ``unused-cross-border-rules``: ``cross_border_export`` sets rules but no destination is
  allowed, so they never apply;
- ``suda-default-fraction``: a rule set bounds ``max_dis_suda`` without ``sampling_fraction``,
  so DIS-SUDA is judged at sdcMicro's default 0.01, which says the data is a 1 % sample: a
  larger share gives higher scores.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from broker.columns.names import attribute_key
from broker.fsla.models import ANY_DESTINATION, FSLARecord, RuleSet
from broker.fsla.stricter import HIGHER, LOWER, NESTED, at_least_as_strict, declaration, shown

RULE_SETS = ("domestic_export", "cross_border_export", "import_rules")


class WarningCode(StrEnum):
    """The kinds of warning, as listed in the module docstring."""

    UNKNOWN_DESTINATION = "unknown-destination"
    DUPLICATE_PURPOSE = "duplicate-purpose"
    DUPLICATE_ATTRIBUTE = "duplicate-attribute"
    ATTRIBUTE_SPELLING = "attribute-spelling"
    NO_COMMON_PURPOSE = "no-common-purpose"
    IDENTIFIERS_NEVER_PASS = "identifiers-never-pass"
    DOMESTIC_STRICTER = "domestic-stricter"
    UNUSED_CROSS_BORDER_RULES = "unused-cross-border-rules"
    SUDA_DEFAULT_FRACTION = "suda-default-fraction"


@dataclass(frozen=True)
class PolicyWarning:
    code: WarningCode
    path: str
    message: str


def warnings(record: FSLARecord, others: Iterable[FSLARecord]) -> list[PolicyWarning]:
    """Everything worth a second look in ``record``, read beside the federation's ``others``."""
    known = {r.jurisdiction: r for r in others if r.jurisdiction != record.jurisdiction}
    found: list[PolicyWarning] = []
    for i, code in enumerate(record.allowed_destinations):
        if code != ANY_DESTINATION and code not in known:
            found.append(
                PolicyWarning(
                    WarningCode.UNKNOWN_DESTINATION,
                    f"allowed_destinations[{i}]",
                    f"{code!r} has no F-SLA record in this federation: no member can be there "
                    f"(known codes: {', '.join(sorted(known)) or 'none'})",
                )
            )
    found += _duplicates("allowed_purposes", record.allowed_purposes, str.casefold, "purpose")
    found += _attribute_spellings(record)
    found += _common_purposes(record, known)
    for name in RULE_SETS:
        rules: RuleSet = getattr(record, name)
        ceiling = rules.max_mmaq_index
        if rules.identifiers_allowed and ceiling is not None and ceiling < 1:
            found.append(
                PolicyWarning(
                    WarningCode.IDENTIFIERS_NEVER_PASS,
                    f"{name}.identifiers_allowed",
                    f"{name} allows identifiers, but its max_mmaq_index {ceiling:g} "
                    "refuses every identifier (Mmaq index 1)",
                )
            )
        if rules.max_dis_suda is not None and rules.sampling_fraction is None:
            found.append(
                PolicyWarning(
                    WarningCode.SUDA_DEFAULT_FRACTION,
                    f"{name}.max_dis_suda",
                    f"{name} bounds DIS-SUDA without sampling_fraction: it is judged as if the "
                    "data were a 1 % sample (sdcMicro's default 0.01); a larger share gives "
                    "higher scores, so state the share the data is of its population",
                )
            )
    found += _domestic_stricter(record)
    if not record.allowed_destinations and record.cross_border_export != RuleSet():
        found.append(
            PolicyWarning(
                WarningCode.UNUSED_CROSS_BORDER_RULES,
                "cross_border_export",
                "cross_border_export sets rules, but allowed_destinations is empty: no data "
                "leaves, so they never apply",
            )
        )
    return found


def _duplicates(path: str, values: list[str], key, what: str) -> list[PolicyWarning]:
    seen: dict[str, tuple[int, str]] = {}
    found = []
    for i, value in enumerate(values):
        k = key(value)
        if k in seen:
            first_i, first = seen[k]
            found.append(
                PolicyWarning(
                    WarningCode(f"duplicate-{what}"),
                    f"{path}[{i}]",
                    f"{value!r} and {first!r} ({path}[{first_i}]) are one {what} (compared "
                    "without regard to case): keep one spelling",
                )
            )
        else:
            seen[k] = (i, value)
    return found


def _attribute_spellings(record: FSLARecord) -> list[PolicyWarning]:
    found: list[PolicyWarning] = []
    spelled: dict[str, tuple[str, str]] = {}  # key -> (first spelling, where)
    for name in RULE_SETS:
        path = f"{name}.forbidden_attributes"
        names = getattr(record, name).forbidden_attributes
        found += _duplicates(path, names, attribute_key, "attribute")
        for i, attribute in enumerate(names):
            first = spelled.setdefault(attribute_key(attribute), (attribute, path))
            if first[0] != attribute and first[1] != path:
                found.append(
                    PolicyWarning(
                        WarningCode.ATTRIBUTE_SPELLING,
                        f"{path}[{i}]",
                        f"{attribute!r} is spelled {first[0]!r} in {first[1]}: the same "
                        "attribute for the broker; one spelling reads better",
                    )
                )
    return found


def _common_purposes(record: FSLARecord, known: dict[str, FSLARecord]) -> list[PolicyWarning]:
    ours = {p.casefold() for p in record.allowed_purposes}
    found = []
    for i, code in enumerate(record.allowed_destinations):
        other = known.get(code)
        if other is not None and not ours & {p.casefold() for p in other.allowed_purposes}:
            found.append(
                PolicyWarning(
                    WarningCode.NO_COMMON_PURPOSE,
                    f"allowed_destinations[{i}]",
                    f"{code} allows none of the purposes {', '.join(record.allowed_purposes)} "
                    f"(it allows {', '.join(other.allowed_purposes)}): every transfer to "
                    f"{code} would be refused",
                )
            )
    for code, other in sorted(known.items()):
        sends_here = record.jurisdiction in other.allowed_destinations
        if sends_here and not ours & {p.casefold() for p in other.allowed_purposes}:
            found.append(
                PolicyWarning(
                    WarningCode.NO_COMMON_PURPOSE,
                    "allowed_purposes",
                    f"{code} allows sending to {record.jurisdiction} for "
                    f"{', '.join(other.allowed_purposes)}, none of which this record allows: "
                    f"every transfer from {code} would be refused",
                )
            )
    return found


def _domestic_stricter(record: FSLARecord) -> list[PolicyWarning]:
    """Every threshold ``domestic_export`` sets where it asks more than
    ``cross_border_export``, in the direction each rule declares (:mod:`broker.fsla.stricter`).
    Permissions and prohibitions are left out: a record may well allow less at home (no
    aggregate releases, more forbidden attributes) for reasons of its own."""
    if not record.allowed_destinations:
        return []
    home, abroad = record.domestic_export, record.cross_border_export
    found = []
    thresholds = [
        rule
        for rule in RuleSet.model_fields
        if declaration(RuleSet, rule)["stricter"] in (HIGHER, LOWER, NESTED)
    ]
    for rule in thresholds:
        inside, outside = getattr(home, rule), getattr(abroad, rule)
        if inside is None or at_least_as_strict(RuleSet, rule, outside, inside):
            continue
        found.append(
            PolicyWarning(
                WarningCode.DOMESTIC_STRICTER,
                f"domestic_export.{rule}",
                f"domestic_export.{rule} {shown(RuleSet, rule, inside)} is stricter than "
                f"cross_border_export.{rule} {shown(RuleSet, rule, outside)}: data would "
                "leave the country more easily than it moves inside it",
            )
        )
    return found

"""A decision in a few lines: one entry per problem, merged across rules and jurisdictions.

A decision's ``rules`` list every rule of every rule set that applies, so one column that is an
identifier fails ``no_identifiers`` at the source and at the destination and ``max_mmaq_index``
besides: three results, one problem. :func:`summarize` groups the failed results by what fixes
them, and says for each what to do next:

- a column the remedy drops (a direct identifier, a forbidden attribute, a sensitive column that
  singles people out): one entry, "drop column X";
- the quasi-identifiers together (k, the risks, the combination's Mmaq, and l, t and the other
  models of the sensitive attributes, which the same k-anonymization fixes), with every single
  column among them that fails a per-attribute rule: one entry, "generalize ... or send
  anonymize=auto";
- another column over a per-attribute bound (Mmaq, or the precision of its dates, postcodes or
  ages): one entry, "generalize X";
- each rule no anonymization fixes (destination, purpose, person key, no remedy, the utility
  floor): one entry, merged across jurisdictions.

Pure: it reads the stored form of a decision (its rules and remedy, read with their stored
models, :mod:`broker.fsla.stored`), so a decision recorded before this module existed is
summarized the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from broker.fsla.models import RuleSet
from broker.fsla.stored import StoredRemedy, StoredRule
from broker.fsla.stricter import HIGHER, LOWER, at_least_as_strict, declaration

PROBLEM, NOTE = "problem", "note"

# Rules on single attributes: the attribute's own figures.
PER_ATTRIBUTE = frozenset(
    {
        "forbidden_attribute",
        "no_identifiers",
        "min_log10_mmaq",
        "max_mmaq_index",
        "max_date_precision",
        "max_postcode_prefix",
        "max_age",
    }
)
# Rules no anonymization fixes: what to do instead.
_GATES = {
    "destination_known": "name a registered member as destination (GET /v1/members lists them)",
    "destination_active": "wait until the destination is reactivated, or ask the federation's "
    "admins",
    "destination_not_source": "name another member as destination",
    "destination_allowed": "send to a jurisdiction the source allows",
    "purpose_allowed": "use a purpose every side allows",
    "person_key_declared": "send again with person_key naming the column that identifies each "
    "row's person (pseudonymous; it never leaves)",
    "remedy_found": "anonymize the data yourself, or send less of it (fewer columns, coarser "
    "values)",
    "min_utility_percent": "accept a lower floor (min_utility_percent on the request, if the "
    "rule sets allow it), send more rows (classes fill with less generalization), or fewer "
    "quasi-identifiers",
    "sensitive_declared": "declare the sensitive columns in the `sensitive` form field so that "
    "l and t are checked",
    "aggregate_release_possible": "if statistics are what the destination needs, send the same "
    "data with kind=aggregate and the queries (counts, histograms, sums, means, quantiles)",
    "aggregate_allowed": "send the data itself (kind=microdata), measured and judged as rows",
    "max_epsilon_per_release": "ask less epsilon (fewer queries, or each with more noise)",
    "max_delta_per_release": "declare each histogram's keys (no delta is then needed), or ask a "
    "smaller delta",
    "epsilon_budget": "wait until earlier releases leave the budget's window, or ask for less",
    "source_epsilon_budget": "wait until earlier releases leave the budget's window, or ask for "
    "less",
}
_NOTES = frozenset({"sensitive_declared", "aggregate_release_possible"})
_LABELS = {
    "forbidden_attribute": "forbidden",
    "no_identifiers": "identifies people",
    "min_log10_mmaq": "Mmaq too low",
    "max_mmaq_index": "Mmaq index too high",
    "max_date_precision": "dates too precise",
    "max_postcode_prefix": "postcodes too long",
    "max_age": "ages over the top code",
}


@dataclass
class _Group:
    kind: str
    key: str
    attributes: list[str] = field(default_factory=list)
    rules: list[StoredRule] = field(default_factory=list)

    def add(self, rule: StoredRule) -> None:
        self.rules.append(rule)
        for name in _names(rule.attribute):
            if name not in self.attributes:
                self.attributes.append(name)

    def where(self) -> list[str]:
        return _unique(f"{r.jurisdiction} ({r.scope})" for r in self.rules)

    def rule_names(self) -> list[str]:
        return _unique(r.rule for r in self.rules)


def summarize(
    status: str,
    rules: Sequence[StoredRule | Mapping[str, Any]],
    remedy: StoredRemedy | Mapping[str, Any] | None,
    quasi_identifiers: Sequence[str] = (),
    anonymize: str = "none",
) -> list[dict[str, Any]]:
    """The decision's problems, one entry each, with what to do next.

    Parameters
    ----------
    status : str
        approved, anonymization_required or rejected.
    rules : sequence of StoredRule or mapping
        The decision's rule results as stored (``rule, scope, jurisdiction, attribute, passed,
        measured, threshold, detail``), read with :class:`~broker.fsla.stored.StoredRule`.
    remedy : StoredRemedy, mapping or None
        The decision's remedy as stored, read with :class:`~broker.fsla.stored.StoredRemedy`.
    quasi_identifiers : sequence of str
        The quasi-identifiers the decision used.
    anonymize : str
        What the request asked (``auto`` or ``none``).

    Returns
    -------
    list of dict
        ``kind`` (problem or note), ``problem``, ``do``, ``attributes``, ``rules``,
        ``jurisdictions``: one entry per problem, problems first.

    Examples
    --------
    >>> rules = [
    ...     {"rule": "no_identifiers", "scope": s, "jurisdiction": j, "attribute": "Name",
    ...      "passed": False, "measured": "identifier", "threshold": "no identifier", "detail": ""}
    ...     for s, j in (("export", "SN"), ("import", "FR"))]
    >>> drop = {"column": "Name", "method": "drop", "parameters": {}}
    >>> remedy = {"verified": True, "steps": [drop]}
    >>> [entry] = summarize("anonymization_required", rules, remedy)
    >>> entry["do"].split(";")[0]
    'drop column Name: it identifies people, which SN (export) and FR (import) forbid'
    >>> entry["rules"], entry["jurisdictions"]
    (['no_identifiers'], ['SN (export)', 'FR (import)'])
    """
    rules = [StoredRule.of(rule) for rule in rules]
    remedy = StoredRemedy.of(remedy) or StoredRemedy(verified=False, steps=[])
    notes = [_note(r) for r in rules if r.passed and r.rule in _NOTES]
    if remedy.applied:
        before = remedy.before.rules if remedy.before else []
        # The notes of the data as sent: the anonymized data may have lost the columns named.
        notes = [_note(r) for r in before if r.passed and r.rule == "sensitive_declared"]
        return [
            _applied(before, remedy, quasi_identifiers),
            *_merge_notes(notes),
        ]
    failed = [r for r in rules if not r.passed]
    if not failed:
        done = {
            "kind": NOTE,
            "problem": None,
            "do": "nothing: every rule passes"
            + (", and the data is delivered" if status == "approved" else ""),
            "attributes": [],
            "rules": [],
            "jurisdictions": [],
        }
        return [done, *_merge_notes(notes)]
    groups = _groups(failed, remedy, quasi_identifiers)
    auto = "send anonymize=auto" if anonymize != "auto" and remedy.verified else None
    if anonymize == "auto" and status == "anonymization_required":
        auto = "apply the remedy's steps yourself (not every rule set lets the broker anonymize)"
    entries = [_entry(group, remedy, auto) for group in groups.values()]
    entries.sort(key=lambda entry: entry["kind"] != "gate")
    for entry in entries:
        entry["kind"] = PROBLEM
    return [*entries, *_merge_notes(notes)]


def _groups(
    failed: Sequence[StoredRule],
    remedy: StoredRemedy,
    quasi_identifiers: Sequence[str],
) -> dict[tuple[str, str], _Group]:
    dropped = {s.column for s in remedy.steps if s.method == "drop"}
    quasi = set(quasi_identifiers)
    for rule in failed:
        names = _names(rule.attribute)
        if rule.rule == "min_k" and len(names) > 1:
            quasi.update(names)
    groups: dict[tuple[str, str], _Group] = {}

    def group(kind: str, key: str) -> _Group:
        return groups.setdefault((kind, key), _Group(kind, key))

    for rule in failed:
        names = _names(rule.attribute)
        if rule.rule in _GATES:
            group("gate", rule.rule).add(rule)
        elif len(names) == 1 and names[0] in dropped:
            group("drop", names[0]).add(rule)
        elif rule.rule in PER_ATTRIBUTE and names and names[0] not in quasi:
            group("generalize", names[0]).add(rule)
        else:
            group("anonymity", "").add(rule)
    return groups


def _entry(group: _Group, remedy: StoredRemedy, auto: str | None) -> dict[str, Any]:
    where = group.where()
    places = _and(where)
    or_auto = f"; or {auto}" if auto else ""
    if group.kind == "gate":
        first = group.rules[0]
        problem = "; ".join(_unique(r.detail for r in group.rules))
        do = _GATES[first.rule]
        if first.rule in ("destination_allowed", "purpose_allowed"):
            allowed = _unique(str(r.threshold) for r in group.rules if r.threshold)
            do += f" ({'; '.join(allowed)})" if allowed else ""
        kind = "gate"
    elif group.kind == "drop":
        name = group.key
        why = _why_drop(group)
        problem = f"{name}: " + ", ".join(_labels(group)) + f" ({places})"
        do = f"drop column {name}: {why}{or_auto}"
        kind = "data"
    elif group.kind == "generalize":
        name = group.key
        problem = f"{name}: " + ", ".join(_labels(group)) + f" ({places})"
        do = f"generalize {name} (coarser values) or drop it{or_auto}"
        kind = "data"
    else:
        problem = _anonymity_problem(group) + f" ({places})"
        qis = _anonymized_columns(group, remedy)
        k = _remedy_k(remedy)
        how = f"k-anonymize them with k = {k}" if k else "k-anonymize them"
        do = f"generalize {_and(qis)} ({how}){or_auto}"
        kind = "data"
    return {
        "kind": kind,
        "problem": problem,
        "do": do,
        "attributes": group.attributes,
        "rules": group.rule_names(),
        "jurisdictions": where,
    }


def _applied(
    before: Sequence[StoredRule], remedy: StoredRemedy, quasi_identifiers
) -> dict[str, Any]:
    failed = [r for r in before if not r.passed]
    groups = _groups(failed, remedy, quasi_identifiers) if failed else {}
    fixed = "; ".join(_entry(g, remedy, None)["problem"] for g in groups.values())
    kept = remedy.information_loss.utility_percent if remedy.information_loss else None
    figure = f"; {kept:.1f} % of the information is kept" if kept is not None else ""
    return {
        "kind": NOTE,
        "problem": f"the data as sent failed: {fixed}" if fixed else None,
        "do": "nothing: the broker anonymized the data (see remedy.steps) and delivers only the "
        f"result, measured again{figure}",
        "attributes": _unique(a for g in groups.values() for a in g.attributes),
        "rules": _unique(r for g in groups.values() for r in g.rule_names()),
        "jurisdictions": _unique(w for g in groups.values() for w in g.where()),
    }


def _note(rule: StoredRule) -> dict[str, Any]:
    return {
        "kind": NOTE,
        "problem": rule.detail,
        "do": _GATES[rule.rule],
        "attributes": _names(rule.attribute),
        "rules": [rule.rule],
        "jurisdictions": [f"{rule.jurisdiction} ({rule.scope})"],
    }


def _merge_notes(notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same note from several rule sets is one note naming them all."""
    merged: dict[str, dict[str, Any]] = {}
    for note in notes:
        key = note["rules"][0]
        if key in merged:
            merged[key]["jurisdictions"] = _unique(
                [*merged[key]["jurisdictions"], *note["jurisdictions"]]
            )
        else:
            merged[key] = note
    return list(merged.values())


def _why_drop(group: _Group) -> str:
    rules = group.rule_names()
    forbidding = _unique(
        f"{r.jurisdiction} ({r.scope})" for r in group.rules if r.rule == "forbidden_attribute"
    )
    identifying = _unique(
        f"{r.jurisdiction} ({r.scope})" for r in group.rules if r.rule == "no_identifiers"
    )
    parts = []
    if identifying:
        parts.append(f"it identifies people, which {_and(identifying)} {_forbid(identifying)}")
    if forbidding:
        parts.append(f"{_and(forbidding)} {_forbid(forbidding)} the attribute itself")
    if not parts and ("min_l" in rules or "max_t" in rules):
        parts.append("the sensitive values cannot be protected otherwise")
    return "; ".join(parts) or "no generalization of it passes"


def _forbid(who: Sequence[str]) -> str:
    return "forbids" if len(who) == 1 else "forbid"


def _labels(group: _Group) -> list[str]:
    return _unique(_LABELS.get(r.rule, r.rule) for r in group.rules)


_ANONYMITY = {
    "min_k": "k",
    "max_journalist_risk": "journalist risk",
    "max_marketer_risk": "marketer risk",
    "qi_max_mmaq_index": "combined Mmaq index",
    "max_population_uniqueness": "population uniqueness",
    "max_expected_reidentifications": "expected re-identifications",
    "max_dis_suda": "DIS-SUDA of the riskiest record",
    "min_l": "l",
    "max_t": "t",
    "max_alpha": "alpha",
}


def _bound(rule: str) -> str:
    """How the measured figure must stand to the threshold, from the rule's declared stricter
    direction (:mod:`broker.fsla.stricter`)."""
    if rule not in RuleSet.model_fields:
        return "within"
    return {HIGHER: "at least", LOWER: "at most"}.get(
        declaration(RuleSet, rule)["stricter"], "within"
    )


def _anonymity_problem(group: _Group) -> str:
    """``Age, Gender single people out: k = 1 (needs at least 3); Disease: l = 1 ...``."""
    parts: dict[str, list[str]] = {}
    seen: dict[tuple[str, str], StoredRule] = {}
    for rule in group.rules:
        key = (rule.rule, rule.attribute or "")
        earlier = seen.get(key)
        if earlier is None or _stricter(rule, earlier):
            seen[key] = rule
    for (name, attribute), rule in seen.items():
        label, bound = _ANONYMITY.get(name, name), _bound(name)
        measured = _figure(rule.measured)
        text = f"{label} = {measured} (needs {bound} {_figure(rule.threshold)})"
        if name in PER_ATTRIBUTE:
            text = _LABELS[name]
        parts.setdefault(attribute or "the table", []).append(text)
    return "; ".join(f"{who}: {', '.join(_unique(texts))}" for who, texts in parts.items())


def _stricter(rule: StoredRule, other: StoredRule) -> bool:
    """Whether ``rule``'s threshold is the stricter of the two (the one the data must meet)."""
    a, b = rule.threshold, other.threshold
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return False
    name = rule.rule
    if _bound(name) == "within":
        return False
    return a != b and at_least_as_strict(RuleSet, name, a, b)


def _anonymized_columns(group: _Group, remedy: StoredRemedy) -> list[str]:
    for step in remedy.steps:
        names = step.parameters.get("quasi_identifiers")
        if names:
            return list(names)
    quasi = [a for r in group.rules if r.rule == "min_k" for a in _names(r.attribute)]
    return _unique(quasi) or group.attributes


def _remedy_k(remedy: StoredRemedy) -> int | None:
    for step in remedy.steps:
        k = step.parameters.get("k")
        if k:
            return k
    return None


def _figure(value: Any) -> str:
    if value is None:  # a figure the rule could not measure (SUDA past its bounds)
        return "not measured"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _names(attribute: str | None) -> list[str]:
    return [part.strip() for part in (attribute or "").split(",") if part.strip()]


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]

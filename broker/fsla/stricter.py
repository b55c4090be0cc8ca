"""Stricter wins: each F-SLA rule declares which of two of its values asks more, and everything
that combines or compares rules reads that declaration, nowhere else.

A field of a rule set (:class:`broker.fsla.models.RuleSet`) declares its direction in its
``json_schema_extra`` as ``{"stricter": ...}`` (it also shows in the JSON schema):

- ``higher``: a larger value asks more (a minimum: ``min_k``, ``linkage_lookback_days``; and
  ``sampling_fraction``: the larger the share, the likelier a sample unique is unique in the
  population, so every population estimate grows with it);
- ``lower``: a smaller value asks more (a maximum: ``max_t``, ``max_retention_days``); with
  ``order``, values rank in that order (``max_date_precision``: year, then month, then day);
- ``false``: a permission (``identifiers_allowed``): refusing it asks more;
- ``true``: an obligation (``require_person_key``): requiring it asks more;
- ``union``: a list of prohibitions (``forbidden_attributes``, names compared by
  :func:`broker.columns.names.attribute_key`): each one more asks more;
- ``nested``: a model whose own fields declare theirs (``recursive_c_l``: a smaller c and a
  larger l).

An empty value (None) sets no rule, the loosest, unless the field declares
``"empty": "strictest"``: an empty ``max_delta_per_release`` allows no delta at all, an empty
``budget_period_days`` counts for ever.

What reads the declarations: :func:`combine` (the strictest combination of the rule sets that
apply to a transfer, :func:`broker.fsla.evaluate.combine`), :func:`looser` (how one rule set
asks less than another: an agreement's terms against the records', a counter-offer against the
offer, :meth:`broker.fsla.offers.Terms.weaker_than`) and the policy linter's warning that a
record asks more at home than abroad (:mod:`broker.fsla.lint`). A field that declares no
direction fails ``tests/fsla/test_stricter.py``, so a new rule cannot be combined the loose way
by omission; the property tests there check, on real data, that passing the combination of two
rule sets passes each.

An empty ``budget_period_days`` is the strictest window only when a budget is set; the
combination keeps each rule set's budgets with their own windows besides
(:class:`broker.fsla.results.Requirements`), and so the expected re-identification bounds,
each with its own sampling fraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, get_args

from pydantic import BaseModel

from broker.columns.names import attribute_key

HIGHER, LOWER, TRUE, FALSE, UNION, NESTED = "higher", "lower", "true", "false", "union", "nested"
DIRECTIONS = (HIGHER, LOWER, TRUE, FALSE, UNION, NESTED)

M = TypeVar("M", bound=BaseModel)


def declaration(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The field's declaration: ``{"stricter": direction, ...}``; KeyError when it has none."""
    extra = model.model_fields[name].json_schema_extra
    if not isinstance(extra, dict) or extra.get("stricter") not in DIRECTIONS:
        raise KeyError(f"{model.__name__}.{name} declares no stricter direction")
    return extra


def _nested_model(model: type[BaseModel], name: str) -> type[BaseModel]:
    annotation = model.model_fields[name].annotation
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    raise TypeError(f"{model.__name__}.{name} is declared nested but holds no model")


def _rank(declared: dict[str, Any], value: Any) -> Any:
    order = declared.get("order")
    return value if order is None else list(order).index(value)


def strictest(model: type[BaseModel], name: str, values: Sequence[Any]) -> Any:
    """The strictest of ``values`` of the field ``name`` (each a value of that field)."""
    declared = declaration(model, name)
    direction = declared["stricter"]
    if direction == FALSE:
        return all(values)
    if direction == TRUE:
        return any(values)
    if direction == UNION:
        seen: dict[str, str] = {}
        for names in values:
            for item in names:
                seen.setdefault(attribute_key(item), item)
        return list(seen.values())
    present = [v for v in values if v is not None]
    if not present or (declared.get("empty") == "strictest" and len(present) < len(values)):
        return None
    if direction == NESTED:
        return combine(_nested_model(model, name), present)
    pick = max if direction == HIGHER else min
    return pick(present, key=lambda v: _rank(declared, v))


def at_least_as_strict(model: type[BaseModel], name: str, value: Any, other: Any) -> bool:
    """Whether ``value`` of the field ``name`` asks at least as much as ``other``."""
    declared = declaration(model, name)
    direction = declared["stricter"]
    if direction == FALSE:
        return not value or bool(other)
    if direction == TRUE:
        return bool(value) or not other
    if direction == UNION:
        return {attribute_key(v) for v in value} >= {attribute_key(v) for v in other}
    if value is None or other is None:
        empty_strictest = declared.get("empty") == "strictest"
        return (value is None) == empty_strictest or (other is None) != empty_strictest
    if direction == NESTED:
        inner = _nested_model(model, name)
        return not looser(inner, value, other)
    mine, theirs = _rank(declared, value), _rank(declared, other)
    return mine >= theirs if direction == HIGHER else mine <= theirs


def combine(model: type[M], items: Sequence[M]) -> M:
    """The strictest combination of ``items``, field by field, as each field declares; no items
    give the model's defaults."""
    if not items:
        return model()
    values = {
        name: strictest(model, name, [getattr(item, name) for item in items])
        for name in model.model_fields
    }
    return model(**values)


def looser(model: type[M], mine: M, theirs: M) -> list[str]:
    """The fields in which ``mine`` asks less than ``theirs`` (empty: at least as much in all)."""
    return [
        name
        for name in model.model_fields
        if not at_least_as_strict(model, name, getattr(mine, name), getattr(theirs, name))
    ]


def shown(model: type[BaseModel], name: str, value: Any) -> str:
    """``value`` of ``name`` in words: what it allows or requires."""
    declared = declaration(model, name)
    direction = declared["stricter"]
    if direction in (TRUE, FALSE):
        return "yes" if value else "no"
    if direction == UNION:
        return ", ".join(value) or "none"
    if value is None:
        return "no limit" if declared.get("empty") != "strictest" else "none"
    if isinstance(value, BaseModel):
        return ", ".join(f"{k} = {v:g}" for k, v in value.model_dump().items())
    return f"{value:g}" if isinstance(value, float) else str(value)


def weaker(model: type[M], mine: M, theirs: M) -> list[str]:
    """:func:`looser` in words: ``min_k: 2 where at least 3 is required``."""
    need = {HIGHER: "at least ", LOWER: "at most ", UNION: "also "}
    return [
        f"{name}: {shown(model, name, getattr(mine, name))} where "
        f"{need.get(declaration(model, name)['stricter'], '')}"
        f"{shown(model, name, getattr(theirs, name))} is required"
        for name in looser(model, mine, theirs)
    ]

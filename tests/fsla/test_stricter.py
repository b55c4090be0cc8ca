"""Stricter wins, from each rule's declared direction: every field declares one (a new rule
without one fails here), the combination of rule sets asks at least as much as each, both
field by field and on real data (passing the combination passes each), and an offer's terms are
never weaker than the records they come from."""

import typing

import annotated_types
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from broker.fsla import stricter
from broker.fsla.evaluate import combine
from broker.fsla.models import FSLARecord, RecursiveDiversityRule, RuleSet
from broker.fsla.offers import Listing, Party, Summary, Terms, offer
from broker.fsla.results import TransferContext
from broker.fsla.rules import data_rules
from broker.metrics.report import ReportOptions, analyze
from broker.wire.statuses import ColumnRole, OfferKind

NAMES = ("Name", "NAME", "zip", "age", "nin", "diagnosis")


def _read_by_name(name: str) -> str | None:
    """The direction a reader expects from the rule's name alone."""
    if name.startswith("min_"):
        return stricter.HIGHER
    if name.startswith("max_"):
        return stricter.LOWER
    if name.endswith("_allowed") or name == "auto_anonymize":
        return stricter.FALSE  # a permission
    if name.startswith("require_"):
        return stricter.TRUE  # an obligation
    return None


# The fields whose names say nothing of a direction, read from their descriptions.
BY_MEANING = {
    "qi_max_mmaq_index": stricter.LOWER,
    "sampling_fraction": stricter.HIGHER,  # the larger the share, the likelier a unique is one
    "recursive_c_l": stricter.NESTED,
    "linkage_lookback_days": stricter.HIGHER,  # more earlier releases joined
    "forbidden_attributes": stricter.UNION,
    "epsilon_budget": stricter.LOWER,
    "source_epsilon_budget": stricter.LOWER,
    "budget_period_days": stricter.HIGHER,  # spending counted over a longer window
    "c": stricter.LOWER,
    "l": stricter.HIGHER,
}


@pytest.mark.parametrize(
    ("model", "name"),
    [(RuleSet, n) for n in RuleSet.model_fields]
    + [(RecursiveDiversityRule, n) for n in RecursiveDiversityRule.model_fields],
)
def test_every_rule_declares_the_direction_its_name_or_meaning_says(model, name):
    declared = stricter.declaration(model, name)["stricter"]
    assert declared == (_read_by_name(name) or BY_MEANING[name])


def test_a_rule_without_a_direction_is_refused():
    class Loose(BaseModel):
        max_something: float | None = None

    with pytest.raises(KeyError, match="declares no stricter direction"):
        stricter.combine(Loose, [Loose(), Loose(max_something=1.0)])


def _bounds(metadata) -> tuple[float | None, float | None, bool, bool]:
    low = high = None
    low_open = high_open = False
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            low = item.ge
        elif isinstance(item, annotated_types.Gt):
            low, low_open = item.gt, True
        elif isinstance(item, annotated_types.Le):
            high = item.le
        elif isinstance(item, annotated_types.Lt):
            high, high_open = item.lt, True
    return low, high, low_open, high_open


def _values(annotation, metadata) -> st.SearchStrategy:
    """Any valid value of a field, from its type and constraints (so a new field is covered)."""
    args = typing.get_args(annotation)
    if type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return st.none() | _values(inner[0], metadata)
    if typing.get_origin(annotation) is typing.Literal:
        return st.sampled_from(args)
    if annotation is bool:
        return st.booleans()
    if typing.get_origin(annotation) is list:
        return st.lists(st.sampled_from(NAMES), max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _models(annotation)
    low, high, low_open, high_open = _bounds(metadata)
    if annotation is int:
        low = 0 if low is None else int(low) + low_open
        return st.integers(low, int(high) - high_open if high is not None else 12)
    if annotation is float:
        low = -5.0 if low is None else low
        high = 5.0 if high is None else high
        return st.floats(
            low, high, exclude_min=low_open, exclude_max=high_open, allow_subnormal=False
        )
    raise AssertionError(f"no strategy for {annotation!r}: teach this test the new field")


def _models(model: type[BaseModel]) -> st.SearchStrategy:
    fields = {
        name: _values(field.annotation, field.metadata)
        for name, field in model.model_fields.items()
    }
    return st.fixed_dictionaries(fields).map(lambda values: _valid(model, values))


def _valid(model: type[BaseModel], values: dict):
    """The values as a model, the combinations validation refuses mended."""
    try:
        return model(**values)
    except ValidationError:
        if model is not RuleSet:
            raise
    if values["aggregate_releases_allowed"]:
        values["max_epsilon_per_release"] = values["max_epsilon_per_release"] or 1.0
        values["epsilon_budget"] = values["epsilon_budget"] or 3.0
    population = ("max_population_uniqueness", "max_expected_reidentifications")
    if any(values[name] is not None for name in population):
        values["sampling_fraction"] = values["sampling_fraction"] or 0.1
    return model(**values)


RULE_SETS = _models(RuleSet)


OPEN = RuleSet(identifiers_allowed=True)  # data often passes it, so each rule decides alone


def _one_rule(name: str) -> st.SearchStrategy:
    """Rule sets open but for the rule ``name`` (with what validation asks beside it)."""
    field = RuleSet.model_fields[name]
    return _values(field.annotation, field.metadata).map(
        lambda value: _valid(RuleSet, {**OPEN.model_dump(), name: value})
    )


@given(first=RULE_SETS, second=RULE_SETS)
@settings(max_examples=300, deadline=None)
def test_the_combination_asks_at_least_as_much_as_each_rule_set(first, second):
    combined = combine([first, second])
    for name in RuleSet.model_fields:
        for one in (first, second):
            assert stricter.at_least_as_strict(
                RuleSet, name, getattr(combined, name), getattr(one, name)
            ), (name, getattr(combined, name), getattr(one, name))
    assert stricter.looser(RuleSet, combined, first) == []
    again = stricter.combine(RuleSet, [first, second, combined])
    assert again == stricter.combine(RuleSet, [first, second])  # nothing stricter left to add


def test_the_combination_by_hand():
    combined = combine(
        [
            RuleSet(min_k=3, max_t=0.5, max_date_precision="month", forbidden_attributes=["NIN"]),
            RuleSet(min_k=5, max_t=0.7, max_date_precision="year", forbidden_attributes=["nin"]),
            RuleSet(identifiers_allowed=True, recursive_c_l={"c": 3, "l": 2}),
            RuleSet(recursive_c_l={"c": 4, "l": 3}, max_delta_per_release=1e-6),
        ]
    )
    assert (combined.min_k, combined.max_t, combined.max_date_precision) == (5, 0.5, "year")
    assert combined.forbidden_attributes == ["NIN"]  # one attribute, two spellings
    assert (combined.recursive_c_l.c, combined.recursive_c_l.l) == (3, 3)
    assert not combined.identifiers_allowed
    assert combined.max_delta_per_release is None  # empty: no delta at all, the strictest


# Real data: passing the combination of two rule sets passes each of them.
FRAME = pd.DataFrame(
    {
        "age": [23, 23, 35, 35, 35, 47, 47, 91, 91, 62],
        "zip": ["10230", "10230", "10231", "10231", "10231", "752*", "752*", "75011", "75011", "1"],
        "born": ["1990"] * 5 + ["1985-04"] * 3 + ["1970-01-02"] * 2,
        "diagnosis": ["flu", "hiv", "flu", "cold", "hiv", "flu", "cold", "flu", "hiv", "flu"],
    }
)


@pytest.fixture(scope="module")
def reports():
    found = []
    with_ids = FRAME.assign(nin=[f"{i:03d}" for i in range(len(FRAME))])
    for qi, frame in ((("age", "zip"), with_ids), (("age",), FRAME.head(7)), ((), FRAME.head(8))):
        report = analyze(frame, list(qi), ["diagnosis"], ReportOptions(max_combination_size=0))
        context = TransferContext("SN", "FR", "research", qi, ("diagnosis",))
        found.append((report, context))
    return found


@pytest.mark.parametrize("name", list(RuleSet.model_fields))
@given(data=st.data())
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_data_passing_the_combination_passes_each_rule_set(reports, name, data):
    first, second = data.draw(_one_rule(name)), data.draw(_one_rule(name))
    for report, context in reports:

        def passes(rule_set, report=report, context=context):
            return all(r.passed for r in data_rules(report, context, "export", "SN", rule_set))

        if passes(combine([first, second])):
            assert passes(first) and passes(second)


# Offers: the terms come from the records' combination and are never weaker than it.
LISTING = Listing(
    "provider",
    "SN",
    (("age", ColumnRole.QUASI_IDENTIFIER), ("diagnosis", ColumnRole.SENSITIVE)),
    summary=Summary(rows=10, k=2, l=2, t=0.3),
)


def _party(member: str, code: str, rules: RuleSet) -> Party:
    record = FSLARecord(
        jurisdiction=code,
        name=code,
        legal_basis="law",
        authority="authority",
        allowed_destinations=["*"],
        allowed_purposes=["research"],
        cross_border_export=rules,
        import_rules=rules,
    )
    return Party(member, code, record)


@given(first=RULE_SETS, second=RULE_SETS, retention=st.none() | st.integers(1, 400))
@settings(max_examples=200, deadline=None)
def test_an_offers_terms_are_never_weaker_than_the_records(first, second, retention):
    found = offer(
        LISTING,
        _party("provider", "SN", first),
        _party("consumer", "FR", second),
        "research",
        retention_days=retention,
    )
    if found.kind == OfferKind.REFUSED:
        return
    terms = found.terms.rule_set()
    records = combine([first, second])
    stating_nothing = Terms("research", found.terms.columns).rule_set()
    for name in RuleSet.model_fields:
        if getattr(terms, name) != getattr(stating_nothing, name):  # a rule the terms state
            assert stricter.at_least_as_strict(
                RuleSet, name, getattr(terms, name), getattr(records, name)
            ), name
    for name in ("min_k", "min_l", "max_t", "identifiers_allowed", "max_retention_days"):
        assert stricter.at_least_as_strict(
            RuleSet, name, getattr(terms, name), getattr(records, name)
        ), name
    # A counter-offer asking more is never weaker; one asking less always is.
    assert found.terms.weaker_than(found.terms) == []
    if terms.min_k is not None:
        less = Terms.of(found.terms.as_dict() | {"min_k": terms.min_k - 1 or None})
        assert any(w.startswith("min_k:") for w in less.weaker_than(found.terms))

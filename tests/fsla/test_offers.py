"""Offers from the F-SLA records alone: as is, anonymized to k/l/t, or refused, and why."""

import pytest

from broker.fsla.models import FSLARecord, RuleSet
from broker.fsla.offers import Listing, Party, Summary, Terms, offer, offers
from broker.wire.statuses import MemberStatus


def record(code: str, purposes=("research",), destinations=("*",), **rules) -> FSLARecord:
    return FSLARecord(
        jurisdiction=code,
        name=code,
        legal_basis="law",
        authority="authority",
        allowed_destinations=list(destinations),
        allowed_purposes=list(purposes),
        cross_border_export=RuleSet(**rules.get("export", {})),
        import_rules=RuleSet(**rules.get("incoming", {})),
        domestic_export=RuleSet(**rules.get("domestic", {})),
    )


SN = record(
    "SN",
    purposes=("research", "marketing"),
    export={"min_k": 3, "min_l": 2, "forbidden_attributes": ["NIN"], "max_retention_days": 365},
)
FR = record("FR", incoming={"min_k": 5, "max_t": 0.7, "max_retention_days": 90})
COLUMNS = (
    ("NIN", "other"),
    ("Name", "other"),
    ("Age", "quasi_identifier"),
    ("Gender", "quasi_identifier"),
    ("Disease", "sensitive"),
    ("patient_ref", "person_key"),
)
PROVIDER = Party("sn-hospital", "SN", SN)
CONSUMER = Party("fr-research", "FR", FR)


def listing(summary=None, purposes=()) -> Listing:
    return Listing("sn-hospital", "SN", COLUMNS, tuple(purposes), summary)


def test_the_stricter_of_export_and_import_rules_become_the_terms():
    found = offer(listing(), PROVIDER, CONSUMER, "research")
    assert found.kind == "anonymized"  # not measured: the broker cannot say it passes as is
    terms = found.terms
    assert (terms.min_k, terms.min_l, terms.max_t) == (5, 2, 0.7)
    assert terms.retention_days == 90  # the shorter of 365 (SN) and 90 (FR)
    assert terms.columns == ("Name", "Age", "Gender", "Disease")  # NIN forbidden, key never sent
    assert any("'NIN' may not leave" in r for r in found.reasons)
    assert any("person key" in r for r in found.reasons)
    assert not terms.onward_transfer and not terms.identifiers_allowed


def test_a_measured_dataset_that_meets_the_terms_is_offered_as_is():
    meets = Summary(rows=500, k=6, l=3, t=0.5, identifiers=())
    found = offer(listing(meets), PROVIDER, CONSUMER, "research", ["Age", "Gender", "Disease"])
    assert (found.kind, found.expected_utility_percent) == ("as_is", 100.0)
    for weaker in (
        Summary(rows=500, k=4, l=3, t=0.5),
        Summary(rows=500, k=6, l=1, t=0.5),
        Summary(rows=500, k=6, l=3, t=0.9),
        Summary(rows=500, k=6, l=3, t=0.5, identifiers=("Age",)),  # a QI to generalize
    ):
        assert offer(listing(weaker), PROVIDER, CONSUMER, "research").kind == "anonymized"


def test_a_measured_column_that_identifies_and_is_no_qi_or_sensitive_stays_home():
    summary = Summary(rows=9, k=1, l=1, t=0.9, identifiers=("Name", "Age", "Disease"))
    found = offer(listing(summary), PROVIDER, CONSUMER, "research")
    assert found.terms.columns == ("Age", "Gender", "Disease")
    assert any("'Name' identifies the rows" in r for r in found.reasons)


def test_expected_utility_is_read_at_the_next_measured_k_up():
    summary = Summary(rows=100, k=1, l=1, t=0.9, utility_at_k={3: 80.0, 10: 40.0})
    assert offer(listing(summary), PROVIDER, CONSUMER, "research").expected_utility_percent == 40.0
    assert summary.expected_utility(3) == 80.0
    assert summary.expected_utility(11) is None


@pytest.mark.parametrize(
    ("consumer", "purpose", "expected"),
    [
        (CONSUMER, "marketing", "FR does not allow the purpose 'marketing'"),
        (Party("fr-research", "FR", FR, MemberStatus.SUSPENDED), "research", "is suspended"),
        (Party("ke-lab", "KE", None), "research", "KE has no F-SLA record"),
        (Party("sn-hospital", "SN", SN), "research", "its own dataset"),
        (
            Party("ng-health", "NG", record("NG")),
            "research",
            None,  # allowed: SN's record allows any destination here
        ),
    ],
)
def test_refusals_say_why(consumer, purpose, expected):
    found = offer(listing(), PROVIDER, consumer, purpose)
    if expected is None:
        assert found.kind == "anonymized"
    else:
        assert found.kind == "refused" and found.terms is None
        assert any(expected in reason for reason in found.reasons), found.reasons


def test_a_destination_the_provider_does_not_allow_is_refused():
    closed = Party("sn-hospital", "SN", record("SN", destinations=("NG",)))
    found = offer(listing(), closed, CONSUMER, "research")
    assert found.kind == "refused"
    assert any("does not allow personal data to go to FR" in r for r in found.reasons)


def test_purposes_the_provider_lists_bound_the_offers():
    found = offers(listing(purposes=("research",)), PROVIDER, CONSUMER)
    assert [o.purpose for o in found] == ["research"]
    every = offers(listing(), PROVIDER, CONSUMER)  # none listed: what SN's record allows
    assert [(o.purpose, o.kind) for o in every] == [
        ("research", "anonymized"),
        ("marketing", "refused"),
    ]
    asked = offer(listing(purposes=("research",)), PROVIDER, CONSUMER, "public_health")
    assert any("not 'public_health'" in r for r in asked.reasons)


def test_asked_columns_and_retention_narrow_the_terms():
    found = offer(listing(), PROVIDER, CONSUMER, "research", ["Age", "Disease"], 30)
    assert (found.terms.columns, found.terms.retention_days) == (("Age", "Disease"), 30)
    longer = offer(listing(), PROVIDER, CONSUMER, "research", ["Age"], 1000)
    assert longer.terms.retention_days == 90  # never longer than the records allow
    unknown = offer(listing(), PROVIDER, CONSUMER, "research", ["Age", "zip"])
    assert unknown.kind == "refused" and "no column 'zip'" in unknown.reasons[0]


def test_only_the_person_key_or_forbidden_columns_asked_is_refused():
    found = offer(listing(), PROVIDER, CONSUMER, "research", ["NIN", "patient_ref"])
    assert found.kind == "refused"
    assert found.reasons[-1] == "no column the records let leave"


REQUIRED = Terms("research", ("Age", "Gender"), 3, 2, 0.7, False, 90)


@pytest.mark.parametrize(
    ("changed", "complaint"),
    [
        ({}, None),
        ({"min_k": 5, "columns": ("Age",), "retention_days": 30, "max_t": 0.5}, None),
        ({"purpose": "marketing"}, "purpose 'marketing' instead of 'research'"),
        ({"columns": ("Age", "Gender", "Name")}, "columns Name beyond those allowed"),
        ({"min_k": 2}, "min_k: 2 where at least 3 is required"),
        ({"min_l": None}, "min_l: no limit where at least 2 is required"),
        ({"max_t": 0.8}, "max_t: 0.8 where at most 0.7 is required"),
        ({"identifiers_allowed": True}, "identifiers_allowed: yes where no is required"),
        ({"retention_days": None}, "max_retention_days: no limit where at most 90 is required"),
        ({"onward_transfer": True}, None),  # the provider's to allow
    ],
)
def test_terms_may_ask_more_never_less(changed, complaint):
    asked = Terms(
        **{**REQUIRED.as_dict(), **changed, "columns": changed.get("columns", REQUIRED.columns)}
    )
    found = asked.weaker_than(REQUIRED)
    assert (found == []) if complaint is None else any(complaint in f for f in found), found


def test_the_terms_as_a_rule_set_forbid_the_columns_not_agreed():
    rules = REQUIRED.rule_set(["age", "Gender", "Name", "NIN"])
    assert (rules.min_k, rules.min_l, rules.max_t, rules.max_retention_days) == (3, 2, 0.7, 90)
    assert rules.forbidden_attributes == ["Name", "NIN"]  # "age" is Age: names compare loosely
    assert rules.auto_anonymize and not rules.identifiers_allowed
    assert Terms.of(REQUIRED.as_dict()) == REQUIRED

"""Linkage across releases: label matching, joint classes by hand, the rule, and the remedy."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.engines.base import RecodePlan
from broker.engines.pandas import PandasEngine
from broker.fsla.evaluate import combine, evaluate
from broker.fsla.linkage import (
    History,
    Release,
    assess,
    earlier_cells,
    joint_of,
    label_holds,
    linkage_rules,
    lookback,
    released_classes,
)
from broker.fsla.models import RuleSet
from broker.fsla.remedy import Effort, find_remedy
from broker.fsla.results import TransferContext
from broker.metrics.report import ReportOptions, analyze
from broker.wire.statuses import TransferStatus
from tests.fsla.test_evaluate import record

NOW = datetime(2026, 11, 23, tzinfo=UTC)

# Eight people: ages 23, 27, 33, 37 in postcodes 75001 and 75002, one of each pair.
PEOPLE = pd.DataFrame(
    {
        "age": ["23", "27", "23", "27", "33", "37", "33", "37"],
        "zip": ["75001", "75001", "75002", "75002", "75001", "75001", "75002", "75002"],
        "disease": ["flu", "flu", "hiv", "hiv", "flu", "cold", "cold", "flu"],
    }
)
# Release 1 generalized age to decades and kept the postcode: four classes of two.
FIRST = Release(
    "t1",
    NOW - timedelta(days=10),
    ("age", "zip"),
    ("disease",),
    (
        (("20-29", "75001"), 2),
        (("20-29", "75002"), 2),
        (("30-39", "75001"), 2),
        (("30-39", "75002"), 2),
    ),
    4,
)
# Release 2 keeps age and masks the postcode: ages 23, 27, 33, 37, two people each.
MASK = RecodePlan(labels={"zip": {"75001": "7500*", "75002": "7500*"}})


@pytest.mark.parametrize(
    ("label", "values", "held"),
    [
        ("30-39", ["29", "30", "39", "39.5", "40", None], [0, 1, 1, 0, 0, 0]),
        ("-10-5", ["-10", "0", "6"], [1, 1, 0]),
        ("*", ["a", None, ""], [1, 1, 1]),
        ("NA", ["a", None, ""], [0, 1, 1]),
        ("F, M", ["F", "M", "X"], [1, 1, 0]),
        ("20-30, NA", ["25", None, "31"], [1, 1, 0]),
        ("F, *", ["F", "Z"], [1, 1]),
        ("570*", ["57001", "5700", "58001", None], [1, 1, 0, 0]),
        ("2024-03", ["2024-03-17", "2024-04-01", "2024-03"], [1, 0, 1]),
        ("2024", ["2024-03-17", "2025-01-01", "2024"], [1, 0, 1]),
        ("2020/2024", ["2019-12-31", "2020-01-01", "2024-12-31", "2025-01-01"], [0, 1, 1, 0]),
        ("28", ["28", "28.0", "280"], [1, 1, 0]),
        (28, ["28", "29"], [1, 0]),
        (None, ["a", None], [0, 1]),
        ("Paris, France", ["Paris, France", "Lyon"], [1, 0]),
        ("Europe", ["France"], [0]),  # a hierarchy's own label: the broker cannot read it
    ],
)
def test_a_raw_value_falls_in_the_labels_the_anonymizers_write(label, values, held):
    assert label_holds(label, pd.Series(values, dtype=object)).tolist() == [bool(h) for h in held]


def test_dates_read_from_parquet_fall_in_calendar_labels():
    values = pd.Series([pd.Timestamp("2024-03-17"), pd.Timestamp("2023-01-01")], dtype=object)
    assert label_holds("2024-03", values).tolist() == [True, False]


def test_cells_with_labels_that_partition_and_people_not_in_the_release():
    dictionaries = {"age": pd.Series(["23", "35", "50"]), "zip": pd.Series(["75001", "75002"])}
    codes = {"age": np.array([0, 0, 1, 2]), "zip": np.array([0, 1, 1, 0])}
    # (23, 75001) in class 0, (23, 75002) in class 1, (35, 75002) in class 3, 50 in none
    # (cells are numbered in order of appearance).
    assert earlier_cells(dictionaries, codes, FIRST).tolist() == [0, 1, 2, -1]


def test_overlapping_labels_group_people_by_the_classes_that_may_hold_them():
    # Grid labels never state a class's own extremes: "20-40" and "30-60" overlap on 30..40.
    release = Release("t", NOW, ("age",), (), ((("20-40",), 3), (("30-60",), 3)), 2)
    dictionary = {"age": pd.Series(["25", "35", "38", "55", "70"])}
    cells = earlier_cells(dictionary, {"age": np.arange(5)}, release)
    assert cells.tolist() == [0, 1, 1, 2, -1]  # {first}, {both}, {both}, {second}, none


def test_joint_classes_by_hand():
    # Tuples: new class, earlier cell, people, disease code.
    new_class = np.array([0, 0, 1, 1, 2])
    cell = np.array([0, 0, 0, 1, -1])
    people = np.array([2, 1, 4, 3, 9])
    disease = np.array([0, 1, 0, 0, 1])
    linked, classes, smallest, diversity = joint_of(new_class, cell, people, {"d": disease})
    # Joint classes (0, 0): 3 people, values {0, 1}; (1, 0): 4, {0}; (1, 1): 3, {0}.
    assert (linked, classes, smallest, diversity) == (10, 3, 3, {"d": 1})
    assert joint_of(new_class, np.full(5, -1), people) == (0, 0, None, {})


def test_two_releases_each_k_anonymous_isolate_everyone_together():
    engine = PandasEngine(PEOPLE)
    (joint,) = assess(engine, ("age", "zip"), ("disease",), (FIRST,), NOW, relabel=MASK)
    assert joint.attributes == ("age", "zip")
    assert (joint.linked_people, joint.classes, joint.smallest) == (8, 8, 1)
    assert joint.diversity == {"disease": 1}
    assert joint.age == timedelta(days=10)
    # The same through released columns kept beside the originals (the in-memory remedy).
    beside = PEOPLE.assign(released=["7500*"] * 8)
    (same,) = assess(
        PandasEngine(beside), ("age", "zip"), ("disease",), (FIRST,), NOW, {"zip": "released"}
    )
    assert (same.classes, same.smallest) == (8, 1)


def test_a_release_no_finer_than_the_earlier_one_links_nothing_new():
    decades = RecodePlan(
        labels={"age": {"23": "20-29", "27": "20-29", "33": "30-39", "37": "30-39"}},
        drop=("zip",),
    )
    (joint,) = assess(PandasEngine(PEOPLE), ("age",), (), (FIRST,), NOW, relabel=decades)
    # Joint classes are the earlier classes themselves: four of two people.
    assert (joint.linked_people, joint.classes, joint.smallest) == (8, 4, 2)


def test_a_table_without_some_of_the_earlier_columns_is_placed_on_the_others():
    ages = PEOPLE[["age", "disease"]]
    (joint,) = assess(PandasEngine(ages), ("age",), (), (FIRST,), NOW)
    # Age 23 may be in (20-29, 75001) or (20-29, 75002): one joint class per age, of two.
    assert (joint.linked_people, joint.classes, joint.smallest) == (8, 4, 2)
    (apart,) = assess(PandasEngine(PEOPLE[["disease"]]), (), (), (FIRST,), NOW)
    assert apart.smallest is None and apart.unchecked is None


def test_people_the_earlier_release_did_not_hold_are_not_linked():
    others = pd.DataFrame({"age": ["55", "55", "61"], "zip": ["75001"] * 3})
    (joint,) = assess(PandasEngine(others), ("age", "zip"), (), (FIRST,), NOW)
    assert (joint.linked_people, joint.smallest) == (0, None)


def rule_set(**fields) -> RuleSet:
    return RuleSet(identifiers_allowed=True, **fields)


def test_the_rule_names_the_earlier_transfer_and_respects_the_window():
    (joint,) = assess(PandasEngine(PEOPLE), ("age", "zip"), ("disease",), (FIRST,), NOW)
    (failed,) = linkage_rules((joint,), "import", "FR", rule_set(min_k=2, linkage_lookback_days=30))
    assert (failed.rule, failed.passed, failed.measured, failed.threshold) == (
        "linkage",
        False,
        1,
        2,
    )
    assert "t1" in failed.detail and failed.attribute == "age, zip" and failed.fixable
    assert linkage_rules((joint,), "import", "FR", rule_set(min_k=2, linkage_lookback_days=9)) == []
    assert linkage_rules((joint,), "import", "FR", rule_set(min_k=2)) == []
    assert linkage_rules((joint,), "import", "FR", rule_set(linkage_lookback_days=30)) == []
    (by_l,) = linkage_rules((joint,), "export", "SN", rule_set(min_l=2, linkage_lookback_days=30))
    assert not by_l.passed and "disease has only 1 distinct value" in by_l.detail


def test_a_release_too_large_to_remember_fails_closed():
    big = Release("t9", NOW, ("age",), (), None, 2_000_000)
    (joint,) = assess(PandasEngine(PEOPLE), ("age",), (), (big,), NOW)
    (result,) = linkage_rules((joint,), "import", "FR", rule_set(min_k=2, linkage_lookback_days=1))
    assert not result.passed and not result.fixable and "2,000,000 classes" in result.detail


def test_stricter_wins_longest_look_back():
    sets = [rule_set(linkage_lookback_days=30), rule_set(linkage_lookback_days=365), rule_set()]
    assert lookback(sets) == 365 == combine(sets).linkage_lookback_days
    assert lookback([rule_set()]) is None


def test_released_classes_are_what_leaves_with_people():
    decades = PEOPLE.assign(age=["20-29"] * 4 + ["30-39"] * 4)
    engine = PandasEngine(decades, people=PandasEngine(PEOPLE).people)
    classes, count = released_classes(engine, ("age", "zip"), cap=10)
    assert sorted(classes) == sorted(FIRST.classes) and count == 4
    assert released_classes(engine, ("age", "zip"), cap=3) == (None, 4)
    numbers = PandasEngine(pd.DataFrame({"n": [1, 1, None]}))  # identical rows: one person
    classes, _count = released_classes(numbers, ("n",), cap=5)
    assert sorted(classes, key=str) == [((1.0,), 1), ((None,), 1)]
    odd = PandasEngine(
        pd.DataFrame({"n": [float("inf"), 2.5], "d": [pd.Timestamp("2024-03-01")] * 2})
    )
    classes, _count = released_classes(odd, ("n", "d"), cap=5)
    assert set(classes) == {((2.5, "2024-03-01"), 1), (("inf", "2024-03-01"), 1)}


def context_and_policies(rules: dict):
    source = record("SN", export={"identifiers_allowed": True})
    destination = record("FR", incoming={"identifiers_allowed": True, **rules})
    context = TransferContext("SN", "FR", "research", ("age", "zip"), ())
    return source, destination, context


def test_the_decision_fails_and_the_verified_remedy_passes_joined():
    source, destination, context = context_and_policies({"min_k": 2, "linkage_lookback_days": 30})
    frame = PEOPLE[["age", "zip"]]
    report = analyze(frame, ["age", "zip"], [], ReportOptions(max_combination_size=0))
    assert report.quasi_identifiers.anonymity.k == 1  # raw: k fails alone too
    released = PEOPLE[["age", "zip"]].assign(zip="7500*")
    people = PandasEngine(frame).people
    alone = analyze(
        released, ["age", "zip"], [], ReportOptions(max_combination_size=0), people=people
    )
    assert evaluate(alone, context, source, destination).status == TransferStatus.APPROVED
    engine = PandasEngine(frame)
    joints = assess(engine, ("age", "zip"), (), (FIRST,), NOW)
    decision = evaluate(report, context, source, destination, joints)
    assert decision.status == TransferStatus.ANONYMIZATION_REQUIRED
    assert "linkage" in {r.rule for r in decision.failed}
    history = History(NOW, (FIRST,))
    found = find_remedy(
        engine, report, decision, context, source, destination, Effort(0.0), history
    )
    assert found.verified
    assert all(r.passed for r in found.decision.rules)
    linkage = [r for r in found.decision.rules if r.rule == "linkage"]
    assert linkage and linkage[0].measured >= 2


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_joint_classes_agree_with_a_row_by_row_oracle(data):
    n = data.draw(st.integers(1, 30))
    ages = data.draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    zips = data.draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n))
    bounds = st.tuples(
        st.integers(0, 20), st.integers(0, 8), st.sampled_from(["a", "b", "a, b", "*"])
    )
    drawn = data.draw(
        st.lists(bounds, min_size=1, max_size=6, unique_by=lambda c: (c[0], c[1], c[2]))
    )
    classes = tuple(
        ((str(lo) if width < 0 else f"{lo}-{lo + width}", z), 1) for lo, width, z in drawn
    )
    release = Release("t", NOW, ("age", "zip"), (), classes, len(classes))
    frame = pd.DataFrame({"age": [str(a) for a in ages], "zip": zips, "id": range(n)})
    (joint,) = assess(PandasEngine(frame), ("age",), (), (release,), NOW)
    # The oracle: each row's set of classes by plain comparisons, grouped with its age.
    groups: dict = {}
    for age, zip_ in zip(ages, zips, strict=True):
        held = frozenset(
            index
            for index, (lo, width, z) in enumerate(drawn)
            if lo <= age <= lo + max(width, 0) and (z == "*" or zip_ in z.split(", "))
        )
        if held:
            groups[age, held] = groups.get((age, held), 0) + 1
    assert joint.linked_people == sum(groups.values())
    assert joint.classes == len(groups)
    assert joint.smallest == (min(groups.values()) if groups else None)

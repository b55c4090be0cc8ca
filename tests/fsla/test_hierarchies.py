"""Which hierarchy a remedy follows (records first, then the request), and labels made safe:
hand-built hierarchies whose answers a reader checks by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from broker.anonymize.hierarchies import (
    Hierarchy,
    HierarchyError,
    bounded,
    of_table,
    safe_labels,
)
from broker.fsla.hierarchies import followed
from broker.fsla.models import FSLARecord
from broker.identifiers.short_text import identifier_in_text

EDUCATION = {"Bachelors": ["Higher", "*"], "Masters": ["Higher", "*"], "HS-grad": ["School", "*"]}
VALUES = {"education": pd.Series(["Bachelors", "Masters", "HS-grad", None])}


def record(code: str, **hierarchies) -> FSLARecord:
    return FSLARecord(
        jurisdiction=code,
        name=code,
        legal_basis="law",
        authority="authority",
        allowed_purposes=["research"],
        hierarchies=hierarchies,
    )


def follow(requested=None, *records):
    return followed(requested or {}, records, ["education", "age"], VALUES.__getitem__)


def test_a_records_hierarchy_comes_before_the_requests():
    other = {value: ["Any", "*"] for value in EDUCATION}
    chosen = follow({"education": other}, record("SN", education=EDUCATION))
    assert chosen.problem is None and chosen.tables == {"education": EDUCATION}
    assert chosen.notes == (
        "the request's hierarchy for 'education' is not used: the F-SLA record of SN gives the "
        "one to follow",
    )
    assert follow({"education": other}).tables == {"education": other}


def test_a_records_attribute_is_matched_folded():
    # class 4: the record names the attribute in another case, with a zero-width space
    chosen = follow(None, record("SN", **{"EDU\u200bCATION": EDUCATION}))
    assert chosen.tables == {"education": EDUCATION}


def test_two_records_that_disagree_cannot_both_be_followed():
    other = {value: ["Any", "*"] for value in EDUCATION}
    chosen = follow(None, record("SN", education=EDUCATION), record("FR", education=other))
    assert chosen.problem == (
        "the F-SLA records of SN and FR give different hierarchies for the attribute "
        "'education': no remedy can follow both"
    )
    same = follow(None, record("SN", education=EDUCATION), record("FR", education=EDUCATION))
    assert same.problem is None and same.tables == {"education": EDUCATION}


def test_a_hierarchy_must_cover_every_present_value():
    chosen = follow(None, record("SN", education={"Bachelors": ["Higher", "*"]}))
    assert chosen.problem == (
        "SN's hierarchy for 'education' does not cover 2 value(s) of the column ('Masters', "
        "'HS-grad'): every value needs a line"
    )  # the missing value (None) is not asked for: it stays missing


def test_range_labels_bounded_by_class_values_are_relabelled_on_the_grid():
    ages = Hierarchy({str(a): (f"{a // 5 * 5}-{a // 5 * 5 + 4}", "*") for a in range(30, 40)})
    safe, notes = safe_labels(ages)
    # by hand, the narrowest interval on a 1-2-5 grid of step >= half the spread (2):
    # 35..39: step 2 gives [34, 40], step 5 gives [35, 40], narrower; 30..34: step 2 gives
    # [30, 34] itself (its bounds are grid points), narrower than [30, 35]
    assert {safe.levels[str(a)][0] for a in range(35, 40)} == {"35-40"}
    assert {safe.levels[str(a)][0] for a in range(30, 35)} == {"30-34"}
    assert notes == (
        "the hierarchy: 1 range label(s) whose bounds are values of their class leave "
        "re-labelled on a 1-2-5 grid (e.g. '35-39' as '35-40')",
    )
    # a label whose bounds are not values of its class is left as written
    wide = Hierarchy({"31": ("30-39", "*"), "33": ("30-39", "*")})
    assert safe_labels(wide)[0] == wide


@pytest.mark.parametrize(
    ("levels", "named"),
    [
        ({"Other": ("Other",), "Unknown": ("Other",)}, "'Other'"),
        ({"Lyon": ("lyon area",), "Villeurbanne": ("lyon area",)}, "'Lyon'"),
        ({"Dakar": ("Dakar, Thies",), "Thies": ("Dakar, Thies",)}, "'Dakar'"),
    ],
)
def test_a_label_that_names_a_value_of_its_class_is_refused(levels, named):
    with pytest.raises(HierarchyError, match=f"names {named}, one of the 2 values"):
        safe_labels(Hierarchy(levels))


def test_labels_that_only_resemble_a_value_pass():
    # "Female" holds "male" but not as a word; a class of one may keep its own value
    levels = {"male": ("Female-or-male",), "female": ("Female-or-male",), "x": ("x",)}
    assert safe_labels(Hierarchy(levels))[0].levels["x"] == ("x",)


def test_a_label_holding_an_identifier_is_refused():
    levels = {"a": ("call 0612345678",), "b": ("call 0612345678",)}
    with pytest.raises(HierarchyError, match=r"line 1: the level 1 label .* holds"):
        safe_labels(Hierarchy(levels), identifier_in=identifier_in_text)


def test_inline_tables_are_held_to_the_files_rules():
    with pytest.raises(HierarchyError, match="2 levels where the first value has 1"):
        of_table({"a": ["*"], "b": ["x", "*"]})
    with pytest.raises(HierarchyError, match="an empty label"):
        of_table({"a": [" "]})
    with pytest.raises(HierarchyError, match="is empty"):
        of_table({})
    with pytest.raises(HierarchyError, match="more than 16"):
        bounded(Hierarchy({"a": tuple("*" * 17)}))


def test_a_remedy_that_cannot_follow_the_hierarchy_says_why_not_that_time_ran_out():
    # Missing values stay missing under a hierarchy: 6 rows (NA, F) and (NA, M), three of each
    # identical, so 2 people, in a class of 6 rows at best: the generalization meets k = 4 in
    # rows, the rules refuse it in people, and a larger k cannot be met at all
    from broker.columns.roles import Roles
    from broker.engines.pandas import PandasEngine
    from broker.fsla.decide import Case, Measured, Parties, Party, TransferRequest, decide
    from broker.fsla.models import RuleSet
    from broker.fsla.remedy import Effort
    from broker.metrics.report import ReportOptions, report_of

    frame = pd.DataFrame(
        {"edu": ["a", "b", "c", "d", None, "a", "b", "c", "d", None] * 3, "sex": list("FM") * 15}
    )
    rules = RuleSet(identifiers_allowed=True, min_k=4, auto_anonymize=True)
    sn = record("SN").model_copy(update={"domestic_export": rules})
    parties = Parties(Party("a", "SN", "active"), Party("b", "SN", "active"), {"SN": (sn, 1)})
    table = {"a": ["ab", "*"], "b": ["ab", "*"], "c": ["cd", "*"], "d": ["cd", "*"]}
    request = TransferRequest(
        "b", "research", ("edu", "sex"), anonymize="auto", hierarchies={"edu": table}
    )
    engine = PandasEngine(frame)
    report = report_of(engine, ["edu", "sex"], [], ReportOptions(max_combination_size=0))
    case = Case(parties, request, Roles(("edu", "sex")), Measured(engine, report))
    outcome = decide(case, Effort())
    assert outcome.status == "rejected"
    assert outcome.remedy.note.startswith("anonymization could not reach compliance")
    assert "k = 2 people" in outcome.remedy.note and "budget" not in outcome.remedy.note

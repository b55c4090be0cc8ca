"""The decision's summary, without a server: one entry per problem, merged, with what to do."""

import json
from pathlib import Path

from broker.fsla.summary import summarize

# A stored report (an applied remedy's ``before`` holds one); its figures are not summarized.
REPORT = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "stored_reports" / "report_842ff1c.json").read_text()
)


def rule(name, jurisdiction, attribute=None, passed=False, measured=None, threshold=None, **kw):
    scope = kw.pop("scope", "export" if jurisdiction == "SN" else "import")
    return {
        "rule": name,
        "scope": scope,
        "jurisdiction": jurisdiction,
        "attribute": attribute,
        "passed": passed,
        "measured": measured,
        "threshold": threshold,
        "detail": kw.pop("detail", f"{name} failed"),
    }


# The paper's table, SN -> FR: 15 failed rules.
PAPER_RULES = [
    rule("purpose_allowed", "SN", passed=True),
    rule("forbidden_attribute", "SN", "NIN", measured="NIN", threshold="NIN"),
    *(rule("no_identifiers", j, a) for j in ("SN", "FR") for a in ("NIN", "Name", "Age")),
    *(rule("max_mmaq_index", "SN", a, measured=1.0, threshold=0.7) for a in ("NIN", "Name", "Age")),
    rule("min_k", "SN", "Age, Gender", measured=1, threshold=3),
    rule("min_k", "FR", "Age, Gender", measured=1, threshold=5),
    rule("min_l", "SN", "Disease", measured=1, threshold=2),
    rule("min_l", "FR", "Disease", measured=1, threshold=2),
    rule("max_t", "FR", "Disease", measured=0.888889, threshold=0.7),
]
PAPER_REMEDY = {
    "verified": True,
    "steps": [
        {"column": "NIN", "method": "drop", "parameters": {}},
        {"column": "Name", "method": "drop", "parameters": {}},
        {
            "column": None,
            "method": "mondrian",
            "parameters": {"quasi_identifiers": ["Age", "Gender"], "k": 5},
        },
    ],
}


def test_fifteen_failed_rules_are_three_problems():
    assert sum(not r["passed"] for r in PAPER_RULES) == 15
    entries = summarize("anonymization_required", PAPER_RULES, PAPER_REMEDY, ["Age", "Gender"])
    assert [e["attributes"] for e in entries] == [
        ["NIN"],
        ["Name"],
        ["Age", "Gender", "Disease"],
    ]
    nin, name, anonymity = entries
    assert nin["rules"] == ["forbidden_attribute", "no_identifiers", "max_mmaq_index"]
    assert nin["jurisdictions"] == ["SN (export)", "FR (import)"]
    assert nin["do"].startswith("drop column NIN: it identifies people")
    assert "SN (export) forbids the attribute itself" in nin["do"]
    assert name["do"].startswith("drop column Name: it identifies people")
    # Age failing k, l, t and the per-attribute rules in two jurisdictions: one problem, with the
    # strictest threshold (FR's k >= 5) and the remedy's k.
    assert anonymity["rules"] == ["no_identifiers", "max_mmaq_index", "min_k", "min_l", "max_t"]
    assert "k = 1 (needs at least 5)" in anonymity["problem"]
    assert "t = 0.8889 (needs at most 0.7)" in anonymity["problem"]
    assert anonymity["do"] == (
        "generalize Age and Gender (k-anonymize them with k = 5); or send anonymize=auto"
    )
    assert all(e["kind"] == "problem" for e in entries)


def test_auto_refused_by_the_rule_sets_says_apply_the_steps_yourself():
    entries = summarize(
        "anonymization_required", PAPER_RULES, PAPER_REMEDY, ["Age", "Gender"], anonymize="auto"
    )
    assert all("apply the remedy's steps yourself" in e["do"] for e in entries)


def test_a_column_over_its_bound_that_is_not_a_quasi_identifier_is_generalized():
    rules = [rule("max_mmaq_index", "SN", "zip", measured=0.9, threshold=0.5)]
    [entry] = summarize("anonymization_required", rules, {"verified": True, "steps": []}, ["Age"])
    assert entry["do"] == "generalize zip (coarser values) or drop it; or send anonymize=auto"


def test_rules_no_anonymization_fixes_come_first_merged_across_jurisdictions():
    rules = [
        rule("min_k", "SN", "Age", measured=1, threshold=3),
        rule("purpose_allowed", "SN", measured="marketing", threshold="research", detail="SN no"),
        rule("purpose_allowed", "FR", measured="marketing", threshold="research", detail="FR no"),
    ]
    first, second = summarize("rejected", rules, None, ["Age"])
    assert first["rules"] == ["purpose_allowed"]
    assert first["jurisdictions"] == ["SN (export)", "FR (import)"]
    assert first["problem"] == "SN no; FR no"
    assert first["do"] == "use a purpose every side allows (research)"
    assert second["rules"] == ["min_k"]


def test_approved_says_nothing_to_do_and_auto_says_what_the_broker_did():
    [entry] = summarize("approved", [rule("min_k", "SN", "Age", passed=True)], None)
    assert entry["kind"] == "note" and entry["do"].startswith("nothing: every rule passes")
    applied = {
        **PAPER_REMEDY,
        "applied": True,
        "information_loss": {
            "utility_percent": 23.8,
            "discernibility": 41,
            "suppressed_rows": 0,
            "suppressed_cell_share": 0.4,
        },
        "before": {"report": REPORT, "rules": PAPER_RULES},
    }
    [entry] = summarize("approved", [], applied, ["Age", "Gender"], anonymize="auto")
    assert entry["kind"] == "note"
    assert "23.8 % of the information is kept" in entry["do"]
    assert entry["attributes"] == ["NIN", "Name", "Age", "Gender", "Disease"]


def test_a_floor_refusal_is_its_own_problem():
    rules = [
        rule("min_k", "SN", "Age", measured=1, threshold=5),
        rule("min_utility_percent", "SN", measured=0.0, threshold=20, detail="keeps 0.0 %"),
    ]
    entries = summarize("rejected", rules, {"verified": False, "steps": []}, ["Age"])
    assert entries[0]["rules"] == ["min_utility_percent"]
    assert "min_utility_percent" in entries[0]["do"]


def test_a_passed_sensitive_declared_rule_is_one_note():
    rules = [
        rule("sensitive_declared", j, passed=True, detail="none declared; looks sensitive: X")
        for j in ("SN", "FR")
    ]
    [_done, note] = summarize("approved", rules, None)
    assert note["kind"] == "note" and note["jurisdictions"] == ["SN (export)", "FR (import)"]
    assert "`sensitive`" in note["do"]

"""A decision as the member cloud reads it, through the real app: the summary, each remedy
step's reason, the utility floor, the hint on `sensitive`, a fetchable dry run, the format that
came in, and the unknown-column error."""

from __future__ import annotations

import pytest

from tests.broker.conftest import ADMIN

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}
PROBLEM = "application/problem+json"


def edit_policy(client, jurisdiction: str, change) -> None:
    answer = client.get(f"/v1/policies/{jurisdiction}", headers=ADMIN).json()
    record = answer["record"]
    change(record)
    saved = client.put(
        f"/v1/policies/{jurisdiction}",
        headers={**ADMIN, "If-Match": f'"{answer["version"]}"'},
        json=record,
    )
    assert saved.status_code == 200, saved.text


def raise_min_k_to_5(client) -> None:
    def change(record):
        record["cross_border_export"]["min_k"] = 5

    edit_policy(client, "SN", change)


# --- the summary and the reasons ------------------------------------------------------------


def test_the_paper_table_answer_leads_with_three_problems(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert list(body)[:3] == ["id", "status", "summary"]
    assert sum(not r["passed"] for r in body["rules"]) == 15
    summary = body["summary"]
    assert [entry["attributes"] for entry in summary] == [
        ["NIN"],
        ["Name"],
        ["Age", "Gender", "Disease"],
    ]
    assert summary[0]["do"].startswith("drop column NIN: it identifies people")
    assert summary[2]["jurisdictions"] == ["SN (export)", "FR (import)"]
    assert summary[2]["do"].startswith("generalize Age and Gender (k-anonymize them with k = ")
    assert summary[2]["do"].endswith("or send anonymize=auto")


def test_every_remedy_step_says_why(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    steps = {(s["column"], s["method"]): s["reason"] for s in body["remedy"]["steps"]}
    assert "SN (export) forbids the attribute NIN" in steps[("NIN", "drop")]
    assert "Name identifies people (9 distinct values in 9 rows)" in steps[("Name", "drop")]
    mondrian = steps[(None, "mondrian")]
    assert mondrian.startswith("k = 3 because the rule sets ask min_k = 3")
    assert "Age has 9 values" in mondrian


def test_a_k_raised_above_the_rules_says_which_rule_asked_for_it(federation):
    def change(record):
        record["cross_border_export"]["max_journalist_risk"] = 0.2  # k >= 5

    edit_policy(federation.client, "SN", change)
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    mondrian = body["remedy"]["steps"][-1]
    assert mondrian["parameters"]["k"] == 5
    assert mondrian["reason"].startswith(
        "k = 5 because the rule sets bound journalist risk at 0.2 <= 1/5 (also: the rule sets "
        "ask min_k = 3"
    )


def test_an_auto_anonymized_answer_says_what_the_broker_did(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", anonymize="auto", **QI
    ).json()
    assert body["status"] == "approved"
    [entry] = body["summary"]
    assert entry["kind"] == "note" and "% of the information is kept" in entry["do"]
    assert all(step["reason"] for step in body["remedy"]["steps"])


# --- the utility floor ----------------------------------------------------------------------


def test_with_min_k_5_the_remedy_keeps_nothing(federation):
    raise_min_k_to_5(federation.client)
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert body["remedy"]["verified"] is True
    assert body["remedy"]["after"]["equivalence_classes"] == 1
    assert body["remedy"]["information_loss"]["utility_percent"] == 0.0


@pytest.mark.parametrize("where", ["request", "rule set"])
def test_a_remedy_below_the_floor_is_neither_offered_nor_applied(federation, where):
    raise_min_k_to_5(federation.client)
    form = {"anonymize": "auto", **QI}
    if where == "request":
        form["min_utility_percent"] = "20"
    else:

        def change(record):
            record["import_rules"]["min_utility_percent"] = 20

        edit_policy(federation.client, "FR", change)
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **form
    ).json()
    assert body["status"] == "rejected"
    assert body["remedy"]["verified"] is False and body["remedy"]["steps"] == []
    assert body["remedy"]["applied"] is False
    assert "keeps 0.0 % of the information" in body["remedy"]["note"]
    assert body["dataset"]["anonymized"] is False
    assert body["delivery"]["status"] == "not_applicable"
    floor = next(r for r in body["rules"] if r["rule"] == "min_utility_percent")
    assert not floor["passed"] and floor["measured"] == 0.0 and floor["threshold"] == 20
    assert floor["scope"] == ("request" if where == "request" else "import")
    first = body["summary"][0]
    assert first["rules"] == ["min_utility_percent"] and "min_utility_percent" in first["do"]
    assert "anonymize=auto" not in body["summary"][-1]["do"]


def test_a_remedy_above_the_floor_is_applied(federation):
    body = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        anonymize="auto",
        min_utility_percent="5",
        **QI,
    ).json()
    assert body["status"] == "approved" and body["remedy"]["applied"] is True
    assert body["remedy"]["information_loss"]["utility_percent"] >= 5


def test_a_floor_outside_0_100_is_a_problem(federation):
    answer = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        min_utility_percent="120",
        **QI,
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith(PROBLEM)

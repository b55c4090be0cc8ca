"""The stored report (broker.metrics.stored): written, stored as JSON, read back and served by one
model; reports stored by older brokers read with their defaults.

The old reports in tests/fixtures/stored_reports are what the broker's code at those commits
wrote for the table of :func:`table` (``analyze(table, ["age", "sex"], ["disease"])``, run from
``git archive <commit>``): 418d37c (the first report, 2026-11-21), 235a50c (2026-11-23, before
journalist and marketer risk) and 842ff1c (2026-11-27, before precision and rare tuples).
"""

import json
from pathlib import Path

import pandas as pd
import pytest

from broker.analysis.schemas import Report
from broker.fsla.replay import report_from_dict
from broker.metrics.report import ReportOptions, analyze
from broker.metrics.risk import QirThresholds
from broker.metrics.stored import REPORT_VERSION, StoredReport

OLD = Path(__file__).parents[1] / "fixtures" / "stored_reports"
COMMITS = ["418d37c", "235a50c", "842ff1c"]


def table() -> pd.DataFrame:
    # (age, sex) classes: (30, F) x2, (30, M) x1, (40, M) x2, (50, F) x1
    return pd.DataFrame(
        {
            "age": [30, 30, 30, 40, 40, 50],
            "sex": ["F", "F", "M", "M", "M", "F"],
            "disease": ["flu", "hiv", "flu", "flu", "cold", "flu"],
        }
    )


def old(commit: str) -> dict:
    return json.loads((OLD / f"report_{commit}.json").read_text())


def test_write_store_read_serve_is_the_same_report():
    frame = table().assign(birth_date=["1931-02-03", "1950-01-01", "1962-05-05"] * 2)
    report = analyze(frame, ["age", "sex"], ["disease"], ReportOptions(sampling_fraction=0.5))
    birth = report.attribute("birth_date").precision
    assert birth is not None and birth.oldest_birth_year == 1931  # what must survive the trip
    written = report.stored()
    assert written["schema_version"] == REPORT_VERSION
    column = json.loads(json.dumps(written))  # what a JSON column gives back
    read = StoredReport.model_validate(column)
    assert read.model_dump(mode="json") == written
    served = Report.model_validate(column).model_dump(mode="json")
    assert served == json.loads(json.dumps(report.as_dict()))  # fedbroker analyze's JSON
    assert "schema_version" not in served and "precision_measured" not in served
    again = report_from_dict(column)
    assert again.quasi_identifiers == report.quasi_identifiers
    assert again.sensitive == report.sensitive
    assert [a.measure for a in again.attributes] == [a.measure for a in report.attributes]
    assert [a.content for a in again.attributes] == [a.content for a in report.attributes]
    assert [a.precision for a in again.attributes] == [a.precision for a in report.attributes]


@pytest.mark.parametrize("commit", COMMITS)
def test_old_reports_read_with_their_defaults(commit):
    stored = old(commit)
    read = StoredReport.model_validate(stored)
    assert read.schema_version == REPORT_VERSION
    assert read.precision_measured is False  # none of them measured precision
    assert read.rows == 6 and [a.name for a in read.attributes] == ["age", "sex", "disease"]
    qi = read.quasi_identifiers
    # Four classes in six rows (hand-counted above): k = 1, two rows alone.
    assert (qi.k, qi.equivalence_classes, qi.class_size_histogram) == (1, 4, {"1": 2, "2": 2})
    assert qi.k_people == 1
    # Without a population table journalist risk is the prosecutor risk, marketer classes / N.
    assert qi.journalist_risk.model_dump() == {"max": 1.0, "average": 4 / 6, "unique_share": 2 / 6}
    assert qi.marketer_risk == pytest.approx(4 / 6)
    assert qi.risk_population == "sample"
    assert (read.rare_tuples, read.rare_tuple_rows) == (0, 0)
    [disease] = read.sensitive
    assert (disease.l_diversity, disease.t_closeness_method) == (1, "categorical")
    for attribute in read.attributes:
        assert attribute.precision is None and attribute.identifier_evidence is None
    # Stored with the paper's label: 2 or 3 distinct values in 6 rows is above alpha = 0.2 %.
    assert {a["qir_class"] for a in stored["attributes"]} == {"sensitive"}
    assert {a.qir_class for a in read.attributes} == {"high"}
    # What it was read as is what is served, and it reads back as it was stored.
    assert Report.model_validate(stored).model_dump(mode="json")["quasi_identifiers"]["k"] == 1
    assert StoredReport.model_validate(read.model_dump(mode="json")) == read


def test_the_first_reports_lacked_most_fields():
    read = StoredReport.model_validate(old("418d37c"))
    assert (read.duplicate_rows, read.people_counted_by) == (0, "identical_rows")
    assert read.combination_search is None
    assert read.quasi_identifiers.prosecutor_risk.average_per_class == 0.0
    assert {(a.values, a.direct_identifier, a.singled_out_rows) for a in read.attributes} == {
        ("text", None, 0)
    }
    [disease] = read.sensitive
    assert (disease.k, disease.known_attributes, disease.alpha) == (0, [], 1.0)
    assert (disease.recursive_c, disease.recursive_c_bounds) == (None, {})
    assert (disease.beta_likeness, disease.enhanced_beta_likeness) == (0.0, None)
    assert disease.delta_disclosure == 0.0


def test_fields_an_old_report_has_are_kept():
    stored = old("235a50c")
    read = StoredReport.model_validate(stored)
    assert [a.values for a in read.attributes] == [a["values"] for a in stored["attributes"]]
    # age: 50 holds one row; sex: none alone; disease: cold and hiv one row each
    assert [a.singled_out_rows for a in read.attributes] == [1, 0, 2]
    assert read.sensitive[0].known_attributes == ["age", "sex"]


def test_the_current_reports_stored_without_a_version_read_as_written():
    current = analyze(table(), ["age", "sex"], ["disease"]).stored()
    del current["schema_version"]  # what the broker stored before the version was written
    read = StoredReport.model_validate(current)
    assert read.precision_measured is True
    assert read.model_dump(mode="json") == current | {"schema_version": REPORT_VERSION}


def test_an_old_report_replays_the_rules_figures():
    report = report_from_dict(old("842ff1c"))
    anonymity = report.quasi_identifiers.anonymity
    assert (anonymity.k, anonymity.k_people, anonymity.marketer_risk) == (1, 1, 4 / 6)
    assert anonymity.journalist_risk.max == 1.0 and not anonymity.against_population
    assert report.attribute("disease").singled_out == 2


@pytest.mark.parametrize(
    "broken",
    [
        {"attributes": []},  # no rows
        {"rows": 6, "attributes": [{"name": "age"}]},  # an attribute without its figures
        {"rows": 6, "attributes": [], "quasi_identifiers": {"k": 1}},
        {"rows": 6, "attributes": "age"},
    ],
)
def test_a_report_that_is_not_one_is_refused(broken):
    with pytest.raises(ValueError):
        StoredReport.model_validate(broken)


def test_a_version_1_report_reads_the_papers_qir_labels_as_levels():
    """Version 1 wrote the paper's labels; each reads as its level, nothing else changes."""
    frame = pd.DataFrame({"x": list(range(10)) + [0] * 990, "y": [0] * 1000, "z": range(1000)})
    levels = ReportOptions(max_combination_size=0, thresholds=QirThresholds(alpha=2, beta=0.5))
    written = analyze(frame, options=levels).stored()  # 1 %, 0.1 % and 100 % distinct
    assert [a["qir_class"] for a in written["attributes"]] == ["medium", "low", "high"]
    labels = {"medium": "quasi_identifier", "low": "non_sensitive", "high": "sensitive"}
    version_1 = {
        **written,
        "schema_version": 1,
        "attributes": [{**a, "qir_class": labels[a["qir_class"]]} for a in written["attributes"]],
    }
    assert StoredReport.model_validate(version_1).model_dump(mode="json") == written
    with pytest.raises(ValueError, match="qir_class"):
        StoredReport.model_validate(
            {**written, "attributes": [{**written["attributes"][0], "qir_class": "sensitive"}]}
        )

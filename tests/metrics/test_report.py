"""The report's contract and the search for identifying combinations."""

import numpy as np
import pandas as pd
import pytest

from broker.analysis.schemas import Report
from broker.engines.pandas import PandasEngine
from broker.metrics.report import ReportOptions, analyze, attribute_classes
from broker.metrics.risk import QirThresholds, qir_class

ATTRIBUTE_KEYS = {
    "name",
    "rows",
    "categories",
    "shannon",
    "shannon_normalized",
    "log10_stabilizer",
    "log10_mmaq",
    "mmaq",
    "mmaq_index",
    "class",
    "qir_risk_percent",
    "qir_class",
    "values",
    "direct_identifier",
    "identifier_evidence",
    "singled_out_rows",
    "precision",
}


def harmless_alone_identifying_together(rows: int = 64) -> pd.DataFrame:
    """Each of a, b, c has 4 equal values; together (a, b, c) tell 64 rows apart."""
    index = np.arange(rows)
    return pd.DataFrame(
        {"a": index % 4, "b": (index // 4) % 4, "c": (index // 16) % 4, "constant": ["x"] * rows}
    )


def test_report_keys_are_the_documented_contract():
    frame = harmless_alone_identifying_together()
    frame["s"] = ["flu", "hiv"] * 32
    report = analyze(frame, ["a", "b"], ["s"]).as_dict()
    assert set(report) == {
        "rows",
        "duplicate_rows",
        "people_counted_by",
        "rare_tuples",
        "rare_tuple_rows",
        "attributes",
        "combinations",
        "combination_search",
        "quasi_identifiers",
        "sensitive",
    }
    assert all(set(a) == ATTRIBUTE_KEYS for a in report["attributes"])
    qi = report["quasi_identifiers"]
    assert {
        "attributes",
        "k",
        "equivalence_classes",
        "class_size_histogram",
        "prosecutor_risk",
        "journalist_risk",
        "marketer_risk",
        "risk_population",
    } <= set(qi)
    assert set(qi["prosecutor_risk"]) == {"max", "average", "unique_share", "average_per_class"}
    assert set(qi["journalist_risk"]) == {"max", "average", "unique_share"}
    assert Report.model_validate(report).model_dump(by_alias=True) == report  # the API schema
    assert {"log10_mmaq", "mmaq", "mmaq_index", "class"} <= set(qi)
    assert set(report["sensitive"][0]) >= {
        "name",
        "l_diversity",
        "entropy_l_diversity",
        "t_closeness",
    }
    assert qi["k"] == 4 and qi["equivalence_classes"] == 16


def test_combinations_name_attributes_identifying_only_together():
    report = analyze(
        harmless_alone_identifying_together(), options=ReportOptions(max_combination_size=3)
    )
    found = [c.attributes for c in report.combinations]
    assert found == [("a", "b", "c")]
    assert report.combinations[0].measure.attribute_class == "identifier"


def test_combination_search_reports_only_minimal_sets():
    frame = harmless_alone_identifying_together()
    frame["id"] = range(len(frame))
    found = [
        c.attributes
        for c in analyze(frame, options=ReportOptions(max_combination_size=3)).combinations
    ]
    assert ("id",) in found
    assert not any("id" in combo and len(combo) > 1 for combo in found)


def test_unique_share_threshold_flags_partial_identification():
    frame = pd.DataFrame({"a": ["x"] * 8 + ["u1", "u2"]})
    assert (
        analyze(frame, options=ReportOptions(unique_threshold=0.2)).combinations[0].unique_share
        == 0.2
    )
    assert analyze(frame, options=ReportOptions(unique_threshold=0.25)).combinations == []


def test_combinations_can_be_skipped():
    assert (
        analyze(
            harmless_alone_identifying_together(), options=ReportOptions(max_combination_size=0)
        ).combinations
        == []
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"quasi_identifiers": ["zip"]}, "Quasi-identifier 'zip'"),
        ({"quasi_identifiers": ["a"], "sensitive": ["zip"]}, "Sensitive attribute 'zip'"),
        ({"quasi_identifiers": ["a"], "sensitive": ["a"]}, "both quasi-identifier and sensitive"),
        ({"options": ReportOptions(max_combination_size=-1)}, "cannot be negative"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        analyze(harmless_alone_identifying_together(), **kwargs)


def test_qir_classification_and_thresholds():
    report = analyze(
        pd.DataFrame({"x": list(range(10)) + [0] * 990}),
        options=ReportOptions(thresholds=QirThresholds(alpha=2, beta=0.5)),
    )
    assert report.attributes[0].qir_risk_percent == 1.0
    assert report.attributes[0].qir_class == "medium"
    assert qir_class(0.2) == "medium"  # the boundary belongs to the middle class
    with pytest.raises(ValueError, match="beta < alpha"):
        QirThresholds(alpha=0.01, beta=0.2)


def test_each_sensitive_attribute_is_measured_within_the_classes_of_all_the_others():
    """Multi-attribute l-diversity: declaring every column sensitive escapes nothing."""
    frame = harmless_alone_identifying_together()
    report = analyze(frame, [], ["a", "b", "c"], ReportOptions(max_combination_size=0))
    by_name = {s.name: s for s in report.sensitive}
    assert by_name["a"].known_attributes == ("b", "c")
    # (b, c) has 16 classes of 4 rows, and a takes its 4 values in each: k = 4, l = 4.
    assert (by_name["a"].k, by_name["a"].l_diversity) == (4, 4)
    frame["id"] = range(len(frame))
    report = analyze(frame, [], ["a", "id"], ReportOptions(max_combination_size=0))
    # a is judged within the classes of id (unique: k = 1), id within those of a (16 rows each).
    assert {s.name: s.k for s in report.sensitive} == {"a": 1, "id": 16}


def test_one_sensitive_attribute_without_quasi_identifiers_is_one_class():
    frame = pd.DataFrame({"s": ["flu", "hiv", "flu"]})
    [measure] = analyze(frame, [], ["s"], ReportOptions(max_combination_size=0)).sensitive
    # k counts people: without a person key the two identical "flu" rows may be one person.
    assert (measure.k, measure.l_diversity, measure.t_closeness) == (2, 2, 0.0)


def test_the_combination_search_is_bounded_and_says_where_it_stopped():
    """80 columns have 1.6 million combinations of 4: the search stops at the budget."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({f"c{i}": rng.integers(0, 10, 40).astype(str) for i in range(80)})
    frame["constant"] = "x"
    frame["copy"] = frame["c0"]
    report = analyze(frame, options=ReportOptions(max_combination_size=4))
    search = report.combination_search
    assert not search.complete and search.searched_size == 2
    assert "exceed the search's budget" in search.note
    assert search.evaluations == 82 + 80 * 79 // 2  # the constant and the copy are not combined
    assert len(report.combinations) == search.reported <= 100 < search.found
    assert all("constant" not in c.attributes for c in report.combinations)


def test_a_small_table_is_searched_in_full():
    frame = harmless_alone_identifying_together()
    search = analyze(frame, options=ReportOptions(max_combination_size=3)).combination_search
    assert search.complete and search.note is None
    assert [c.attributes for c in analyze(frame).combinations] == [("a", "b", "c")]


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"one": ["x"] * 4, "all": list("abcd"), "some": list("aabc")}),
        pd.DataFrame({"single_row": ["x"]}),
        pd.DataFrame({"missing": [None, None, "a"], "blank": ["", "", ""]}),
    ],
)
def test_the_cheap_classes_are_the_reports_classes(frame):
    full = {a.name: a.measure.attribute_class for a in analyze(frame).attributes}
    assert attribute_classes(PandasEngine(frame)) == full

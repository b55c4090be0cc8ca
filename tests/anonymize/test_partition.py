"""Partition: the links join back to the right rows, every group holds >= k rows (and l)."""

from collections import Counter

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.anonymize import AnonymizationError, Link
from broker.anonymize.partition import partition
from broker.metrics import k_anonymity, sensitive_measure
from tests.anonymize.helpers import read_fixture


def assert_links_join_back(original, result, groups):
    qi_table = result.tables["quasi_identifiers"]
    for group in groups:
        name = "_".join(group)
        table = result.tables[f"sensitive_{name}"]
        assert table.columns.tolist() == ["group_id", *group]
        link = Link("quasi_identifiers", f"group_{name}", f"sensitive_{name}", "group_id")
        assert link in result.links
        # For every group id, the sensitive table lists exactly the values of the rows that the
        # quasi-identifier table sends to it (as tuples: a group's attributes stay together).
        members = qi_table.groupby(f"group_{name}").groups
        assert set(members) == set(table["group_id"])
        for group_id, labels in members.items():
            expected = Counter(map(tuple, original.loc[labels, group].to_numpy().tolist()))
            listed = table.loc[table["group_id"] == group_id, group].to_numpy().tolist()
            assert Counter(map(tuple, listed)) == expected
        assert result.groups[f"sensitive_{name}"] == table["group_id"].nunique()


def test_paper_table1_partition():
    original = read_fixture("patients_original.csv").drop(columns=["NIN", "Name"])
    result = partition(original, ["Age", "Gender"], ["Disease"], k=3)
    qi_table = result.tables["quasi_identifiers"]
    assert qi_table.columns.tolist() == ["Age", "Gender", "group_Disease"]
    # The quasi-identifiers are published exactly; the diseases only through the groups.
    pd.testing.assert_frame_equal(qi_table[["Age", "Gender"]], original[["Age", "Gender"]])
    assert "Disease" not in qi_table.columns
    diseases = result.tables["sensitive_Disease"]
    assert k_anonymity(diseases, ["group_id"]).k >= 3
    assert sensitive_measure(diseases, ["group_id"], "Disease").l_diversity >= 3
    assert_links_join_back(original, result, [["Disease"]])
    assert result.suppressed_rows == 0


def test_dependent_attributes_stay_together_in_one_table():
    frame = pd.DataFrame(
        {
            "age": [str(a) for a in range(20, 32)],
            "disease": ["flu", "hiv", "cold", "flu"] * 3,
            "treatment": ["rest", "arv", "tea", "rest"] * 3,
            "income": ["low", "high"] * 6,
        }
    )
    result = partition(frame, ["age"], k=4, groups=[["disease", "treatment"], ["income"]], l=2)
    assert set(result.tables) == {
        "quasi_identifiers",
        "sensitive_disease_treatment",
        "sensitive_income",
    }
    qi_table = result.tables["quasi_identifiers"]
    assert qi_table.columns.tolist() == ["age", "group_disease_treatment", "group_income"]
    assert_links_join_back(frame, result, [["disease", "treatment"], ["income"]])
    for name, attributes in (
        ("disease_treatment", ["disease", "treatment"]),
        ("income", ["income"]),
    ):
        table = result.tables[f"sensitive_{name}"]
        assert table.groupby("group_id").size().min() >= 4
        for attribute in attributes:
            assert sensitive_measure(table, ["group_id"], attribute).l_diversity >= 2


def test_sensitive_rows_are_sorted_so_order_does_not_link_back():
    frame = pd.DataFrame({"age": [str(a) for a in range(10)], "s": list("jihgfedcba")})
    table = partition(frame, ["age"], ["s"], k=5).tables["sensitive_s"]
    assert table["group_id"].is_monotonic_increasing
    for _group_id, rows in table.groupby("group_id"):
        assert rows["s"].is_monotonic_increasing
    assert table.index.tolist() == list(range(10))


def test_suppression_limit():
    frame = pd.DataFrame({"age": ["20", "21"], "s": ["a", "b"]})
    with pytest.raises(AnonymizationError, match="k = 3 needs at least 3 rows"):
        partition(frame, ["age"], ["s"], k=3)
    result = partition(frame, ["age"], ["s"], k=3, max_suppression=1.0)
    assert result.suppressed_rows == 2
    assert all(len(table) == 0 for table in result.tables.values())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sensitive": []}, "at least one sensitive attribute"),
        ({"groups": [["s"], ["s"]]}, "'s' is in more than one group"),
        ({"sensitive": ["s"], "groups": [["t"]]}, "name different columns"),
        ({"sensitive": ["age"]}, "both quasi-identifier and sensitive"),
        ({"sensitive": ["zz"]}, "Sensitive attribute 'zz'"),
    ],
)
def test_bad_arguments(kwargs, message):
    frame = pd.DataFrame({"age": ["20", "21"], "s": ["a", "b"], "t": ["x", "y"]})
    with pytest.raises(ValueError, match=message):
        partition(frame, ["age"], k=1, **kwargs)


def test_existing_group_column_is_refused():
    frame = pd.DataFrame({"age": ["20"], "s": ["a"], "group_s": ["?"]})
    with pytest.raises(ValueError, match="Column 'group_s' already exists"):
        partition(frame, ["age"], ["s"], k=1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(18, 60),
            st.sampled_from(["F", "M"]),
            st.sampled_from(["flu", "hiv", "cold", "cancer"]),
            st.sampled_from(["low", "mid", "high"]),
        ),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 5),
    st.sampled_from([None, 2]),
)
def test_partition_properties(rows, k, l):
    frame = pd.DataFrame(rows, columns=["age", "sex", "disease", "income"]).astype(str)
    result = partition(frame, ["age", "sex"], ["disease", "income"], k=k, l=l, max_suppression=1.0)
    kept = result.tables["quasi_identifiers"]
    assert len(kept) + result.suppressed_rows == len(frame)
    if result.suppressed_rows:
        assert len(kept) == 0
        return
    assert kept.index.equals(frame.index)
    assert_links_join_back(frame, result, [["disease"], ["income"]])
    for name in ("disease", "income"):
        table = result.tables[f"sensitive_{name}"]
        assert k_anonymity(table, ["group_id"]).k >= k
        if l:
            assert sensitive_measure(table, ["group_id"], name).l_diversity >= l

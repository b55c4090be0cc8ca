"""Suppression and generalization: values, missing values, unicode, errors naming the column."""

from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.anonymize import (
    drop_columns,
    generalize_date,
    generalize_hierarchy,
    generalize_prefix,
    generalize_quantiles,
    generalize_range,
    mask,
)
from tests.anonymize.helpers import RANGE, read_fixture


def test_drop_and_mask_on_the_papers_table():
    frame = read_fixture("patients_original.csv")
    dropped = drop_columns(frame, ["NIN", "Name"])
    assert dropped.columns.tolist() == ["Age", "Gender", "Disease"]
    masked = mask(frame, "Name")
    assert set(masked["Name"]) == {"*"}
    assert frame["Name"].iloc[0] == "Khady"  # input untouched


def test_mask_given_rows_by_label_and_by_boolean_mask():
    frame = pd.DataFrame({"a": ["x", "y", "z"]}, index=[10, 20, 30])
    assert mask(frame, "a", rows=[20])["a"].tolist() == ["x", "*", "z"]
    assert mask(frame, "a", rows=np.array([True, False, True]))["a"].tolist() == ["*", "y", "*"]
    by_series = pd.Series([False, False, True], index=[10, 20, 30])
    assert mask(frame, "a", rows=by_series)["a"].tolist() == ["x", "y", "*"]
    with pytest.raises(ValueError, match="Row 40 to mask in column 'a'"):
        mask(frame, "a", rows=[40])
    with pytest.raises(ValueError, match="column 'a' has 2 entries for 3 rows"):
        mask(frame, "a", rows=np.array([True, False]))
    with pytest.raises(ValueError, match="row labels repeat"):
        mask(frame.set_axis([1, 1, 2]), "a", rows=[1])


def test_unknown_columns_are_named():
    frame = pd.DataFrame({"a": ["1"]})
    for call in (
        lambda: drop_columns(frame, ["zip"]),
        lambda: mask(frame, "zip"),
        lambda: generalize_range(frame, "zip", 10),
        lambda: generalize_quantiles(frame, "zip", 2),
        lambda: generalize_date(frame, "zip"),
        lambda: generalize_prefix(frame, "zip", 2),
        lambda: generalize_hierarchy(frame, "zip", {}),
    ):
        with pytest.raises(ValueError, match="Column 'zip' is not a column"):
            call()


def test_range_of_a_width():
    frame = pd.DataFrame({"Age": ["28", "30", "51", "0", "-3", "29.5", "", None]})
    out = generalize_range(frame, "Age", 10)["Age"].tolist()
    assert out == ["20-30", "30-40", "50-60", "0-10", "-10-0", "20-30", "", None]
    assert generalize_range(frame.iloc[:3], "Age", 10, origin=5)["Age"].tolist() == [
        "25-35",
        "25-35",
        "45-55",
    ]


def test_range_of_fractional_width_has_no_float_residue():
    frame = pd.DataFrame({"x": [0.31, 0.05, 1.0]})
    assert generalize_range(frame, "x", 0.1)["x"].tolist() == ["0.3-0.4", "0-0.1", "1-1.1"]


@pytest.mark.parametrize("function", [generalize_range, generalize_quantiles])
def test_numeric_generalization_refuses_text_and_names_the_column(function):
    frame = pd.DataFrame({"Age": ["28", "thirty", "51"]})
    with pytest.raises(ValueError, match="Column 'Age' is not numeric: value 'thirty'"):
        function(frame, "Age", 2)


def test_numeric_generalization_refuses_booleans_and_infinity():
    with pytest.raises(ValueError, match="'flag' holds booleans"):
        generalize_range(pd.DataFrame({"flag": [True, False]}), "flag", 1)
    with pytest.raises(ValueError, match="'x' is not numeric: value 'inf'"):
        generalize_range(pd.DataFrame({"x": ["1", "inf"]}), "x", 1)
    with pytest.raises(ValueError, match="'d' holds dates or durations, not numbers"):
        generalize_range(pd.DataFrame({"d": pd.to_datetime(["2024-01-01"])}), "d", 1)


def test_bad_parameters():
    frame = pd.DataFrame({"x": ["1"]})
    with pytest.raises(ValueError, match="width for column 'x' must be positive"):
        generalize_range(frame, "x", 0)
    with pytest.raises(ValueError, match="bins for column 'x'"):
        generalize_quantiles(frame, "x", 0)
    with pytest.raises(ValueError, match="prefix length for column 'x'"):
        generalize_prefix(frame, "x", -1)
    with pytest.raises(ValueError, match="Date level for column 'x'"):
        generalize_date(frame, "x", "week")
    with pytest.raises(ValueError, match="Hierarchy levels for column 'x'"):
        generalize_hierarchy(frame, "x", {"1": "a"}, levels=0)


def test_quantiles_with_ties_and_missing():
    frame = pd.DataFrame({"v": ["1", "1", "1", "1", "2", "3", "", "10"]})
    out = generalize_quantiles(frame, "v", 4)["v"].tolist()
    # Quantile edges 1, 1, 1, 2.5, 10 merge into 1, 2.5, 10: bins [1, 2.5] and (2.5, 10].
    assert out == ["1-2", "1-2", "1-2", "1-2", "1-2", "3-10", "", "3-10"]


def test_quantiles_of_all_missing_column_change_nothing():
    frame = pd.DataFrame({"v": ["", "", None]})
    assert generalize_quantiles(frame, "v", 3)["v"].tolist() == ["", "", None]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=60), st.integers(1, 8))
def test_quantile_labels_cover_their_values_and_do_not_overlap(values, bins):
    frame = pd.DataFrame({"v": [str(v) for v in values]})
    out = generalize_quantiles(frame, "v", bins)["v"]
    assert out.nunique() <= bins
    spans = {}
    for label, value in zip(out, values, strict=True):
        found = RANGE.fullmatch(label)
        low, high = (float(found[1]), float(found[2])) if found else (float(label), float(label))
        assert low <= value <= high
        spans[label] = (low, high)
    ordered = sorted(spans.values())
    assert all(a[1] < b[0] for a, b in pairwise(ordered))


def test_dates_to_month_and_year():
    frame = pd.DataFrame(
        {"d": ["2024-03-17", "2024-03-01T08:30:00", "1999-12-31", "", None, "2024-02"]}
    )
    assert generalize_date(frame, "d")["d"].tolist() == [
        "2024-03",
        "2024-03",
        "1999-12",
        "",
        None,
        "2024-02",
    ]
    assert generalize_date(frame, "d", "year")["d"].tolist()[:3] == ["2024", "2024", "1999"]
    stamps = pd.DataFrame({"d": pd.to_datetime(["2024-03-17", None])})
    assert generalize_date(stamps, "d")["d"].iloc[0] == "2024-03"


def test_ambiguous_dates_are_refused_naming_the_column():
    frame = pd.DataFrame({"admitted": ["2024-03-17", "03/04/2024"]})
    with pytest.raises(ValueError, match="Column 'admitted' is not a date column: value '03/04"):
        generalize_date(frame, "admitted")


def test_prefixes_of_codes_numbers_and_unicode():
    frame = pd.DataFrame(
        {"zip": ["57001", "57140", "570", ""], "nin": [25580917, 60608183, 1, 2]},
    )
    assert generalize_prefix(frame, "zip", 3)["zip"].tolist() == ["570*", "571*", "570", ""]
    assert generalize_prefix(frame, "nin", 2)["nin"].tolist() == ["25*", "60*", "1", "2"]
    assert generalize_prefix(frame, "zip", 0)["zip"].tolist() == ["*", "*", "*", ""]
    unicode = pd.DataFrame({"ville": ["Thiès", "Théâtre", "Ziguinchor"]})
    assert generalize_prefix(unicode, "ville", 2)["ville"].tolist() == ["Th*", "Th*", "Zi*"]


TREE = {
    "Dakar": "Sénégal",
    "Thiès": "Sénégal",
    "Lyon": "France",
    "Sénégal": "Afrique",
    "France": "Europe",
}


def test_hierarchy_levels_and_roots():
    frame = pd.DataFrame({"city": ["Dakar", "Lyon", "Thiès", "", None]})
    assert generalize_hierarchy(frame, "city", TREE)["city"].tolist() == [
        "Sénégal",
        "France",
        "Sénégal",
        "",
        None,
    ]
    assert generalize_hierarchy(frame, "city", TREE, levels=2)["city"].tolist()[:3] == [
        "Afrique",
        "Europe",
        "Afrique",
    ]
    # Past the roots values stay at their root.
    assert generalize_hierarchy(frame, "city", TREE, levels=5)["city"].tolist()[:3] == [
        "Afrique",
        "Europe",
        "Afrique",
    ]


def test_hierarchy_unknown_value_errors_or_is_suppressed():
    frame = pd.DataFrame({"city": ["Dakar", "Paris"]})
    with pytest.raises(ValueError, match="Value 'Paris' of column 'city' is not in the hierarchy"):
        generalize_hierarchy(frame, "city", TREE)
    out = generalize_hierarchy(frame, "city", TREE, unknown="suppress")
    assert out["city"].tolist() == ["Sénégal", "*"]


def test_hierarchy_looks_values_up_as_written():
    frame = pd.DataFrame({"code": [1, 2, 1]})
    out = generalize_hierarchy(frame, "code", {"1": "low", "2": "high"})
    assert out["code"].tolist() == ["low", "high", "low"]


def test_generalization_keeps_index_and_other_columns():
    frame = pd.DataFrame({"a": ["1", "12"], "b": [object(), None]}, index=["x", "y"])
    out = generalize_range(frame, "a", 10)
    assert out.index.tolist() == ["x", "y"]
    assert out["b"].iloc[0] is frame["b"].iloc[0]
    assert out["a"].dtype == object

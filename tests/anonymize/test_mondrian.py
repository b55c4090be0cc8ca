"""Mondrian: the paper's Table 1, a recursive reference, properties, pycanon, edge cases."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from broker.anonymize import AnonymizationError
from broker.anonymize.mondrian import mondrian
from broker.metrics import k_anonymity, sensitive_measure
from tests.anonymize.helpers import label_holds, read_fixture


def test_paper_table1_k3_on_age_and_gender():
    original = read_fixture("patients_original.csv")
    result = mondrian(original, ["Age", "Gender"], k=3)
    out = result.frame
    assert k_anonymity(out, ["Age", "Gender"]).k >= 3
    assert pycanon.k_anonymity(out, ["Age", "Gender"]) >= 3
    assert out.groupby(["Age", "Gender"]).size().min() >= 3
    assert result.suppressed_rows == 0 and len(out) == 9
    # Nine ages cut at their median: 25..40 (five rows) and 42..64 (four rows); neither half can
    # be cut again into two halves of three. Labels sit on a grid, never on the real ages.
    assert sorted(set(out["Age"])) == ["20-40", "40-80"]
    assert set(out["Gender"]) == {"F, M"}
    pd.testing.assert_frame_equal(
        out.drop(columns=["Age", "Gender"]), original.drop(columns=["Age", "Gender"])
    )
    # The paper's published table is 3-anonymous too, with the same kind of labels.
    published = read_fixture("patients_anonymized.csv")
    assert k_anonymity(published, ["Age", "Gender"]).k == 3


def test_input_is_not_modified():
    original = read_fixture("patients_original.csv")
    before = original.copy()
    mondrian(original, ["Age", "Gender"], k=2)
    pd.testing.assert_frame_equal(original, before)


def test_single_value_stays_itself_and_numbers_order_numerically():
    frame = pd.DataFrame({"age": ["9", "9", "10", "10", "100", "100"]})
    out = mondrian(frame, ["age"], k=2).frame
    assert out["age"].tolist() == ["9", "9", "10", "10", "100", "100"]
    frame = pd.DataFrame({"age": ["8", "9", "10", "11", "100", "101"]})
    out = mondrian(frame, ["age"], k=2).frame
    # Numerically 8 < 9 < 10 < 11 < 100 < 101; as text "10" < "100" < "101" < "11" < "8" < "9".
    assert out["age"].tolist() == ["8-10"] * 3 + ["0-150"] * 3


def test_numbers_are_written_in_shortest_form():
    frame = pd.DataFrame({"x": ["1.50", "2", "2.0", "3e0"], "y": [0.5, 0.25, 1.0, 2.0]})
    out = mondrian(frame, ["x", "y"], k=2).frame
    assert set(out["x"]) <= {"1.5-2", "2-3", "1.5-3", "2"}
    assert all(label_holds(label, value) for label, value in zip(out["y"], frame["y"], strict=True))


def test_categorical_labels_are_sorted_sets_that_name_no_rare_value():
    frame = pd.DataFrame({"g": ["M", "F", "X", "M", "F", "M", "F", "M", "F"]})
    out = mondrian(frame, ["g"], k=4).frame
    # X is held by one row (fewer than k): it is never named, only counted in as "*".
    assert sorted(set(out["g"])) == ["F", "M, *"]


def test_unique_values_are_never_listed():
    mails = [f"person{i}@example.org" for i in range(30)]
    out = mondrian(pd.DataFrame({"mail": mails}), ["mail"], k=3).frame
    assert set(out["mail"]) == {"*"}


def test_missing_values_are_a_value_written_na():
    frame = pd.DataFrame({"age": ["20", "21", "", "", "22", None], "sex": ["F"] * 6})
    out = mondrian(frame, ["age", "sex"], k=2).frame
    assert k_anonymity(out, ["age", "sex"]).k >= 2
    for label, value in zip(out["age"], frame["age"], strict=True):
        assert label_holds(label, value), (label, value)
    assert "NA" in set(out["age"])


def test_unicode_categories():
    frame = pd.DataFrame(
        {"ville": ["Thiès", "Dakar", "Saint-Louis", "Thiès", "Dakar", "Ziguinchor"]}
    )
    frame = pd.concat([frame, frame], ignore_index=True)
    out = mondrian(frame, ["ville"], k=3).frame
    # Saint-Louis and Ziguinchor are held by two rows each, fewer than k: counted in as "*".
    assert set(out["ville"]) == {"Dakar, *", "Thiès, *"}


def test_integer_and_categorical_dtypes():
    frame = pd.DataFrame(
        {"age": np.array([30, 31, 32, 33, 34, 35]), "sex": pd.Categorical(list("FMFMFM"))}
    )
    out = mondrian(frame, ["age", "sex"], k=3).frame
    assert set(out["age"]) == {"30-32", "33-35"}


def test_dates_become_calendar_units():
    frame = pd.DataFrame(
        {
            "admitted": ["2024-03-17", "2024-03-02", "2023-12-31", "2024-01-15", "", "2024-02"],
            "stamp": pd.to_datetime(
                ["2024-01-01", "2024-01-02", "2024-02-01", None, "2024-03-01", "2024-03-05"]
            ),
        }
    )
    out = mondrian(frame, ["admitted"], k=3).frame
    # In time, not as text: 2023-12-31 < 2024-01-15 < 2024-02 (February 1st), then 2024-03-02 <
    # 2024-03-17 < missing.
    # Calendar units, not the real dates: the month both dates share, the years the others span.
    assert out["admitted"].tolist() == [
        "2024-03, NA",
        "2024-03, NA",
        "2023/2024",
        "2023/2024",
        "2024-03, NA",
        "2023/2024",
    ]
    out = mondrian(frame, ["stamp"], k=2).frame
    assert sorted(set(out["stamp"])) == ["2024", "2024-03, NA"]


def test_booleans_are_categories_not_numbers():
    frame = pd.DataFrame({"flag": [True, False, True, False]})
    labels = set(mondrian(frame, ["flag"], k=2).frame["flag"])
    assert labels <= {"False", "True", "False, True"}


def test_fewer_rows_than_k_fails_within_the_suppression_limit():
    frame = read_fixture("patients_original.csv")
    with pytest.raises(AnonymizationError, match="k = 10 needs at least 10 rows"):
        mondrian(frame, ["Age", "Gender"], k=10, max_suppression=0.5)
    result = mondrian(frame, ["Age", "Gender"], k=10, max_suppression=1.0)
    assert result.suppressed_rows == 9 and len(result.frame) == 0
    assert (result.class_ids == -1).all()


def test_l_that_the_table_cannot_reach_fails_clearly():
    frame = pd.DataFrame({"age": [str(i) for i in range(10)], "s": ["a", "b"] * 5})
    with pytest.raises(AnonymizationError, match="fewer than l = 3 distinct values"):
        mondrian(frame, ["age"], k=2, sensitive=["s"], l=3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"quasi_identifiers": ["zip"], "k": 2}, "Quasi-identifier 'zip'"),
        ({"quasi_identifiers": [], "k": 2}, "No quasi-identifier"),
        ({"quasi_identifiers": ["Age"], "k": 0}, "k must be an integer >= 1"),
        ({"quasi_identifiers": ["Age"], "k": 2, "l": 2}, "needs at least one sensitive"),
        ({"quasi_identifiers": ["Age"], "k": 2, "sensitive": ["Age"]}, "both quasi-identifier"),
        ({"quasi_identifiers": ["Age"], "k": 2, "sensitive": ["x"]}, "Sensitive attribute 'x'"),
        ({"quasi_identifiers": ["Age"], "k": 2, "max_suppression": 2}, "share of rows"),
        ({"quasi_identifiers": ["Age", "Age"], "k": 2}, "given twice"),
    ],
)
def test_bad_arguments(kwargs, message):
    frame = read_fixture("patients_original.csv")
    with pytest.raises(ValueError, match=message):
        mondrian(frame, **kwargs)


def test_no_rows():
    with pytest.raises(ValueError, match="no rows"):
        mondrian(pd.DataFrame({"a": []}), ["a"], k=1)


def reference_classes(frame, qis, k, sensitive=(), l=None):
    """Per-partition recursive Mondrian written straight from the paper, with the same rules."""
    positions, spans = [], []
    for name in qis:
        values = frame[name].tolist()
        try:
            pos = [float(v) for v in values]
        except ValueError:
            ranks = {v: i for i, v in enumerate(sorted(set(map(str, values))))}
            pos = [float(ranks[str(v)]) for v in values]
        positions.append(pos)
        spans.append(max(pos) - min(pos))
    found = []

    def diverse(rows):
        return l is None or all(len({frame[s].iloc[r] for r in rows}) >= l for s in sensitive)

    def split(rows):
        widths = []
        for d, pos in enumerate(positions):
            values = [pos[r] for r in rows]
            if len(rows) >= 2 * k and max(values) > min(values):
                widths.append(((max(values) - min(values)) / spans[d], d))
        for _width, d in sorted(widths, key=lambda item: (-item[0], item[1])):
            pos = positions[d]
            median = sorted(pos[r] for r in rows)[(len(rows) - 1) // 2]
            below = [r for r in rows if pos[r] < median]
            up_to = [r for r in rows if pos[r] <= median]

            def allowed(left):
                right = [r for r in rows if r not in set(left)]
                ok = len(left) >= k and len(right) >= k
                return ok and diverse(left) and diverse(right), right

            below_ok, below_right = allowed(below)
            up_to_ok, up_to_right = allowed(up_to)
            n = len(rows)
            if up_to_ok and (not below_ok or abs(2 * len(up_to) - n) <= abs(2 * len(below) - n)):
                split(up_to)
                split(up_to_right)
                return
            if below_ok:
                split(below)
                split(below_right)
                return
        found.append(frozenset(rows))

    split(list(range(len(frame))))
    return set(found)


rows_strategy = st.lists(
    st.tuples(
        st.integers(18, 40),
        st.sampled_from(["F", "M"]),
        st.sampled_from(["57001", "57002", "57140", "99000", "12345"]),
        st.sampled_from(["flu", "hiv", "cold", "measles", "cancer"]),
    ),
    min_size=1,
    max_size=70,
)


def to_frame(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["age", "sex", "zip", "disease"]).astype(str)
    frame.index = pd.RangeIndex(100, 100 + len(frame))  # a non-default index must survive
    return frame


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows_strategy,
    st.integers(1, 6),
    st.sampled_from([None, 2, 3]),
    st.sampled_from([("age",), ("age", "sex"), ("sex", "zip", "age")]),
)
def test_properties_against_metrics_pycanon_and_a_reference(rows, k, l, qis):
    frame = to_frame(rows)
    qis = list(qis)
    sensitive = ["disease"] if l else []
    possible = len(frame) >= k and (l is None or frame["disease"].nunique() >= l)
    if not possible:
        with pytest.raises(AnonymizationError):
            mondrian(frame, qis, k, sensitive=sensitive, l=l)
        result = mondrian(frame, qis, k, sensitive=sensitive, l=l, max_suppression=1.0)
        assert result.suppressed_rows == len(frame) and result.frame.empty
        return

    result = mondrian(frame, qis, k, sensitive=sensitive, l=l)
    out = result.frame
    # No row lost beyond the reported suppressions (here none), order and index kept.
    assert result.suppressed_rows == 0
    assert out.index.equals(frame.index)
    pd.testing.assert_frame_equal(out.drop(columns=qis), frame.drop(columns=qis))
    # Every label is true of its row.
    for name in qis:
        assert all(label_holds(a, b) for a, b in zip(out[name], frame[name], strict=True))
    # Re-measured by broker.metrics and by pycanon, agreeing, every class >= k.
    ours = k_anonymity(out, qis).k
    assert ours >= k
    assert ours == pycanon.k_anonymity(out.reset_index(drop=True), qis)
    assert result.classes == k_anonymity(out, qis).equivalence_classes
    if l:
        ours_l = sensitive_measure(out, qis, "disease").l_diversity
        assert ours_l >= l
        assert ours_l == pycanon.l_diversity(out.reset_index(drop=True), qis, ["disease"])
    # The same partition as the per-partition recursive reference.
    classes = {}
    for position, class_id in enumerate(result.class_ids):
        classes.setdefault(class_id, set()).add(position)
    expected = reference_classes(frame.reset_index(drop=True), qis, k, sensitive, l)
    assert {frozenset(c) for c in classes.values()} == expected


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 30))
def test_larger_random_frames_keep_every_class_at_least_k(seed, k):
    rng = np.random.default_rng(seed)
    rows = 2000
    frame = pd.DataFrame(
        {
            "age": rng.integers(17, 90, rows),
            "income": np.round(rng.lognormal(10, 1, rows), 2).astype(str),
            "country": rng.choice([f"c{i:03d}" for i in range(300)], rows),  # > 256 categories
            "sex": rng.choice(["F", "M"], rows),
            "disease": rng.choice(["a", "b", "c", "d"], rows),
        }
    )
    qis = ["age", "income", "country", "sex"]
    result = mondrian(frame, qis, k, sensitive=["disease"], l=2)
    sizes = result.frame.groupby(qis).size()
    assert sizes.min() >= k
    assert k_anonymity(result.frame, qis).k == sizes.min()
    assert sensitive_measure(result.frame, qis, "disease").l_diversity >= 2
    assert len(result.frame) == rows
    for name in ("income", "country"):
        sample = rng.choice(rows, 50, replace=False)
        assert all(label_holds(result.frame[name].iloc[i], frame[name].iloc[i]) for i in sample)


def test_an_outlier_near_the_largest_float_cannot_expose_the_real_bounds():
    """Two rows at +-1e308 made the column's span overflow and the labels fall back to the
    classes' real extremes (red-team finding): labels now stay on the grid or say nothing."""
    values = [10000 + 7 * i for i in range(298)] + [1e308, -1e308]
    frame = pd.DataFrame({"ref": [str(v) for v in values]})
    out = mondrian(frame, ["ref"], k=3).frame
    real = {str(v) for v in values}
    for label in set(out["ref"]):
        assert not set(label.split("-")) & real, label


def test_with_who_the_rows_are_every_class_holds_k_people():
    # Eight people, each three rows with an age of their own: classes of 3 rows would be one
    # person each; counted in people, every class holds 2 of them.
    frame = pd.DataFrame(
        {"age": [str(20 + 5 * p) for p in range(8) for _ in range(3)], "sex": ["F"] * 24}
    )
    person = np.repeat(np.arange(8), 3)
    by_rows = mondrian(frame, ["age", "sex"], k=3)
    assert min(np.bincount(by_rows.class_ids)) >= 3
    assert by_rows.classes == 8  # each person alone
    by_people = mondrian(frame, ["age", "sex"], k=2, people=[person])
    holders = pd.Series(person).groupby(by_people.class_ids).nunique()
    assert holders.min() >= 2 and by_people.classes == 4
    with pytest.raises(AnonymizationError, match="at least 9 people"):
        mondrian(frame, ["age"], k=9, people=[person])

"""Information loss: hand-computed values on tiny frames."""

from math import log2

import pandas as pd
import pytest

from broker.anonymize import information_loss
from broker.anonymize.mondrian import mondrian
from tests.anonymize.helpers import read_fixture


def entropy_bits(*counts: int) -> float:
    n = sum(counts)
    return -sum(c / n * log2(c / n) for c in counts)


def test_generalized_range_loses_the_conditional_entropy():
    original = pd.DataFrame({"age": ["20", "20", "30", "40"]})
    anonymized = pd.DataFrame({"age": ["20-30", "20-30", "20-30", "40"]})
    loss = information_loss(original, anonymized, ["age"])
    lost = 3 * entropy_bits(2, 1)
    most = 4 * entropy_bits(2, 1, 1)
    assert loss.utility_percent == pytest.approx(100 * (1 - lost / most))
    assert loss.attribute_utility_percent == {"age": pytest.approx(100 * (1 - lost / most))}
    assert loss.discernibility == 3**2 + 1**2
    assert (loss.suppressed_rows, loss.suppressed_cell_share) == (0, 0.0)


def test_suppressed_rows_cost_the_whole_domain_and_n_each():
    original = pd.DataFrame({"age": ["20", "20", "30", "40"], "sex": list("FFMM")})
    kept = pd.DataFrame({"age": ["20-30", "20-30"], "sex": ["*", "*"]})
    loss = information_loss(original, kept, ["age", "sex"])
    # Kept rows: both age 20 and sex F, so nothing is unknown within their published values.
    # Suppressed rows 30 and 40 cost -log2(1/4) = 2 bits of age each; M, M cost 1 bit of sex each.
    assert loss.attribute_utility_percent["age"] == pytest.approx(100 * (1 - 4 / 6))
    assert loss.attribute_utility_percent["sex"] == pytest.approx(100 * (1 - 2 / 4))
    assert loss.utility_percent == pytest.approx(100 * (1 - 6 / 10))
    assert loss.discernibility == 2**2 + 2 * 4
    assert loss.suppressed_rows == 2
    # 2 suppressed rows x 2 columns + 2 masked sex cells, of 8 cells.
    assert loss.suppressed_cell_share == pytest.approx(6 / 8)


def test_dropped_column_loses_everything_and_counts_its_cells():
    original = pd.DataFrame({"nin": ["1", "2", "3"], "age": ["20", "20", "30"]})
    published = original.drop(columns=["nin"])
    loss = information_loss(original, published, ["nin", "age"])
    assert loss.attribute_utility_percent == {"nin": 0.0, "age": 100.0}
    most_nin, most_age = 3 * log2(3), 3 * entropy_bits(2, 1)
    assert loss.utility_percent == pytest.approx(100 * most_age / (most_nin + most_age))
    assert loss.suppressed_cell_share == pytest.approx(3 / 6)
    assert loss.discernibility == 2**2 + 1**2


def test_nothing_changed_keeps_everything_and_constant_columns_cannot_lose():
    original = pd.DataFrame({"a": ["x", "y", "y"], "c": ["k", "k", "k"]})
    loss = information_loss(original, original, ["a", "c"])
    assert loss.utility_percent == 100.0
    assert loss.attribute_utility_percent == {"a": 100.0, "c": 100.0}
    assert loss.discernibility == 1 + 4
    masked_constant = original.assign(c="*")
    assert information_loss(original, masked_constant, ["c"]).utility_percent == 100.0


def test_an_already_masked_cell_is_not_counted_again():
    original = pd.DataFrame({"a": ["*", "x"]})
    published = pd.DataFrame({"a": ["*", "*"]})
    assert information_loss(original, published, ["a"]).suppressed_cell_share == 0.5


def test_paper_table1_after_mondrian_by_hand():
    original = read_fixture("patients_original.csv")
    published = mondrian(original, ["Age", "Gender"], k=3).frame
    loss = information_loss(original, published, ["Age", "Gender"])
    # Age: 9 distinct of 9; classes 25..40 (5 distinct) and 42..64 (4 distinct).
    # Gender: 5 F, 4 M, all published as "F, M".
    lost = 5 * log2(5) + 4 * log2(4) + 9 * entropy_bits(5, 4)
    most = 9 * log2(9) + 9 * entropy_bits(5, 4)
    assert loss.utility_percent == pytest.approx(100 * (1 - lost / most))
    assert loss.attribute_utility_percent["Gender"] == pytest.approx(0.0)
    assert loss.discernibility == 5**2 + 4**2


def test_class_columns_choose_the_classes_of_the_discernibility_metric():
    original = pd.DataFrame({"a": ["1", "2", "3", "4"]})
    published = original.assign(group=[1, 1, 2, 2])
    loss = information_loss(original, published, ["a"], class_columns=["group"])
    assert loss.discernibility == 8


def test_errors():
    original = pd.DataFrame({"a": ["1", "2"]})
    with pytest.raises(ValueError, match="Quasi-identifier 'b'"):
        information_loss(original, original, ["b"])
    with pytest.raises(ValueError, match="Row 7 of the anonymized data is not in the original"):
        information_loss(original, original.set_axis([0, 7]), ["a"])
    with pytest.raises(ValueError, match="row labels repeat"):
        information_loss(original.set_axis([0, 0]), original.set_axis([0, 0]), ["a"])
    with pytest.raises(ValueError, match="no rows"):
        information_loss(original.iloc[:0], original.iloc[:0], ["a"])

"""The label grammar is written and read in one place (broker.anonymize.labels): whatever the
writers build, the reader reads back as what it was built from, and the labels the broker's
other writers produce (precision's top-codes and masks) read as the grammar says."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.anonymize.labels import (
    ANY,
    MISSING,
    SEPARATOR,
    mask_label,
    range_label,
    read_label,
    set_label,
    top_label,
    years_label,
)
from broker.columns import precision
from broker.fsla.linkage import Release, earlier_cells, label_holds

NUMBERS = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False, allow_subnormal=False)
# Categories: any text but the separator, the grammar's own words and other labels' shapes.
CATEGORIES = st.text(st.characters(codec="utf-8", exclude_characters=",*+/-"), min_size=1).filter(
    lambda c: c.strip() and c not in (ANY, MISSING) and read_label(c).plain
)


@given(low=NUMBERS, high=NUMBERS)
@settings(max_examples=300)
def test_a_range_reads_back_as_its_bounds(low, high):
    low, high = sorted((low, high))
    label = read_label(range_label(low, high))
    if low == high:
        assert label.number == low and label.range is None
    else:
        assert label.range == (low, high)  # format_number writes every digit a float has
        assert not label.plain


@given(first=st.integers(1000, 9999), span=st.integers(0, 50))
def test_years_read_back(first, span):
    last = min(first + span, 9999)
    assert read_label(years_label(first, last)).years == (first, last)


@given(age=st.integers(0, 140))
def test_a_top_category_reads_back_the_same_from_both_writers(age):
    assert read_label(top_label(age)).top == age
    assert read_label(precision.age_label(str(age + 7), age)).top == age + 1


@given(prefix=st.text("0123456789ABZ", min_size=1, max_size=6))
def test_a_mask_reads_back_its_prefix(prefix):
    assert read_label(mask_label(prefix)).prefix == prefix
    written = precision.postcode_label(prefix + "99", len(prefix))
    assert read_label(written).prefix == prefix


@given(members=st.lists(CATEGORIES, min_size=2, max_size=5, unique=True), missing=st.booleans())
def test_a_set_reads_back_its_members(members, missing):
    written = set_label([*members, *([MISSING] if missing else [])])
    label = read_label(written)
    assert [m.text for m in label.members] == [*members, *([MISSING] if missing else [])]
    assert all(m.plain for m in label.members[: len(members)])
    assert label.members[-1].missing == missing
    assert SEPARATOR in written and not label.plain


@given(category=CATEGORIES)
def test_a_category_reads_back_as_itself(category):
    label = read_label(category)
    assert label.plain and label.text == category


def test_the_grammar_words_are_the_precision_modules():
    assert (precision.MASK, precision.MISSING_LABEL) == (ANY, MISSING)


def test_people_in_a_top_category_are_found_in_the_earlier_release():
    """A class labelled ``90+`` holds the raw ages over 89: before the labels had one reader,
    the linkage check looked ``90+`` up as a category and counted those people absent."""
    release = Release("t1", None, ("age",), (), ((("90+",), 3), (("80-89",), 4)), 2)
    dictionaries = {"age": pd.Series(["93", "85", "70"])}
    codes = {"age": np.array([0, 1, 2])}
    assert earlier_cells(dictionaries, codes, release).tolist() == [0, 1, -1]
    assert label_holds("90+", dictionaries["age"]).tolist() == [True, False, False]

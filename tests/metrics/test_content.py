"""The kind of a column's values, against the pandas reading it was first written as."""

import datetime

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metrics.content import CODE, DATE, NUMBER, TEXT, content_of


def reference_kind(values: list) -> str:
    """The kind as one pandas Series reads it (the broker's first implementation, kept here as
    the oracle of the faster one)."""
    series = pd.Series(values, dtype=object)
    if series.map(lambda v: isinstance(v, bool)).any():
        return TEXT
    numbers = pd.to_numeric(series, errors="coerce")
    if numbers.notna().all() and np.isfinite(numbers.to_numpy(dtype=float)).all():
        return NUMBER
    if series.map(lambda v: isinstance(v, datetime.date | np.datetime64)).all():
        return DATE
    text = series.astype(str)
    if text.str.contains(r"^\d{4}-\d{2}").all():
        parsed = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
        if parsed.notna().all():
            return DATE
    code_like = ~text.str.contains(r"\s") & text.str.contains(r"\d")
    if (code_like | text.str.contains(r"\d{4}")).all():
        return CODE
    return TEXT


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        (["28", "31.5", "-4", "+7", ".5", "1e3", " 12 "], NUMBER),
        (["28", "inf"], TEXT),
        (["1", "nan"], TEXT),
        (["12", "twelve"], TEXT),
        (["2024-01-31", "2023-12-01T10:00:00Z"], DATE),
        (["2024-13-45"], CODE),
        (["2024-01", "2024-02"], DATE),
        (["A123", "ref 1492552"], CODE),
        (["ref 12", "A1"], TEXT),
        (["20-30", "30-40"], CODE),
        (["Dakar", "Thiès", "Saint-Louis"], TEXT),
        (["٣٤", "12"], CODE),
        ([1, 2.5], NUMBER),
        ([1, float("inf")], TEXT),
        ([True, "1"], TEXT),
        ([datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 2)], DATE),
        ([np.datetime64("2024-01-01")], DATE),
        ([b"A1", "B2"], CODE),
        (["1", 2], NUMBER),
    ],
)
def test_value_kinds(values, kind):
    assert reference_kind(values) == kind
    assert content_of(values).values == kind


# Text shaped like numbers, dates, codes and words, and the other types JSON and Parquet give.
_PIECES = st.sampled_from(
    [
        "1",
        "07",
        "2024",
        "-",
        "-01",
        "-12-31",
        ".",
        "5",
        "e",
        "E3",
        " ",
        "a",
        "ref",
        "T10:00",
        "Z",
        "+",
        "inf",
        "nan",
        "٣",
        "\u00a0",
        "/",
        ":",
        "x9",
    ]
)
_TEXT = st.lists(_PIECES, min_size=1, max_size=5).map("".join)
_VALUE = st.one_of(
    _TEXT,
    _TEXT,
    _TEXT,
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False),
    st.booleans(),
    st.dates(),
    _TEXT.map(str.encode),
)


def expected_kind(values: list) -> str:
    present = [v for v in values if not (isinstance(v, str) and not v.strip())]
    return reference_kind(present) if present else TEXT


@settings(max_examples=400, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=8))
def test_text_values_read_as_pandas_reads_them(values):
    assert content_of(values).values == expected_kind(values)


@settings(max_examples=400, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=8))
def test_other_values_read_as_pandas_reads_them(values):
    assert content_of(values).values == expected_kind(values)

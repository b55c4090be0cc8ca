"""``dictionary_of``: a column's distinct values as the contract hands them over (objects, a
missing value as None, numbered 0..m-1), whatever pandas dtype the engine held them in."""

import numpy as np
import pandas as pd
import pytest

from broker.engines.base import dictionary_of


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (pd.Series(["a", None, np.nan, "b"], index=[3, 4, 5, 6]), ["a", None, None, "b"]),
        (pd.Series([1.5, np.nan]), [1.5, None]),
        (pd.Series([1, None], dtype="Int64"), [1, None]),
        (pd.Series(["x", None], dtype="string"), ["x", None]),
        (pd.Series([True, False]), [True, False]),
        (pd.Series(pd.to_datetime(["2020-01-02", None])), [pd.Timestamp("2020-01-02"), None]),
    ],
)
def test_objects_with_none_for_missing_numbered_from_zero(values, expected):
    before = values.copy()
    found = dictionary_of(values)
    assert found.dtype == object and list(found.index) == list(range(len(expected)))
    assert found.tolist() == expected
    assert [type(v) for v in found] == [type(v) for v in expected]
    pd.testing.assert_series_equal(values, before)  # the engine's own values are left alone

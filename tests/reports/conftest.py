"""Reports measured on small hand-built tables, as the CLI and the API produce them."""

from __future__ import annotations

import pandas as pd
import pytest

from broker.engines.pandas import PandasEngine
from broker.metrics.report import ReportOptions, report_of

HOSTILE = "<script>alert('x')</script>"


def measured(frame: pd.DataFrame, qi=(), sensitive=()) -> dict:
    """The report of ``frame`` as ``fedbroker analyze --format json`` prints it."""
    return report_of(
        PandasEngine(frame), qi, sensitive, ReportOptions(max_combination_size=0)
    ).as_dict()


def classes_frame() -> pd.DataFrame:
    """Ten records on (age, sex): one class of 1, three classes of 2, one class of 3.

    Class sizes 1: 1 class, 2: 3 classes, 3: 1 class; records at risk 100 %: 1, 50 %: 6,
    33 %: 3. Disease varies in every class of two or more.
    """
    rows = [
        ("30", "F", "flu"),  # alone
        ("40", "F", "flu"),
        ("40", "F", "hiv"),
        ("40", "M", "flu"),
        ("40", "M", "cold"),
        ("50", "F", "cold"),
        ("50", "F", "hiv"),
        ("60", "M", "flu"),
        ("60", "M", "hiv"),
        ("60", "M", "cold"),
    ]
    return pd.DataFrame(rows, columns=["age", "sex", "disease"])


@pytest.fixture
def classes_report() -> dict:
    return measured(classes_frame(), ["age", "sex"], ["disease"])

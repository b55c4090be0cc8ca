"""Helpers shared by the anonymization tests."""

import re
from pathlib import Path

import pandas as pd

FIXTURES = Path(__file__).parents[1] / "fixtures"
RANGE = re.compile(r"(-?[\d.]+)-(-?[\d.]+)")


def read_fixture(name: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURES / name, dtype=str, keep_default_na=False)


def label_holds(label: str, value) -> bool:
    """Whether a Mondrian label (``"20-30"``, ``"F, M, *"``, ``"NA"``) covers ``value``."""
    parts = label.split(", ")
    if value is None or (isinstance(value, float) and value != value) or str(value).strip() == "":
        return "NA" in parts
    parts = [part for part in parts if part != "NA"]
    if "*" in parts:  # a value too rare to be named (held by fewer than k rows)
        return True
    try:
        number = float(value)
    except ValueError:
        return str(value) in parts
    for part in parts:
        found = RANGE.fullmatch(part)
        if found and float(found.group(1)) <= number <= float(found.group(2)):
            return True
        if not found and float(part) == number:
            return True
    return False

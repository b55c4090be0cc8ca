"""Seed F-SLA files: the shipped ones are valid; a bad one is named with field and reason."""

import re

import pytest

from broker.policies.seed import PolicyFileError, load_records
from tests.conftest import POLICIES

GOOD = """jurisdiction: SN
name: Senegal
legal_basis: Law No. 2008-12
authority: CDP
allowed_purposes: [research]
"""


def test_shipped_records_are_valid():
    codes = {r.jurisdiction for r in load_records(POLICIES)}
    assert codes >= {"SN", "NG", "FR", "KE"}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "sn.yaml",
            GOOD + "cross_border_export:\n  min_k: 0\n",
            "sn.yaml: field 'cross_border_export.min_k': Input should be greater than or equal",
        ),
        ("sn.yaml", GOOD + "colour: blue\n", "field 'colour': not a field here; the fields: jur"),
        (
            "sn.yaml",
            GOOD + "cross_border_export:\n  min_kk: 3\n",
            "field 'cross_border_export.min_kk': not a field here (did you mean 'min_k'?)",
        ),
        (
            "sn.yaml",
            GOOD.replace("allowed_purposes: [research]\n", ""),
            "field 'allowed_purposes': Field required",
        ),
        (  # the validator's own words, without pydantic's "Value error, " before them
            "sn.yaml",
            GOOD + "allowed_destinations: [france]\n",
            "sn.yaml: field 'allowed_destinations': 'france' is not a jurisdiction code",
        ),
        ("sn.yaml", "jurisdiction: [unclosed\n", "not valid YAML at line"),
        ("sn.yaml", "- a list\n", "must hold one F-SLA record"),
        ("fr.yaml", GOOD, "'SN' does not match the file name (expected 'FR')"),
    ],
)
def test_bad_file_names_file_field_and_reason(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(PolicyFileError, match=re.escape(message)):
        load_records(tmp_path)


def test_missing_folder(tmp_path):
    with pytest.raises(PolicyFileError, match="does not exist"):
        load_records(tmp_path / "nope")

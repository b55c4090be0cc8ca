"""Reading an identifier written down a column's rows: which columns are read, and the runs
read the same whatever the values' types (typed digits, missing values, blanks)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from broker.engines.pandas import PandasEngine
from broker.metrics.content import may_spell_down, vertical_content
from broker.metrics.report import report_of


def test_a_column_without_pieces_is_not_read():
    assert not may_spell_down(["flu", "tb", "ok", "late", "", None, "  "])
    assert not may_spell_down([12345, 2.5e9, "ABC"])  # three capitals: not an IBAN's country


def test_a_column_with_one_piece_is_read():
    assert may_spell_down(["pending", " 4 "])
    assert may_spell_down(["pending", 7])  # a typed digit
    assert may_spell_down(["pending", "FR"])  # an IBAN's country
    assert may_spell_down(["pending", float("nan"), 4111.0])  # 4111.0 reads "4111"


def test_typed_digits_and_missing_values_spell_the_same_card():
    card = [int(c) for c in "4111111111111111"]
    typed = ["ok", "seen", *card, None, "late"]
    text = ["ok", "seen", *map(str, card), "", "late"]
    assert vertical_content("notes", typed).what == "Visa card number"
    assert vertical_content("notes", text).what == "Visa card number"


def test_a_run_is_cut_by_a_longer_value_not_by_a_blank():
    cut = ["ok", *"41111111", "pending", *"11111111", "ok"]
    assert vertical_content("notes", cut) is None  # two runs of 8 digits: no card
    kept = ["ok", *"41111111", "", None, *"11111111", "ok"]
    assert vertical_content("notes", kept).what == "Visa card number"


def test_the_second_run_is_read_after_a_first_that_holds_nothing():
    rows = ["ok", *"1234567", "pending", *"4111111111111111", "late"]
    assert vertical_content("notes", rows).what == "Visa card number"


def test_a_report_finds_a_card_down_the_rows_and_skips_a_column_of_words():
    rng = np.random.default_rng(3)
    notes = ["ok", "late", *"4111111111111111", *rng.choice(["ok", "late", "seen"], 60)]
    frame = pd.DataFrame({"notes": notes, "disease": rng.choice(["flu", "tb"], len(notes))})
    found = {a.name: a.content.direct_identifier for a in report_of(PandasEngine(frame)).attributes}
    assert found == {"notes": "payment_card", "disease": None}

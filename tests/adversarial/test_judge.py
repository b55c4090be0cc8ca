"""The judge itself: it must flag each leak the suite relies on it to see (no broker involved)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from tests.adversarial import judge
from tests.adversarial.tables import harmless, parquet_bytes

CSV = {"content-type": "text/csv"}
JSON = {"content-type": "application/json"}
PARQUET = {"content-type": "application/vnd.apache.parquet"}


def test_accepts_coarse_data():
    body = harmless(60).to_csv(index=False).encode()
    assert judge.verdict(CSV, body, known=["age_band", "sex"]) == []


@pytest.mark.parametrize(
    "name", ["NIN", " nin ", "N\u0406N", "\u039d\u0399\u039d", "N\u200bIN", "N\u00adIN", "\uff2eIN"]
)
def test_flags_nin_however_spelled(name):
    frame = harmless(30).assign(**{name: "x"})
    problems = judge.verdict(CSV, frame.to_csv(index=False).encode())
    assert any(p.startswith("(a)") for p in problems), problems


def test_flags_an_identifier_and_small_classes():
    frame = harmless(30).assign(row=[f"r{i}" for i in range(30)])
    problems = judge.verdict(CSV, frame.to_csv(index=False).encode(), known=["row"])
    assert any(p.startswith("(b)") for p in problems)
    assert any(p.startswith("(c)") for p in problems)


def test_tells_json_spellings_apart():
    body = b'[{"a": 1}, {"a": 1.0}, {"a": "1"}, {"a": true}, {"a": 1}, {"a": 1}]'
    assert judge.smallest_class(judge.parse(JSON["content-type"], body), ["a"])[0] == 1


def test_finds_secrets_in_compressed_parquet_in_its_index_and_in_range_bounds():
    frame = harmless(30)
    frame.index = pd.Index([f"SN{100000 + i}" for i in range(30)], name="nin")
    body = parquet_bytes(frame, index=True, compression="zstd")
    problems = judge.verdict(PARQUET, body, secrets=["SN100007"])
    assert any(p.startswith("(d)") for p in problems), problems
    assert any(p.startswith("(e)") for p in problems), problems
    ranged = b"phone,sex\n[771234567-779000000],F\n[771234567-779000000],F\n"
    assert judge.leaked_secrets("text/csv", ranged, [771234567])


def test_finds_secrets_hidden_in_unused_parquet_categories():
    frame = harmless(30)
    frame["ward"] = pd.Categorical(["a"] * 30, categories=["a", "SN4242424242"])
    body = parquet_bytes(frame, compression="snappy")
    assert judge.leaked_secrets(PARQUET["content-type"], body, ["SN4242424242"])
    assert judge.parse(PARQUET["content-type"], io.BytesIO(body).getvalue()).shape == (30, 4)

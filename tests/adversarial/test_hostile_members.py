"""A hostile member cloud (sn-hospital, SN) tries to get identifying data to fr-research (FR).

The broker's promise: **identifying data never crosses the border**. Every test here is one
attack, SN -> FR, purpose ``research``, seed policies unchanged. Each must end either

* NOT approved: the answer's status is not ``approved`` (or the upload is refused with a clean
  4xx problem+json) and nothing reaches fr-research's inbox for that transfer id; or
* approved (possibly after ``anonymize=auto``), and the independent judge
  (:mod:`tests.adversarial.judge`) accepts the bytes fr-research actually received: no ``NIN``
  column however spelled, no identifier column, k >= 3 over what an attacker knows, none of the
  original identifying values anywhere in the bytes, no Parquet index or extra metadata.

"Attacker-known" columns are chosen per attack from what a neighbour, an employer or a public
register knows (birth date, zip code, sex, age...), whatever the sender declared: declaring a
column ``sensitive`` does not make it unknown to the attacker.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial import judge
from tests.adversarial.conftest import assert_clean_refusal, settle, settle_response
from tests.adversarial.tables import (
    AGE_BANDS,
    DIAGNOSES,
    FIRST_NAMES,
    LAST_NAMES,
    birth_dates,
    csv_bytes,
    emails,
    harmless,
    national_ids,
    parquet_bytes,
    phone_numbers,
    rng,
    serialize,
)
from tests.conftest import FIXTURES

AUTO = ["none", "auto"]


def parquet_table_bytes(table: pa.Table, **options) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, **options)
    return out.getvalue()


# --- control -----------------------------------------------------------------------------------


def test_control_harmless_table_is_approved_and_passes_the_judge(broker):
    """Control, not an attack: coarse data is approved, delivered, and the judge accepts it.

    Shows that the harness (real broker, delivery worker, inbox, judge) works, so that the
    failures below are the broker's.
    """
    answer = broker.send(
        csv_bytes(harmless()), quasi_identifiers="age_band,sex", sensitive="diagnosis"
    )
    assert answer["status"] == "approved", answer["rules"]
    assert settle(broker, answer, known=["age_band", "sex"]) is not None


# --- declaring identifying columns "sensitive" -------------------------------------------------


def unique_birth_zip(n: int = 400) -> pd.DataFrame:
    r = rng(21)
    zips = [f"{z:05d}" for z in r.choice(np.arange(10000, 99999), 60, replace=False)]
    return pd.DataFrame(
        {
            "birth_date": birth_dates(n),
            "zip": r.choice(zips, n),
            "sex": r.choice(["F", "M"], n),
            "diagnosis": r.choice(DIAGNOSES, n),
        }
    )


@pytest.mark.parametrize("anonymize", AUTO)
def test_every_column_declared_sensitive(broker, anonymize):
    """The reported bug: 400 rows of unique birth dates, zip codes, sex and diagnosis, with every
    column declared ``sensitive``.

    Sensitive attributes are judged by l and t, not by the identifier rule or k, and the broker
    infers quasi-identifiers only among *non*-sensitive columns: with everything sensitive there
    is no quasi-identifier left, the whole table is one class, and unique birth dates (each one
    names a person, with zip and sex) could cross the border untouched.
    """
    answer = broker.send(
        csv_bytes(unique_birth_zip()),
        sensitive="birth_date,zip,sex,diagnosis",
        anonymize=anonymize,
    )
    settle(broker, answer, known=["birth_date", "zip", "sex"])


@pytest.mark.parametrize("anonymize", AUTO)
def test_low_cardinality_columns_jointly_unique_declared_sensitive(broker, anonymize):
    """Age (70 values), 3-digit zip (50 values) and sex: each column alone is common, together
    they single out every one of 300 people; all of them are declared ``sensitive``.

    No column is an identifier on its own and none is a declared quasi-identifier, so only a
    joint k check over the columns an attacker knows can see that every row is unique.
    """
    r = rng(22)
    combos = list(itertools.product(range(18, 88), [f"{z}" for z in range(100, 150)], "FM"))
    picked = [combos[i] for i in r.choice(len(combos), 300, replace=False)]
    frame = pd.DataFrame(picked, columns=["age", "zip3", "sex"])
    frame["diagnosis"] = r.choice(DIAGNOSES, len(frame))
    answer = broker.send(csv_bytes(frame), sensitive="age,zip3,sex,diagnosis", anonymize=anonymize)
    settle(broker, answer, known=["age", "zip3", "sex"])


# --- the forbidden attribute NIN under other spellings -------------------------------------------

NIN_SPELLINGS = {
    "lower": "nin",
    "spaces": " NIN ",
    "title": "Nin",
    "fullwidth": "\uff2e\uff29\uff2e",
    "cyrillic-I": "N\u0406N",
    "greek-NIN": "\u039d\u0399\u039d",
    "zwsp": "N\u200bIN",
    "soft-hyphen": "N\u00adIN",
    "word-joiner": "N\u2060IN",
    "bom-inside": "N\ufeffIN",
    "leading-zwsp": "\u200bNIN",
}


def with_nin_column(name: str, n: int = 300) -> tuple[pd.DataFrame, list[str]]:
    """Harmless data plus a column of national ids under ``name``: 5 ids, one per age band, so
    that only the forbidden-attribute rule can stop it (it is not unique, and as a
    quasi-identifier it splits no class)."""
    frame = harmless(n)
    ids = national_ids(5, seed=31)
    frame.insert(1, name, [ids[AGE_BANDS.index(band)] for band in frame["age_band"]])
    return frame, ids


@pytest.mark.parametrize("anonymize", AUTO)
@pytest.mark.parametrize("spelling", list(NIN_SPELLINGS))
def test_forbidden_attribute_nin_under_another_spelling(broker, spelling, anonymize):
    """SN forbids exporting the attribute ``NIN``. The sender spells it with a look-alike
    (Cyrillic/Greek letters, fullwidth), zero-width characters (U+200B, soft hyphen U+00AD,
    U+2060, U+FEFF), another case or blanks: a name comparison that only NFKC-normalizes and
    case-folds lets the national ids through under a name that *reads* ``NIN``.
    """
    frame, ids = with_nin_column(NIN_SPELLINGS[spelling])
    response = broker.post(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids)


@pytest.mark.parametrize("anonymize", AUTO)
@pytest.mark.parametrize(
    "names", [("NIN", "nin"), ("NIN", "N\u200bIN")], ids=["case", "zero-width"]
)
def test_two_columns_whose_names_collide_once_normalized(broker, names, anonymize):
    """Two columns named alike once normalized (``NIN``/``nin``, ``NIN``/``N<U+200B>IN``).

    Rules and declarations compare names normalized: a rule or a ``drop NIN`` remedy may hit one
    column and miss its twin, and declarations become ambiguous. Such a file must be refused
    (422 problem+json) or at least never approved.
    """
    frame = harmless(300)
    ids = national_ids(10, seed=32)
    frame.insert(1, names[0], [ids[i % 5] for i in range(300)])
    frame.insert(2, names[1], [ids[5 + i % 5] for i in range(300)])
    response = broker.post(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    if response.status_code != 200:
        assert_clean_refusal(response, statuses=(422,))
        return
    answer = response.json()
    assert answer["status"] != "approved", (
        f"columns {names!r} collide once normalized, yet the transfer was approved"
    )
    settle(broker, answer)


# --- identifiers in disguise ---------------------------------------------------------------------


@pytest.mark.parametrize("anonymize", AUTO)
def test_identifier_split_across_two_columns(broker, anonymize):
    """A national id cut in two columns (first half, second half): 20 values each, so neither
    column is an identifier, but every (first, second) pair is unique: concatenated they give
    back the id of each of the 400 people."""
    r = rng(33)
    first = [f"{v:06d}" for v in r.choice(np.arange(10**5, 10**6), 20, replace=False)]
    second = [f"{v:06d}" for v in r.choice(np.arange(10**5, 10**6), 20, replace=False)]
    pairs = list(itertools.product(first, second))
    r.shuffle(pairs)
    frame = harmless(400, seed=34)
    frame.insert(0, "id_part1", [a for a, _ in pairs])
    frame.insert(1, "id_part2", [b for _, b in pairs])
    secrets = [a + b for a, b in pairs[:50]]
    answer = broker.send(csv_bytes(frame), sensitive="diagnosis", anonymize=anonymize)
    settle(
        broker,
        answer,
        known=["id_part1", "id_part2"],
        known_sets=[["id_part1", "id_part2", "age_band", "sex"]],
        secrets=secrets,
    )


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_identifier_as_float_jitter(broker, fmt):
    """Row number hidden in the last digits of a float: 1.0000000001, 1.0000000002, ...

    Every value is distinct (an identifier: it numbers the rows, and can be joined to the
    sender's own copy), but a measure that rounds floats, or prints them with few digits, sees
    one value.
    """
    frame = harmless(300, seed=35)
    frame["dose"] = [1.0 + (i + 1) * 1e-10 for i in range(len(frame))]
    data, name = serialize(frame, fmt)
    response = broker.post(data, name, quasi_identifiers="age_band,sex", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex", "dose"])


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_identifier_as_datetimes_with_times(broker, fmt):
    """Admission times one second apart: all distinct, so they number (and can re-identify)
    every row, while a measure that looks only at the date sees one day."""
    frame = harmless(300, seed=36)
    times = pd.Timestamp("2024-03-01 08:00:00") + pd.to_timedelta(np.arange(300), unit="s")
    frame["admitted"] = times if fmt == "parquet" else times.astype(str)
    data, name = serialize(frame, fmt)
    response = broker.post(data, name, quasi_identifiers="age_band,sex", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex", "admitted"])


# --- JSON tricks ---------------------------------------------------------------------------------


def test_json_nested_values_hold_identifiers(broker):
    """Identifiers tucked into nested objects: a measure that skips or stringifies nested values
    never sees them, and forwarding the original bytes would deliver them."""
    frame = harmless(60, seed=37)
    ids, phones = national_ids(60, seed=38), phone_numbers(60, seed=39)
    records = frame.to_dict(orient="records")
    for record, nin, phone in zip(records, ids, phones, strict=True):
        record["contact"] = {"nin": nin, "phone": phone}
    response = broker.post(json.dumps(records).encode(), "data.json", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids + phones)


def test_json_mixed_types_in_one_column(broker):
    """One column holds 1, "1", true and 1.0. Python/pandas count 1 == 1.0 (== True) as one
    value; the destination reading the JSON sees four spellings, i.e. extra bits per row that
    split classes the broker measured as k = 3 into classes of one or two."""
    r = rng(40)
    codes = [1, 1, 1.0, "1", "1", "1", True, True, True]
    records = [
        {"age_band": band, "sex": sex, "code": code, "diagnosis": str(r.choice(DIAGNOSES))}
        for band in AGE_BANDS
        for sex in "FM"
        for code in codes
    ]
    response = broker.post(
        json.dumps(records).encode(),
        "data.json",
        quasi_identifiers="age_band,sex,code",
        sensitive="diagnosis",
    )
    settle_response(broker, response, known=["age_band", "sex", "code"])


def test_json_duplicate_keys_smuggle_identifiers(broker):
    """``{"note": "<national id>", ..., "note": "n/a"}``: the parser keeps the last value, so the
    broker measures a constant column, while the bytes still carry every national id."""
    frame = harmless(120, seed=41)
    ids = national_ids(120, seed=42)
    lines = []
    for nin, row in zip(ids, frame.to_dict(orient="records"), strict=True):
        fields = [f'"note": "{nin}"'] + [f'"{k}": {json.dumps(v)}' for k, v in row.items()]
        lines.append("{" + ", ".join([*fields, '"note": "n/a"']) + "}")
    data = ("[" + ",\n".join(lines) + "]").encode()
    response = broker.post(
        data, "data.json", quasi_identifiers="age_band,sex", sensitive="diagnosis"
    )
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids)


def test_json_nan_and_null_spell_one_missing_value_two_ways(broker):
    """``null`` and ``NaN`` are both "missing" to pandas, one category to the broker; the
    destination's JSON parser tells them apart, so the spelling carries a bit per row that splits
    each class (2 NaN among 9 rows: classes of 2)."""
    r = rng(43)
    text_rows = []
    for band in AGE_BANDS:
        for sex in "FM":
            for i in range(9):
                value = "NaN" if i < 2 else "null"
                diagnosis = json.dumps(str(r.choice(DIAGNOSES)))
                text_rows.append(
                    f'{{"age_band": "{band}", "sex": "{sex}", "x": {value}, '
                    f'"diagnosis": {diagnosis}}}'
                )
    data = ("[" + ",\n".join(text_rows) + "]").encode()
    response = broker.post(
        data, "data.json", quasi_identifiers="age_band,sex", sensitive="diagnosis"
    )
    settle_response(broker, response, known=["age_band", "sex", "x"])


@pytest.mark.parametrize("anonymize", AUTO)
def test_json_infinity_literals(broker, anonymize):
    """``Infinity``, ``-Infinity`` and ``NaN`` in a numeric quasi-identifier (not JSON, but
    Python's parser takes them): ranges, medians and bins over infinities must not crash the
    broker (a clean decision or a clean 4xx, never a 500)."""
    r = rng(44)
    specials = ["Infinity", "-Infinity", "NaN"]
    rows = []
    for i in range(120):
        dose = specials[i % 3] if i % 10 == 0 else str(int(r.integers(1, 90)))
        rows.append(
            f'{{"age_band": "{AGE_BANDS[i % 5]}", "sex": "{"FM"[i % 2]}", "dose": {dose}, '
            f'"diagnosis": "{DIAGNOSES[i % 6]}"}}'
        )
    data = ("[" + ",\n".join(rows) + "]").encode()
    response = broker.post(
        data,
        "data.json",
        quasi_identifiers="age_band,sex,dose",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    assert response.status_code != 500, response.text
    settle_response(broker, response, known=["age_band", "sex", "dose"])


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'[{"a": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b"}]",
    ],
    ids=["arrays", "objects"],
)
def test_json_very_deep_nesting_is_a_clean_4xx(broker, data):
    """100,000 levels of nesting: Python's JSON parser raises RecursionError (not a
    JSONDecodeError). That must be a clean 4xx problem, never a 500 or a dead worker."""
    response = broker.post(data, "data.json")
    assert_clean_refusal(response)


# --- Parquet tricks ------------------------------------------------------------------------------


def test_parquet_dictionary_encoded_identifier(broker):
    """National ids in a dictionary-encoded Parquet column: a reader that measures the dictionary
    indices, or the dictionary's size, instead of the values could miss an identifier."""
    frame = harmless(300, seed=45)
    ids = national_ids(300, seed=46)
    table = pa.Table.from_pandas(frame, preserve_index=False).append_column(
        "nin_code", pa.array(ids).dictionary_encode()
    )
    data = parquet_table_bytes(table, use_dictionary=True)
    response = broker.post(data, "data.parquet", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids)


def test_parquet_categorical_identifier(broker):
    """National ids as a pandas categorical: codes are small integers, the categories are the
    ids; a measure over codes, or a delivery of the original file, leaks them."""
    frame = harmless(300, seed=47)
    ids = national_ids(300, seed=48)
    frame["patient"] = pd.Categorical(ids)
    response = broker.post(parquet_bytes(frame), "data.parquet", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids)


def test_parquet_unused_categories_smuggle_identifiers(broker):
    """A categorical column whose *used* values are three harmless wards, but whose category
    list (the Parquet dictionary) holds 300 national ids no row uses. The measured table is
    harmless; the original file carries every id."""
    frame = harmless(300, seed=49)
    ids = national_ids(300, seed=50)
    wards = ["ward-a", "ward-b", "ward-c"]
    frame["ward"] = pd.Categorical([wards[i % 3] for i in range(300)], categories=[*wards, *ids])
    response = broker.post(
        parquet_bytes(frame, compression=None),
        "data.parquet",
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
    )
    settle_response(broker, response, known=["age_band", "sex", "ward"], secrets=ids)


def test_parquet_timestamp_with_timezone_identifier(broker):
    """Identifiers as tz-aware timestamps (one distinct instant per person, Africa/Dakar): time
    zones and units are easy to mishandle when counting distinct values."""
    frame = harmless(300, seed=51)
    frame["seen_at"] = pd.date_range("2024-01-01", periods=300, freq="37min", tz="Africa/Dakar")
    response = broker.post(parquet_bytes(frame), "data.parquet", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex", "seen_at"])


def test_parquet_decimal_identifier(broker):
    """National ids as decimal128(14, 0): no digits appear in the file (fixed-length binary), but
    every reader gets them back exactly."""
    import decimal

    frame = harmless(300, seed=52)
    ids = national_ids(300, seed=53)
    table = pa.Table.from_pandas(frame, preserve_index=False).append_column(
        "nin_number", pa.array([decimal.Decimal(i) for i in ids], pa.decimal128(14, 0))
    )
    response = broker.post(parquet_table_bytes(table), "data.parquet", sensitive="diagnosis")
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids)


@pytest.mark.parametrize("anonymize", AUTO)
def test_parquet_pandas_index_holds_national_ids_and_names(broker, anonymize):
    """The columns are harmless; the pandas *index* (stored as extra Parquet columns named in
    the pandas metadata) holds each person's national id and name. A reader that rebuilds the
    index measures only the columns, and forwarding the original file delivers the index."""
    frame = harmless(300, seed=54)
    ids = national_ids(300, seed=55)
    r = rng(56)
    names = [f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)} {i:03d}" for i in range(300)]
    frame.index = pd.MultiIndex.from_arrays([ids, names], names=["nin", "full_name"])
    data = parquet_bytes(frame, index=True)
    response = broker.post(
        data,
        "data.parquet",
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    settle_response(broker, response, known=["age_band", "sex"], secrets=ids + names)


def test_parquet_null_and_nan_spell_one_missing_value_two_ways(broker):
    """A float column where Arrow keeps null and NaN apart but pandas reads both as NaN: the
    broker measures one "missing" value, and the original file carries one bit per row
    (null or NaN). The delivery must spell missing values one way."""
    frame = harmless(300, seed=76)
    bits = rng(77).integers(0, 2, len(frame))
    values = pa.array(
        [None if bit else float("nan") for bit in bits], type=pa.float64(), from_pandas=False
    )
    table = pa.Table.from_pandas(frame, preserve_index=False).append_column("x", values)
    response = broker.post(
        parquet_table_bytes(table),
        "data.parquet",
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
    )
    delivered = settle_response(broker, response, known=["age_band", "sex"])
    if delivered is None or judge.kind(delivered[0]["content-type"]) != "parquet":
        return
    received = pq.read_table(io.BytesIO(delivered[1]))
    if "x" in received.column_names:
        column = received.column("x")
        nulls = column.null_count
        nans = sum(v is not None and v != v for v in column.to_pylist())
        assert not (nulls and nans), f"missing values spelled two ways: {nulls} null, {nans} NaN"


MALFORMED_PANDAS_METADATA = {
    "not-json": b"{not json",
    "json-list": b"[1, 2, 3]",
    "missing-index-column": json.dumps(
        {"index_columns": ["__index_level_0__"], "column_indexes": [], "columns": []}
    ).encode(),
    "bogus-numpy-type": json.dumps(
        {
            "index_columns": [],
            "column_indexes": [],
            "columns": [
                {
                    "name": "sex",
                    "field_name": "sex",
                    "pandas_type": "datetimetz",
                    "numpy_type": "bogus",
                    "metadata": {"timezone": "Nowhere/City"},
                }
            ],
        }
    ).encode(),
    "zero-step-range-index": json.dumps(
        {
            "index_columns": [{"kind": "range", "name": None, "start": 0, "stop": 9, "step": 0}],
            "column_indexes": [],
            "columns": [],
        }
    ).encode(),
}


@pytest.mark.parametrize("variant", list(MALFORMED_PANDAS_METADATA))
def test_parquet_malformed_pandas_metadata_is_never_a_500(broker, variant):
    """A valid Parquet file whose ``pandas`` key-value metadata is broken: rebuilding the pandas
    frame from it raises JSONDecodeError, KeyError, TypeError or ValueError (none of them Arrow
    errors), which a reader that trusts the metadata turns into a 500.

    Accepted: a clean 4xx problem, or (a reader that ignores pandas metadata) a normal decision
    whose delivery the judge accepts, the broken metadata not forwarded.
    """
    table = pa.Table.from_pandas(harmless(300, seed=57), preserve_index=False)
    table = table.replace_schema_metadata({b"pandas": MALFORMED_PANDAS_METADATA[variant]})
    response = broker.post(
        parquet_table_bytes(table),
        "data.parquet",
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
    )
    assert response.status_code != 500, response.text
    settle_response(broker, response, known=["age_band", "sex"])


# --- CSV spellings the parser folds --------------------------------------------------------------

LINE = re.compile(rb"\r\n|\n|\r")


def raw_spellings(body: bytes) -> tuple[set[bytes], dict[tuple[int, str], set[bytes]]]:
    """Line terminators used, and for each (column, parsed value) the raw spellings seen."""
    terminators = set(LINE.findall(body))
    spellings: dict[tuple[int, str], set[bytes]] = {}
    for line in LINE.split(body)[1:]:
        if not line:
            continue
        for index, field in enumerate(line.split(b",")):
            value = field.strip(b'"').decode()
            spellings.setdefault((index, value), set()).add(field)
    return terminators, spellings


def test_csv_quoting_and_line_endings_smuggle_a_bit_per_row(broker):
    """Each row carries two hidden bits: ``"F"`` quoted or ``F`` bare, and a CRLF or LF line
    end. The parser folds both, so the broker measures harmless data; forwarding the original
    bytes hands the destination 2 bits per row (e.g. the parity of each person's national id).
    The delivery must spell every value one way and end every line alike."""
    frame = harmless(300, seed=58)
    r = rng(59)
    bits = r.integers(0, 2, size=(len(frame), 2))
    lines = [b"age_band,sex,diagnosis\n"]
    for (band, sex, diagnosis), (quote, crlf) in zip(
        frame.itertuples(index=False), bits, strict=True
    ):
        sex_field = f'"{sex}"' if quote else sex
        lines.append(f"{band},{sex_field},{diagnosis}".encode() + (b"\r\n" if crlf else b"\n"))
    data = b"".join(lines)
    answer = broker.send(data, quasi_identifiers="age_band,sex", sensitive="diagnosis")
    delivered = settle(broker, answer, known=["age_band", "sex"])
    if delivered is None:
        return
    _headers, body = delivered
    terminators, spellings = raw_spellings(body)
    assert len(terminators) <= 1, f"the delivery mixes line endings {terminators}"
    mixed = {key: forms for key, forms in spellings.items() if len(forms) > 1}
    assert not mixed, f"values spelled several ways in the delivery: {mixed}"


# --- tiny tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize("anonymize", AUTO)
@pytest.mark.parametrize("rows", [1, 2])
def test_one_and_two_row_datasets(broker, rows, anonymize):
    """One or two people: no class can hold 3 of them, and with one row a "distinct values"
    test is vacuous (one value is trivially all-distinct, or trivially not)."""
    frame = pd.DataFrame(
        {
            "birth_date": ["1961-04-17", "1987-11-02"][:rows],
            "zip": ["75013", "69007"][:rows],
            "sex": ["F", "M"][:rows],
            "diagnosis": ["malaria", "asthma"][:rows],
        }
    )
    response = broker.post(csv_bytes(frame), sensitive="diagnosis", anonymize=anonymize)
    settle_response(
        broker,
        response,
        known=["birth_date", "zip", "sex"],
        secrets=["1961-04-17", "1987-11-02", "75013", "69007"][: 2 * rows],
    )


# --- copies of one person ------------------------------------------------------------------------


def triplicated_people(people: int = 40) -> pd.DataFrame:
    """``people`` people with a unique (age, zip, sex, diagnosis) each, every row sent 3 times."""
    r = rng(60)
    combos = list(itertools.product(range(20, 80), [f"{z}" for z in range(75001, 75021)], "FM"))
    picked = [combos[i] for i in r.choice(len(combos), people, replace=False)]
    one = pd.DataFrame(picked, columns=["age", "zip", "sex"])
    one["diagnosis"] = [DIAGNOSES[i % len(DIAGNOSES)] for i in range(people)]
    one.insert(0, "patient_id", [f"P{i:04d}" for i in range(people)])
    return pd.concat([one] * 3, ignore_index=True)


def people_of(delivered: pd.DataFrame, original: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Which original person each delivered (unanonymized) row is, by its full row."""
    key = original[columns].astype(str).agg("|".join, axis=1)
    lookup = dict(zip(key, original["patient_id"], strict=False))
    found = delivered[columns].astype(str).agg("|".join, axis=1).map(lookup)
    assert found.notna().all(), "delivered rows that are not rows of the upload"
    return found


def test_exactly_k_with_three_copies_of_one_person(broker):
    """Every class has exactly 3 rows, and they are 3 copies of one person's row. Counted in rows
    k = 3; counted in people k = 1. Without a ``person_key`` the broker cannot tell three people
    from one person sent three times, so it must not approve a class of identical copies."""
    frame = triplicated_people()
    columns = ["age", "zip", "sex", "diagnosis"]
    answer = broker.send(csv_bytes(frame[columns]), quasi_identifiers="age,zip,sex")
    delivered = settle(broker, answer, known=["age", "zip", "sex"])
    if delivered is None:
        return
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    table["person"] = people_of(table, frame, columns).to_numpy()
    problems = judge.k_anonymity(table, ["age", "zip", "sex"], person="person")
    assert problems == [], problems


@pytest.mark.parametrize("anonymize", AUTO)
def test_exactly_k_with_person_key_declared(broker, anonymize):
    """The same three copies per person, now with ``person_key=patient_id``: the broker must
    count distinct people per class (k = 1 here, not 3) and never forward ``patient_id``."""
    frame = triplicated_people()
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age,zip,sex",
        person_key="patient_id",
        anonymize=anonymize,
    )
    patient_ids = sorted(set(frame["patient_id"]))
    delivered = settle(broker, answer, known=["age", "zip", "sex"], secrets=patient_ids)
    if delivered is None:
        return
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    assert "patient_id" not in table.columns, "the person key column was forwarded"
    if anonymize == "none":
        columns = ["age", "zip", "sex", "diagnosis"]
        table["person"] = people_of(table, frame, columns).to_numpy()
        problems = judge.k_anonymity(table, ["age", "zip", "sex"], person="person")
        assert problems == [], problems


def test_person_key_column_is_never_forwarded(broker):
    """Each person has two visits (rows); 6 people per (age band, sex) class. With
    ``person_key=patient_id`` the broker counts people, and must never forward the
    ``patient_id`` column (a pseudonym that links the two visits and the sender's records)."""
    r = rng(61)
    rows = []
    person = 0
    for band in AGE_BANDS:
        for sex in "FM":
            for _ in range(6):
                for _visit in range(2):
                    rows.append((f"P{person:04d}", band, sex, str(r.choice(DIAGNOSES))))
                person += 1
    frame = pd.DataFrame(rows, columns=["patient_id", "age_band", "sex", "diagnosis"])
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        person_key="patient_id",
    )
    delivered = settle(
        broker, answer, known=["age_band", "sex"], secrets=sorted(set(frame["patient_id"]))
    )
    if delivered is not None:
        table = judge.parse(delivered[0]["content-type"], delivered[1])
        assert "patient_id" not in table.columns


@pytest.mark.parametrize("anonymize", AUTO)
def test_duplicated_rows_do_not_count_as_people(broker, anonymize):
    """Each (age band, sex) class holds 2 people, each sent 2 or 3 times as identical rows: in
    rows k >= 4, l = 2 (the two differ in diagnosis) and t = 0.67, so everything passes when
    duplicates are counted as people; in people k = 2. Approved as sent, every class must hold 3
    distinct people; after anonymization the judge checks k over the delivered rows."""
    rows = []
    person = 0
    for c, (band, sex) in enumerate(itertools.product(AGE_BANDS, "FM")):
        for j in range(2):
            row = (f"P{person:04d}", band, sex, DIAGNOSES[(2 * c + j) % len(DIAGNOSES)])
            rows += [row] * (2 + (person % 2))
            person += 1
    frame = pd.DataFrame(rows, columns=["patient_id", "age_band", "sex", "diagnosis"])
    columns = ["age_band", "sex", "diagnosis"]
    answer = broker.send(
        csv_bytes(frame[columns]),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    delivered = settle(broker, answer, known=["age_band", "sex"])
    if delivered is None or answer["dataset"].get("anonymized"):
        return
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    table["person"] = people_of(table, frame, columns).to_numpy()
    problems = judge.k_anonymity(table, ["age_band", "sex"], person="person")
    assert problems == [], problems


# --- generalization that lists the values it hides ---------------------------------------------


def test_unique_email_quasi_identifier_with_auto(broker):
    """A unique e-mail column declared quasi-identifier, ``anonymize=auto``. Generalizing a
    category by listing the values of a class ({a@x, b@x, c@x}) keeps k >= 3 and delivers every
    e-mail address; an identifier must be dropped (or reduced to something like a domain)."""
    frame = harmless(300, seed=63)
    addresses = emails(300)
    frame["email"] = addresses
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex,email",
        sensitive="diagnosis",
        anonymize="auto",
    )
    settle(broker, answer, known=["age_band", "sex", "email"], secrets=addresses)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_unique_phone_number_quasi_identifier_with_auto(broker, fmt):
    """A unique numeric phone-number column as quasi-identifier, ``anonymize=auto``. Mondrian
    ranges whose bounds are the class's own minimum and maximum ("[771234567-771299876]")
    deliver two phone numbers per class; bounds must lie on a coarse grid, or the column be
    dropped."""
    frame = harmless(300, seed=64)
    phones = phone_numbers(300, seed=65)
    frame["phone"] = phones
    data, name = serialize(frame, fmt)
    answer = broker.send(
        data,
        name,
        quasi_identifiers="age_band,sex,phone",
        sensitive="diagnosis",
        anonymize="auto",
    )
    settle(broker, answer, known=["age_band", "sex", "phone"], secrets=phones)


@pytest.mark.parametrize("anonymize", AUTO)
def test_note_column_with_names_and_phone_numbers(broker, anonymize):
    """A free-text ``note`` ("Call Khady Diop on +221 77 123 45 67"): 295 distinct notes and 5
    "n/a", so it is *not* all-distinct and escapes the identifier rule; generalizing it as a
    category lists the notes. Names and phone numbers must not arrive."""
    frame = harmless(300, seed=66)
    r = rng(67)
    phones = phone_numbers(295, seed=68)
    names = [f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}" for _ in range(295)]
    spoken = [f"+221 {str(p)[:2]} {str(p)[2:5]} {str(p)[5:7]} {str(p)[7:]}" for p in phones]
    notes = [f"Call {n} on {p}" for n, p in zip(names, spoken, strict=True)] + ["n/a"] * 5
    frame["note"] = notes
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    settle(broker, answer, known=["age_band", "sex", "note"], secrets=spoken + names[:20])


def rare_values(n: int, distinct: int, seed: int) -> list[int]:
    """``n`` draws among ``distinct`` values, so that many values are held by one person only."""
    return [int(v) for v in rng(seed).integers(0, distinct, n)]


def test_numeric_range_bounds_do_not_reveal_individual_values(broker):
    """An exact income (20,000-90,000, never a multiple of 10; 300 rows, some shared so it is
    not an identifier) as quasi-identifier, ``anonymize=auto``. Ranges bounded by each class's
    own minimum and maximum publish the exact income of the poorest and richest person of every
    class; bounds must lie on a coarse grid. No income held by a single person may arrive."""
    frame = harmless(300, seed=72)
    draws = rare_values(300, 260, seed=73)
    incomes = {v: 20_001 + 269 * v for v in set(draws)}  # 269: never a multiple of 10
    frame["income"] = [incomes[v] for v in draws]
    counts = frame["income"].value_counts()
    singles = [int(v) for v in counts[counts == 1].index]
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex,income",
        sensitive="diagnosis",
        anonymize="auto",
    )
    settle(broker, answer, known=["age_band", "sex", "income"], secrets=singles)


def test_category_sets_do_not_list_rare_values(broker):
    """A high-cardinality category (village: 200 values over 300 rows, most held by one person)
    as quasi-identifier, ``anonymize=auto``. Generalizing it into sets that list the class's
    villages names the village of single persons; category sets are for low-cardinality columns
    only. No village held by a single person may arrive."""
    frame = harmless(300, seed=74)
    frame["village"] = [f"village-{v:04d}" for v in rare_values(300, 200, seed=75)]
    counts = frame["village"].value_counts()
    singles = list(counts[counts == 1].index)
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex,village",
        sensitive="diagnosis",
        anonymize="auto",
    )
    settle(broker, answer, known=["age_band", "sex", "village"], secrets=singles)


# --- declarations ---------------------------------------------------------------------------------


def exact_ages(n: int = 300, seed: int = 69) -> pd.DataFrame:
    r = rng(seed)
    return pd.DataFrame(
        {
            "age": r.integers(18, 90, n).astype(str),
            "sex": r.choice(["F", "M"], n),
            "diagnosis": r.choice(DIAGNOSES, n),
        }
    )


def test_repeated_quasi_identifier_is_deduplicated_not_rejected(broker):
    """``quasi_identifiers="sex,sex"`` with ``anonymize=auto``: a repeated name must be read
    once. Kept twice, it breaks pandas group-bys and Mondrian (duplicate columns), which would
    let a sender turn a fixable table into an error or a rejection at will."""
    response = broker.post(
        csv_bytes(exact_ages()),
        quasi_identifiers="sex,sex",
        sensitive="diagnosis",
        anonymize="auto",
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "approved", [r for r in answer["rules"] if not r["passed"]]
    settle(broker, answer, known=["age", "sex"])


def test_raw_patient_table_without_sensitive_is_anonymized_not_rejected(broker):
    """The paper's raw patient table (NIN, Name, Age, Gender, Disease), nothing declared,
    ``anonymize=auto``: the broker must find and apply a remedy (drop NIN and Name, generalize)
    that the judge accepts; no national id or name may arrive."""
    data = (FIXTURES / "patients_original.csv").read_bytes()
    original = pd.read_csv(io.BytesIO(data), dtype=str)
    answer = broker.send(data, "patients_original.csv", anonymize="auto")
    assert answer["status"] == "approved", [r for r in answer["rules"] if not r["passed"]]
    settle(
        broker,
        answer,
        known=["NIN", "Name", "Age", "Gender", "Disease"],
        secrets=list(original["NIN"]) + list(original["Name"]),
    )


# --- row order ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["as-sent", "anonymized"])
def test_two_releases_do_not_keep_row_order(broker, kind):
    """Two releases of one 200-row table under different quasi-identifier declarations. If the
    rows keep the sent order, the destination lines them up by position and intersects the two
    generalizations (20-30 in one and 25-40 in the other give 25-30). Each delivery's row order
    must differ from the sent order and from the other release's."""
    if kind == "as-sent":
        frame = harmless(200, seed=70)
        declarations = ["age_band", "age_band,sex"]
        anonymize = "none"
    else:
        frame = exact_ages(200, seed=71)
        declarations = ["age", "age,sex"]
        anonymize = "auto"
    sent = list(frame["diagnosis"])
    orders = []
    for declared in declarations:
        answer = broker.send(
            csv_bytes(frame),
            quasi_identifiers=declared,
            sensitive="diagnosis",
            anonymize=anonymize,
        )
        assert answer["status"] == "approved", [r for r in answer["rules"] if not r["passed"]]
        headers, body = settle(broker, answer, known=declared.split(","))
        orders.append(list(judge.parse(headers["content-type"], body)["diagnosis"]))
    for order in orders:
        assert sorted(order) == sorted(sent)
        assert order != sent, "a release kept the sent row order"
    assert orders[0] != orders[1], "two releases share one row order"


# --- found by a second red-team pass -------------------------------------------------------------


def test_a_boolean_column_with_nulls_is_decided_not_a_server_error(broker):
    """JSON booleans with nulls made the remedy's information loss compare pd.NA: a 500."""
    records = [{"flag": True}, {"flag": None}, {"flag": False}] * 5
    for index, record in enumerate(records):
        record["age"] = str(20 + index % 3)
    answer = broker.post(json.dumps(records).encode(), "flags.json", anonymize="auto")
    assert answer.status_code == 200, answer.text


def test_a_crafted_long_cell_is_measured_in_bounded_time(broker):
    """One 100 KB cell made the e-mail pattern search take a minute (quadratic backtracking)."""
    started = time.monotonic()
    answer = broker.post(b"note\n" + b"a" * 100_000 + b"\n", "note.csv", dry_run="true")
    assert answer.status_code in (200, 413, 422), answer.text  # 413: over the cell length
    assert time.monotonic() - started < 10


def test_a_crafted_csv_header_is_refused_in_bounded_time(broker):
    """`,"` repeated 30,000 times held the delimiter sniffer for 17 s before a 422."""
    started = time.monotonic()
    answer = broker.post(b',"' * 30_000, "x.csv")
    assert answer.status_code == 422 and time.monotonic() - started < 5


def test_a_made_up_person_key_does_not_turn_copies_into_people(broker):
    """Each person's row sent three times with one invented key per copy: identical rows are
    still one person, whatever the key says (red-team finding)."""
    frame = triplicated_people()
    frame["visit_id"] = [f"v{i}" for i in range(len(frame))]
    columns = ["age", "zip", "sex", "diagnosis", "visit_id"]
    answer = broker.send(
        csv_bytes(frame[columns]), quasi_identifiers="age,zip,sex", person_key="visit_id"
    )
    delivered = settle(broker, answer, known=["age", "zip", "sex"])
    if delivered is None:
        return
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    table["person"] = people_of(table, frame, ["age", "zip", "sex", "diagnosis"]).to_numpy()
    assert judge.k_anonymity(table, ["age", "zip", "sex"], person="person") == []


@pytest.mark.parametrize("column", ["ids_with_one_repeat", "names"])
def test_a_near_unique_column_declared_sensitive_does_not_pass(broker, column):
    """A national id with one value repeated is not 'all distinct', and names are text: both
    were delivered verbatim when declared sensitive (red-team finding)."""
    frame = harmless(300, seed=71)
    if column == "names":
        given = ["Khady", "Moussa", "Awa", "Ibrahima", "Fatou", "Ousmane", "Aminata", "Cheikh"]
        frame["secret"] = [f"{given[i % 8]} Diop {i:03d}" for i in range(300)]
    else:
        ids = national_ids(300)
        ids[1] = ids[0]
        frame["secret"] = ids
    secrets = sorted(set(frame["secret"]))
    answer = broker.send(csv_bytes(frame), sensitive="secret", anonymize="auto")
    settle(broker, answer, known=[], secrets=secrets)


def test_identifiers_in_column_names_are_refused(broker):
    """Constant columns pass every measure; their names carried 50 national ids across."""
    frame = harmless(60, seed=5)
    for i, nin in enumerate(national_ids(5)):
        frame[f"ref {nin}"] = "x" if i else "y"
    answer = broker.post(csv_bytes(frame), "names.csv", anonymize="auto")
    assert answer.status_code == 422 and "column name" in answer.json()["detail"]


def test_the_destination_sees_nothing_of_what_was_not_delivered(broker):
    """The sender's file name, its column names in the report, the purpose's spelling: the
    destination's view of a transfer carried them, delivered or not (red-team finding)."""
    frame = harmless(60, seed=6)
    answer = broker.send(
        csv_bytes(frame), filename="Khady Diop +221771234567.csv", purpose="ReSeArCh"
    )
    headers = {"Authorization": f"Bearer {broker.keys['fr-research']}"}
    seen = broker.client.get(f"{broker.url}/v1/transfers", headers=headers).json()["items"]
    mine = [t for t in seen if t["id"] == answer["id"]]
    if answer["status"] != "approved":
        assert mine == []
        return
    [view] = mine
    assert view["purpose"] == "research"
    assert view["report"] is None and view["rules"] == [] and view["dataset"]["filename"] is None
    assert "Khady" not in json.dumps(view)


# --- variants found by a third pass --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["birth_date_pairs", "id_pairs", "ids_mostly_unique"])
def test_values_held_by_fewer_than_k_people_do_not_pass_as_sensitive(broker, kind):
    """Pairs escaped a rule that counted only values held by one row."""
    frame = harmless(300, seed=81)
    if kind == "birth_date_pairs":
        secret = [d for d in birth_dates(150) for _ in range(2)]
    elif kind == "id_pairs":
        secret = [i for i in national_ids(150) for _ in range(2)]
    else:
        ids = national_ids(300)
        secret = ids[:147] + [i for i in ids[147:224] for _ in range(2)][:153]
    frame["secret"] = secret
    answer = broker.send(csv_bytes(frame), sensitive="secret", anonymize="auto")
    settle(broker, answer, known=[], secrets=sorted(set(secret)))


def test_a_value_beside_missing_ones_is_not_shown_exactly(broker):
    """A class of one number and blanks was labelled '8288464, NA': one person's value."""
    numbers = [str(8_288_464 + 37 * i) for i in range(21)]  # off the grid: no round number
    frame = pd.DataFrame({"ref_no": numbers + [""] * 5, "diagnosis": (DIAGNOSES * 10)[:26]})
    answer = broker.send(
        csv_bytes(frame), quasi_identifiers="ref_no", sensitive="diagnosis", anonymize="auto"
    )
    settle(broker, answer, known=["ref_no"], secrets=numbers)


def test_mixed_time_zone_offsets_are_decided_not_a_server_error(broker):
    frame = harmless(60, seed=9)
    frame["admitted"] = [
        "2024-03-17T00:00:00+00:00",
        "2024-03-17T01:00:00+01:00",
        "2024-03-18T02:00:00+02:00",
    ] * 20
    answer = broker.post(csv_bytes(frame), "tz.csv", anonymize="auto")
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("where", ["after_padding", "outside_the_sample"])
def test_phone_numbers_are_found_wherever_they_sit(broker, where):
    """After 4,100 characters of padding, or among 1,000 distinct harmless codes, phone numbers
    escaped a reader that looked at the start of 100 values (third pass)."""
    frame = harmless(300, seed=91)
    phones = [f"+22177{1_000_000 + 7919 * i:07d}" for i in range(50)]
    if where == "after_padding":
        frame["note"] = "." * 4100 + " " + " ".join(phones)
        declared = {}
    else:
        codes = [f"A{i:05d}" for i in range(250)] + phones
        frame["note"] = codes[:300]
        declared = {"sensitive": "note"}
    answer = broker.send(csv_bytes(frame), anonymize="auto", **declared)
    settle(broker, answer, known=[], secrets=phones)


def test_identifiers_split_by_separators_in_column_names_are_refused(broker):
    for name in ["tel_77_123_45_67", "77\u2009123\u200945\u200967", "nir 1850578-006084-36"]:
        frame = harmless(30, seed=3)
        frame[name] = "x"
        answer = broker.post(csv_bytes(frame), "n.csv")
        assert answer.status_code == 422 and "column name" in answer.json()["detail"], name


def test_a_village_of_one_person_sent_many_times_is_never_named(broker):
    """Labels named a category held by k rows, even when they were one declared person's."""
    r = rng(5)
    villages = ["Dakar", "Thies", "Mbour", "Kaolack"]
    frame = pd.DataFrame(
        {
            "pid": [f"p{i}" for i in range(120)],
            "village": [villages[i % 4] for i in range(120)],
            "sex": r.choice(["F", "M"], 120),
            "diagnosis": r.choice(DIAGNOSES, 120),
        }
    )
    lonely = pd.DataFrame(
        {
            "pid": ["pX"] * 12,
            "village": ["Ndiass-Keur-Mbaye"] * 12,
            "sex": ["F"] * 12,
            "diagnosis": DIAGNOSES[:12] if len(DIAGNOSES) >= 12 else (DIAGNOSES * 12)[:12],
        }
    )
    both = pd.concat([frame, lonely], ignore_index=True)
    answer = broker.send(
        csv_bytes(both),
        quasi_identifiers="village,sex",
        sensitive="diagnosis",
        person_key="pid",
        anonymize="auto",
    )
    settle(broker, answer, known=["village", "sex"], secrets=["Ndiass-Keur-Mbaye"])

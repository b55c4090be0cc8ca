"""Round 4 forms of identifiers: encodings, transformations, e-mail spellings, typed numbers,
NUL and UTF-16, and splits over columns, rows and names. Encoded with the standard library,
checked by python-stdnum or written by hand; false positives on ordinary values; bounded cost."""

from __future__ import annotations

import base64
import bz2
import codecs
import decimal
import gzip
import io
import json
import lzma
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stdnum import iban, luhn
from stdnum.fr import nir

from broker.datasets import DatasetError, read_dataset
from broker.identifiers import scan
from broker.identifiers.short_text import identifier_across_names
from broker.identifiers.text import (
    MAX_INFLATED,
    MAX_READ_CHARS,
    MAX_READINGS,
    digits_from_words,
    readings,
)
from broker.metrics.content import content_of, split_content, vertical_content
from broker.metrics.report import ReportOptions, analyze

EMAIL = "awa.diop@example.sn"
IBAN_FR = "FR7630006000011234567890189"
CARD = "4111111111111111"
NIR = "185057800608491"


def test_the_samples_are_valid_by_python_stdnum():
    assert iban.is_valid(IBAN_FR) and luhn.is_valid(CARD) and nir.is_valid(NIR)


def _kinds(text: str) -> set[str]:
    return {f.kind for f in scan(text)}


# --- 1. encodings -------------------------------------------------------------------------------


def _b64_layers(data: bytes, layers: int) -> str:
    for _ in range(layers):
        data = base64.b64encode(data)
    return data.decode()


@pytest.mark.parametrize(
    ("encoded", "kind"),
    [
        (base64.b32encode(EMAIL.encode()).decode(), "email"),
        (base64.b32encode(IBAN_FR.encode()).decode().lower().rstrip("="), "iban"),
        (base64.b32encode(b"4111 1111 1111 1111").decode(), "payment_card"),
        (base64.b85encode(EMAIL.encode()).decode(), "email"),
        (base64.a85encode(IBAN_FR.encode()).decode(), "iban"),
        (base64.a85encode(EMAIL.encode(), adobe=True).decode(), "email"),
        (base64.b64encode(gzip.compress(EMAIL.encode())).decode(), "email"),
        (base64.b64encode(zlib.compress(IBAN_FR.encode())).decode(), "iban"),
        (zlib.compress(CARD.encode()).hex(), "payment_card"),
        (base64.b64encode(bz2.compress(NIR.encode())).decode(), "national_id"),
        (base64.b64encode(lzma.compress(EMAIL.encode())).decode(), "email"),
        (_b64_layers(EMAIL.encode(), 6), "email"),
        (base64.b32encode(base64.b64encode(gzip.compress(CARD.encode()))).decode(), "payment_card"),
        (base64.b64encode(EMAIL.encode("utf-16")).decode(), "email"),  # UTF-16 with its BOM
        (EMAIL.encode("utf-16-le").hex(), "email"),  # without
        (":".join(f"{b:02X}" for b in EMAIL.encode()), "email"),
        (", ".join(f"0x{b:02x}" for b in IBAN_FR.encode()), "iban"),
        ("".join(f"&#{b};" for b in EMAIL.encode()), "email"),
        ("awa.diop&commat;example&period;sn", "email"),
        ("".join(f"\\x{b:02x}" for b in CARD.encode()), "payment_card"),
        ("".join(f"\\u{b:04x}" for b in EMAIL.encode()), "email"),
    ],
)
def test_an_encoded_identifier_is_found(encoded, kind):
    assert kind in _kinds(encoded)
    assert content_of([encoded]).direct_identifier == kind


def test_a_constant_column_of_base32_is_an_identifier():
    value = base64.b32encode(IBAN_FR.encode()).decode()
    assert content_of([value]).direct_identifier == "iban"  # one distinct value: the sample


def test_decoding_is_bounded_whatever_the_nesting_or_the_ratio():
    deep = _b64_layers(EMAIL.encode(), 40)
    found = readings(deep)
    assert len(found) <= MAX_READINGS + 1
    assert sum(len(r.text) for r in found) <= MAX_READ_CHARS + len(deep)
    bomb = base64.b64encode(gzip.compress(b"a" * 10_000_000)).decode()  # 10 MB in ~13 kB
    assert len(bomb) < 20_000
    assert all(len(r.text) <= MAX_INFLATED for r in readings(bomb)[1:])


# --- 2. transformations -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ns.elpmaxe@poid.awa", "email"),
        (IBAN_FR[::-1], "iban"),
        ("4111 1111 1111 1111"[::-1], "payment_card"),
        (codecs.encode(IBAN_FR, "rot13"), "iban"),
        (codecs.encode(EMAIL, "rot13"), "email"),
        ("deux deux un sept sept un deux trois quatre cinq six sept", "phone"),
        ("sept sept, un deux trois, quarante-cinq, soixante-sept", "phone"),
        ("plus two two one seven seven one two three four five six seven", "phone"),
        ("four one one one, one one one one, one one one one, one one one one", "payment_card"),
        ("a.w.a.d.i.o.p@e.x.a.m.p.l.e...s.n", "email"),
        ("a w a . d i o p @ e x a m p l e . s n", "email"),
        ("4-1-1-1 1-1-1-1 1-1-1-1 1-1-1-1", "payment_card"),
        ("F R 7 6 3 0 0 0 6 0 0 0 0 1 1 2 3 4 5 6 7 8 9 0 1 8 9", "iban"),
    ],
)
def test_a_transformed_identifier_is_found(text, kind):
    assert kind in _kinds(text), [r.text for r in readings(text)]


@pytest.mark.parametrize(
    ("said", "digits"),
    [
        ("deux deux un sept", "2217"),
        ("soixante-dix-sept quatre-vingt-douze zéro un", "77 92 01"),
        ("quatre-vingt-dix-neuf, vingt et un, onze, seize", "99 21 11 16"),
        ("double seven one two three", "77123"),
        ("plus three three six one two", "+33612"),
    ],
)
def test_digits_said_in_words_are_the_digits(said, digits):
    assert digits_from_words(said) == digits


@pytest.mark.parametrize(
    "text",
    [
        "one or two visits",
        "trois ou quatre fois par an",
        "vu chez le médecin, point final",
        "rendez-vous chez Dupont point final",
        "1 250 000 FCFA",
        "2019 2020 2021 2022",
        "a b c",
        "Prof-specialty, 40 hours, 2024-05-01, I10, 75001, 12.50 EUR",
    ],
)
def test_ordinary_text_read_every_way_holds_no_identifier(text):
    assert content_of([text]).direct_identifier is None


# --- 3. e-mail spellings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "awa.diop@hôpital-dakar.sn",
        "awa@exemple.sénégal",
        "awa.diop@" + "hôpital-dakar".encode("idna").decode() + ".sn",
        "awa@example." + "сайт".encode("idna").decode(),
        "awa@例え.テスト",
        "awa.diop chez hopital point sn",
        "awa.diop arobase hopital point sn",
        "awa [chez] hopital [point] sn",
        "awa.diop[at]hopital(dot)sn",
        "awa {arobase} hopital <point> com",
    ],
)
def test_an_email_in_any_spelling_is_found(text):
    assert "email" in _kinds(text)


# --- 4. typed columns, NUL and UTF-16 -----------------------------------------------------------

CARDS = [4111111111111111, 5555555555554444, 4012888888881881, 5105105105105100]


def test_typed_card_numbers_are_read_as_their_digits():
    assert all(luhn.is_valid(str(c)) for c in CARDS)
    assert content_of(CARDS).direct_identifier == "payment_card"
    assert content_of([float(c) for c in CARDS]).direct_identifier == "payment_card"
    as_decimals = [decimal.Decimal(c).quantize(decimal.Decimal("0.01")) for c in CARDS]
    assert content_of(as_decimals).direct_identifier == "payment_card"


def test_phone_numbers_stored_as_numbers_are_found_with_their_country_code():
    assert content_of([221771234567, 221781234512, 221701112233]).direct_identifier == "phone"
    assert content_of([771234567, 781234512, 701112233], ["SN"]).direct_identifier == "phone"


def test_columns_of_ordinary_numbers_are_not_identifiers():
    r = np.random.default_rng(5)
    for low, high in ((10**6, 10**8), (10**9, 10**10), (10**10, 10**12), (10**12, 10**15)):
        assert content_of(list(r.integers(low, high, 500))).direct_identifier is None
    assert content_of([12.5, 1250.0, 3.99, 2500000.0]).direct_identifier is None


def _report(data: bytes, name: str) -> dict[str, str | None]:
    frame = read_dataset(data, name).frame
    return {a.name: a.content.direct_identifier for a in analyze(frame).attributes}


def test_json_integers_and_parquet_number_columns_are_read_as_digits():
    frame = pd.DataFrame({"sex": ["F", "M"] * 20, "amount": CARDS * 10})
    assert _report(json.dumps(frame.to_dict("records")).encode(), "a.json")["amount"]
    for arrow_type in (pa.int64(), pa.decimal128(20, 0), pa.decimal128(22, 2)):
        values = [decimal.Decimal(v) for v in frame["amount"]]
        table = pa.table({"sex": frame["sex"], "amount": pa.array(values, type=arrow_type)})
        sink = io.BytesIO()
        pq.write_table(table, sink)
        assert _report(sink.getvalue(), "a.parquet")["amount"] == "payment_card", arrow_type


def test_nul_bytes_and_utf16_in_csv_values_hide_nothing():
    hidden = EMAIL.encode("utf-16-le")  # NUL after every ASCII character: valid UTF-8
    rows = b"".join(b"F,ok\n" if i % 3 else b"M," + hidden + b"\n" for i in range(30))
    found = _report(b"sex,notes\n" + rows, "a.csv")
    assert found["notes"] == "email"


# --- 5. splits ----------------------------------------------------------------------------------


def test_an_iban_over_three_columns_and_a_card_over_four_are_found():
    ibans = [("FR76 3000", "6000 0112 3456", "7890 189"), ("GB82 WEST", "1234 5698", "7654 32")]
    assert all(iban.is_valid("".join(p).replace(" ", "")) for p in ibans)
    assert split_content(ibans).kind == "iban"
    cards = [("4111", "1111", "1111", "1111"), ("5555", "5555", "5555", "4444")]
    assert split_content(cards).kind == "payment_card"


def test_an_iban_in_its_seven_groups_of_four_columns_is_found():
    groups = [IBAN_FR[i : i + 4] for i in range(0, len(IBAN_FR), 4)]
    other = "GB82WEST12345698765432"
    assert iban.is_valid(other)
    rows = [groups, [other[i : i + 4] for i in range(0, len(other), 4)]] * 15
    frame = pd.DataFrame(rows, columns=[f"g{i}" for i in range(len(groups))])
    frame.insert(0, "sex", ["F", "M"] * 15)
    found = {a.name: a.content.direct_identifier for a in analyze(frame).attributes}
    assert found.pop("sex") is None
    assert all(found.values()) and "iban" in found.values(), found


def test_a_split_needs_every_part():
    """An IBAN in two columns beside a third column of amounts: the third is not condemned."""
    frame = pd.DataFrame(
        {
            "a": ["FR76 3000 6000", "GB82 WEST 1234"] * 20,
            "b": ["0112 3456 7890 189", "5698 7654 32"] * 20,
            "c": ["12.50", "3.99", "100", "7"] * 10,
        }
    )
    found = {a.name: a.content.direct_identifier for a in analyze(frame).attributes}
    assert found == {"a": "iban", "b": "iban", "c": None}


def test_names_in_columns_far_apart_and_in_either_order_are_found():
    frame = pd.DataFrame(
        {
            "family": ["Diop", "Fall", "Ndiaye"] * 10,
            "age": ["30-39", "40-49", "20-29"] * 10,
            "ward": ["3B", "1A", "2C"] * 10,
            "given": ["Awa", "Moussa", "Fatou"] * 10,
        }
    )
    found = {a.name: a.content.direct_identifier for a in analyze(frame).attributes}
    assert found["family"] == found["given"] == "person_name"
    assert found["age"] is None and found["ward"] is None


def test_an_id_written_down_the_rows_is_found_only_where_it_stands_out():
    notes = ["ok", "pending", "seen"] * 20
    notes[10 : 10 + len(NIR)] = list(NIR)
    assert vertical_content("notes", notes).kind == "national_id"
    frame = pd.DataFrame({"sex": ["F", "M"] * 30, "notes": notes})
    found = {a.name: a.content.direct_identifier for a in analyze(frame).attributes}
    assert found == {"sex": None, "notes": "national_id"}
    # A card in its groups of four, one a row, blank rows between.
    groups = ["pending", "4111", "", "1111", "", "1111", "1111", "late"] + ["ok", "pending"] * 10
    assert vertical_content("notes", groups).kind == "payment_card"
    # A column of ratings is mostly one digit long: runs of digits are what it holds.
    ratings = list(np.random.default_rng(3).choice(list("12345"), 500))
    ratings[100:115] = list(NIR)
    assert vertical_content("stars", ratings) is None


def test_a_phone_number_over_the_column_names_is_refused_without_being_echoed():
    header = ["age", "+221", "77", "123", "45", "67"]
    assert identifier_across_names(header) == "a phone number (SN)"
    data = (",".join(header) + "\n" + ",".join(["30"] * 6) + "\n").encode()
    with pytest.raises(DatasetError) as refused:
        read_dataset(data, "a.csv")
    assert "+221" not in str(refused.value) and "column names" in str(refused.value)
    assert identifier_across_names(["id", "2019", "2020", "2021", "2022", "q1"]) is None


def test_a_utf16_file_is_refused_in_clear_words_without_echoing_its_names():
    for text in ("awa.diop@example.sn,age\nx,30\n", "\ufeffawa.diop@example.sn,age\nx,30\n"):
        with pytest.raises(DatasetError) as refused:
            read_dataset(text.encode("utf-16-le"), "a.csv")
        message = str(refused.value)
        assert "UTF" in message and "awa" not in message and "\\x00" not in message


def test_nul_bytes_in_json_strings_hide_nothing():
    records = [{"sex": "F", "notes": "ok"}, {"sex": "M", "notes": "\x00".join(EMAIL)}] * 10
    assert _report(json.dumps(records).encode(), "a.json")["notes"] == "email"


def test_the_column_sets_read_together_are_bounded_on_a_wide_table():
    """1,000 columns of given names: every adjacent pair, and at most MAX_SPLIT_SETS others
    (the product of the columns would be a million pairs)."""
    from broker.metrics.content import NAME_WORDS
    from broker.metrics.report import MAX_SPLIT_SETS, _split_sets

    frame = pd.DataFrame({f"c{i}": ["Red", "Blue"] for i in range(1000)})
    attributes = analyze(frame.head(2), options=ReportOptions(max_combination_size=0)).attributes
    attributes = [a for a in attributes if not a.content.direct_identifier]
    fragments = {a.name: NAME_WORDS for a in attributes}
    sets = _split_sets(attributes, fragments)
    pairs = len(attributes) - 1
    assert pairs < len(sets) <= pairs + MAX_SPLIT_SETS


def test_digits_cut_over_columns_that_are_not_neighbours_are_found():
    frame = pd.DataFrame(
        {
            "a": ["FR76 3000 6000", "GB82 WEST 1234"] * 20,
            "sex": ["F", "M", "M", "F"] * 10,
            "b": ["0112 3456 7890 189", "5698 7654 32"] * 20,
        }
    )
    found = {a.name: a.content.direct_identifier for a in analyze(frame).attributes}
    assert found == {"a": "iban", "sex": None, "b": "iban"}


@pytest.mark.parametrize(
    "said",
    ["sept 7 un 2 3 quatre 5 6 sept", "4 one 1 one 1 one 1 1 1 one 1 1 1 1 1 1"],
)
def test_digits_written_among_number_words_are_read(said):
    assert _kinds(said) & {"phone", "payment_card"}


def test_ordinary_numbers_over_many_columns_fail_nothing_closed():
    """Eleven columns of ordinary numbers (postcodes, ages, amounts, years, codes, blood
    pressures): read together over many column sets, they make many candidates; no column is
    condemned (the sets past the adjacent pairs have a budget of their own)."""
    r = np.random.default_rng(9)
    n = 2000
    frame = pd.DataFrame(
        {
            "zip": r.choice([f"{z:05d}" for z in r.integers(1000, 99999, 300)], n),
            "age": r.integers(18, 95, n).astype(str),
            "amount": [f"{x:.2f}" for x in r.gamma(2, 300, n)],
            "visits": r.integers(0, 40, n).astype(str),
            "year": r.integers(1990, 2025, n).astype(str),
            "ward": r.choice(["3B", "1A", "2C", "ICU"], n),
            "code": r.choice([f"{c:04d}" for c in range(200)], n),
            "weight": r.integers(40, 140, n).astype(str),
            "dept": r.choice(["100", "200", "310", "420"], n),
            "bp": [f"{r.integers(90, 180)}/{r.integers(50, 110)}" for _ in range(n)],
            "ref": [f"{x:06d}" for x in r.integers(0, 10**6, n)],
        }
    )
    found = {a.name: a.content.identifier_evidence for a in analyze(frame).attributes}
    assert not any(found.values()), found


def test_a_value_encoded_past_what_is_read_fails_closed():
    """Twelve layers of base64 (past the eight read): the value is condemned, not let through
    unread. Decoys in every encoding around an identifier do not hide it (the runs of one
    encoding are read as one text, so they do not multiply the readings)."""
    assert content_of([_b64_layers(EMAIL.encode(), 12)]).direct_identifier is not None
    decoys = " ".join(
        codec(f"note {i} {word}".encode()).decode()
        for i, word in enumerate(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"] * 4)
        for codec in (base64.b64encode, base64.b32encode, base64.b85encode)
    )
    assert content_of([decoys + " " + _b64_layers(EMAIL.encode(), 5)]).direct_identifier

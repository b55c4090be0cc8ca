"""Round 4 of the red team on the identifier detector, through a real broker: identifiers in
other encodings (base32, base85, compressed, nested), transformed (backwards, ROT13, said in
words, spaced out), in e-mail spellings (internationalised, "chez"/"point"), carried by typed
columns (JSON integers, Parquet int64 and decimal), hidden by NUL bytes or UTF-16, and split
over 3 or 4 columns, over two columns far apart, down a column's rows and over the header.

The suite's rule: the column is found (the report of the data as sent says so); not approved,
nothing reaches fr-research's inbox; approved, the judge finds neither the identifier as sent
nor as written plainly in the bytes FR received. Each identifier is checked by python-stdnum or
written by hand, never by the broker's own code.
"""

from __future__ import annotations

import base64
import bz2
import codecs
import decimal
import gzip
import io
import json
import zlib

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stdnum import iban, luhn
from stdnum.fr import nir

from tests.adversarial import judge
from tests.adversarial.conftest import assert_clean_refusal, settle
from tests.adversarial.tables import csv_bytes, harmless, rng

EMAIL = "awa.diop@example.sn"
IBAN_FR = "FR7630006000011234567890189"
CARD = "4111111111111111"
NIR = "185057800608491"
PHONE_SN = "+221 77 123 45 67"
KNOWN = ["age_band", "sex"]


def test_the_identifiers_are_what_independent_checks_say():
    assert iban.is_valid(IBAN_FR) and luhn.is_valid(CARD) and nir.is_valid(NIR)


def _rot47(text: str) -> str:
    return "".join(chr(33 + (ord(c) - 33 + 47) % 94) if 33 <= ord(c) <= 126 else c for c in text)


def _nested(text: str, layers: int) -> str:
    data = text.encode()
    for _ in range(layers):
        data = base64.b64encode(data)
    return data.decode()


DISGUISED = {
    "base32 e-mail": base64.b32encode(EMAIL.encode()).decode(),
    "base32 lower-case, no padding": base64.b32encode(IBAN_FR.encode())
    .decode()
    .lower()
    .rstrip("="),
    "base85 card": base64.b85encode(CARD.encode()).decode(),
    "ascii85 e-mail": base64.a85encode(EMAIL.encode(), adobe=True).decode(),
    "gzip then base64": base64.b64encode(gzip.compress(EMAIL.encode())).decode(),
    "zlib then base64": base64.b64encode(zlib.compress(IBAN_FR.encode())).decode(),
    "bzip2 then hex": bz2.compress(NIR.encode()).hex(),
    "base64 six times": _nested(EMAIL, 6),
    "base32 of base64 of gzip": base64.b32encode(
        base64.b64encode(gzip.compress(CARD.encode()))
    ).decode(),
    "backwards e-mail": EMAIL[::-1],
    "backwards IBAN": IBAN_FR[::-1],
    "backwards card": "4111 1111 1111 1111"[::-1],
    "ROT13 IBAN": codecs.encode(IBAN_FR, "rot13"),
    "ROT13 e-mail": codecs.encode(EMAIL, "rot13"),
    "ROT47 e-mail": _rot47(EMAIL),
    "French digit words": "plus deux deux un, soixante-dix-sept, un deux trois, quarante-cinq, "
    "soixante-sept",
    "English digit words": "four one one one one one one one one one one one one one one one",
    "a dot between every character": ".".join(EMAIL),
    "a dash between every digit": "4-1-1-1 1-1-1-1 1-1-1-1 1-1-1-1",
    "NUL between every character": "\x00".join(EMAIL),
    "UTF-16 read as Latin-1, with BOM": (b"\xff\xfe" + EMAIL.encode("utf-16-le")).decode("latin-1"),
    "hex bytes with colons": ":".join(f"{b:02x}" for b in EMAIL.encode()),
    "HTML character references": "".join(f"&#{b};" for b in IBAN_FR.encode()),
    "backslash escapes": "".join(f"\\u{b:04x}" for b in EMAIL.encode()),
    "internationalised domain": "awa.diop@hôpital-dakar.sn",
    "punycode domain": "awa.diop@xn--hpital-dakar-eib.sn",
    "French words chez and point": "awa.diop chez hopital point sn",
    "arobase": "awa arobase hopital point sn",
    "[at] and (dot)": "awa.diop [at] hopital (dot) sn",
}


def _hidden(value: str, n: int = 300, seed: int = 131) -> pd.DataFrame:
    frame = harmless(n, seed=seed)
    notes = ["ok", "pending", "seen twice", "to call back", value]
    frame["notes"] = rng(seed + 1).choice(notes, n)
    return frame


def _as_sent(answer: dict) -> dict[str, str | None]:
    report = ((answer.get("remedy") or {}).get("before") or {}).get("report") or answer["report"]
    return {a["name"]: a["direct_identifier"] for a in report["attributes"]}


@pytest.mark.parametrize("how", list(DISGUISED))
def test_a_disguised_identifier_does_not_cross(broker, how):
    value = DISGUISED[how]
    answer = broker.send(csv_bytes(_hidden(value)), anonymize="auto")
    assert _as_sent(answer)["notes"], how
    settle(broker, answer, secrets=[value, EMAIL, IBAN_FR, CARD, NIR], known=KNOWN)


def test_a_constant_column_of_base32_does_not_cross(broker):
    value = base64.b32encode(IBAN_FR.encode()).decode()
    frame = harmless(300, seed=141)
    frame["ref"] = value
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["ref"] == "iban"
    settle(broker, answer, secrets=[value, IBAN_FR], known=KNOWN)


# --- typed columns ----------------------------------------------------------------------------

CARDS = [4111111111111111, 5555555555554444, 4012888888881881, 5105105105105100]
PHONES = [221771234567, 221781234512, 221701112233, 221761239876]


def _typed(values: list, n: int = 240, seed: int = 151) -> pd.DataFrame:
    frame = harmless(n, seed=seed)
    frame["amount"] = [values[i] for i in rng(seed + 1).integers(0, len(values), n)]
    return frame


@pytest.mark.parametrize("values", [CARDS, PHONES], ids=["cards", "phones"])
def test_identifiers_as_json_integers_do_not_cross(broker, values):
    assert all(luhn.is_valid(str(c)) for c in CARDS)
    records = _typed(values).to_dict("records")
    body = json.dumps(records).encode()
    assert b'"amount": 4111111111111111' in body or b'"amount": 2217' in body  # numbers, not text
    answer = broker.send(body, "data.json", anonymize="auto")
    assert _as_sent(answer)["amount"] in ("payment_card", "phone")
    settle(broker, answer, secrets=values, known=KNOWN)


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.decimal128(20, 0), pa.decimal128(22, 2)])
def test_card_numbers_in_parquet_number_columns_do_not_cross(broker, arrow_type):
    frame = _typed(CARDS, seed=161)
    table = pa.Table.from_pandas(frame.drop(columns=["amount"]), preserve_index=False)
    if pa.types.is_decimal(arrow_type):
        amounts = [decimal.Decimal(v) for v in frame["amount"]]
    else:
        amounts = frame["amount"].tolist()
    table = table.append_column("amount", pa.array(amounts, type=arrow_type))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    answer = broker.send(sink.getvalue(), "data.parquet", anonymize="auto")
    assert _as_sent(answer)["amount"] == "payment_card"
    settle(broker, answer, secrets=CARDS, known=KNOWN)


@pytest.mark.parametrize("engine", ["broker", "out_of_core_broker"])
def test_nul_bytes_in_csv_values_hide_nothing(request, engine):
    running = request.getfixturevalue(engine)
    value = "\x00".join(EMAIL)  # UTF-16 without its byte-order mark, read as UTF-8
    data = csv_bytes(_hidden(value, seed=171))
    assert b"a\x00w\x00a" in data
    response = running.post(data, "data.csv", anonymize="auto")
    if response.status_code != 200:
        assert_clean_refusal(response)
        assert EMAIL not in response.text
        return
    answer = response.json()
    assert _as_sent(answer)["notes"] == "email"
    settle(running, answer, secrets=[value, EMAIL], known=KNOWN)


# --- splits -------------------------------------------------------------------------------------


def _split(parts: list[list[str]], seed: int, names: list[str] | None = None) -> pd.DataFrame:
    frame = harmless(300, seed=seed)
    picks = rng(seed + 1).integers(0, len(parts[0]), 300)
    for i, column in enumerate(parts):
        frame[(names or [f"part_{c}" for c in "abcd"])[i]] = [column[p] for p in picks]
    return frame


@pytest.mark.parametrize(
    "parts",
    [
        # Two IBANs cut in three (FR, GB: valid by python-stdnum).
        [["FR76 3000", "GB82 WEST"], ["6000 0112 3456", "1234 5698"], ["7890 189", "7654 32"]],
        # Two cards cut in four.
        [["4111", "5555"], ["1111", "5555"], ["1111", "5555"], ["1111", "4444"]],
    ],
    ids=["iban over 3", "card over 4"],
)
def test_an_identifier_over_three_or_four_adjacent_columns_does_not_cross(broker, parts):
    wholes = ["".join(p[i] for p in parts).replace(" ", "") for i in range(2)]
    assert all(iban.is_valid(w) or luhn.is_valid(w) for w in wholes)
    answer = broker.send(csv_bytes(_split(parts, seed=181)), anonymize="auto")
    found = _as_sent(answer)
    assert all(found[f"part_{c}"] for c in "abcd"[: len(parts)]), found
    settle(broker, answer, secrets=wholes, known=KNOWN)


def test_an_iban_in_seven_columns_of_four_does_not_cross(broker):
    ibans = [IBAN_FR, "GB82WEST12345698765432"]
    assert all(iban.is_valid(i) for i in ibans)
    parts = [[i[g : g + 4] for i in ibans] for g in range(0, 28, 4)]
    names = [f"g{n}" for n in range(7)]
    answer = broker.send(csv_bytes(_split(parts, seed=185, names=names)), anonymize="auto")
    found = _as_sent(answer)
    assert all(found[n] for n in names), found  # the IBAN, or an id in a part of it
    settle(broker, answer, secrets=ibans, known=KNOWN)


def test_a_given_and_a_family_name_in_columns_far_apart_do_not_cross(broker):
    firsts, lasts = ["Awa", "Moussa", "Fatou"], ["Diop", "Fall", "Ndiaye"]
    frame = _split([firsts, lasts], seed=191, names=["given", "family"])
    frame = frame[["given", "age_band", "diagnosis", "sex", "family"]]
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    found = _as_sent(answer)
    assert found["given"] and found["family"], found
    settle(broker, answer, secrets=[f"{a} {b}" for a, b in zip(firsts, lasts, strict=True)])


@pytest.mark.parametrize("engine", ["broker", "out_of_core_broker"])
def test_an_id_written_one_digit_per_row_does_not_cross(request, engine):
    """A French NIR down the rows of ``notes``: row by row, one digit each."""
    running = request.getfixturevalue(engine)
    frame = harmless(300, seed=201)
    notes = list(rng(202).choice(["ok", "pending", "seen twice", "to call back"], 300))
    notes[40 : 40 + len(NIR)] = list(NIR)
    frame["notes"] = notes
    answer = running.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["notes"] == "national_id"
    delivered = settle(running, answer, secrets=[NIR], known=KNOWN)
    if delivered is not None:
        received = judge.parse(delivered[0].get("content-type", ""), delivered[1])
        if "notes" in received.columns:
            assert NIR not in "".join(v for v in received["notes"] if len(v) == 1)


def test_a_card_in_groups_of_four_down_the_rows_with_blank_rows_does_not_cross(broker):
    frame = harmless(300, seed=205)
    notes = list(rng(206).choice(["ok", "pending", "seen twice", "to call back"], 300))
    notes[100:107] = ["4111", "", "1111", "", "1111", "", "1111"]
    frame["notes"] = notes
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["notes"] == "payment_card"
    settle(broker, answer, secrets=[CARD], known=KNOWN)


def test_a_phone_number_over_the_column_names_is_refused(broker):
    frame = harmless(60, seed=211)
    for part in ["+221", "77", "123", "45", "67"]:
        frame[part] = "x"
    response = broker.post(csv_bytes(frame), "data.csv", anonymize="auto")
    assert_clean_refusal(response)
    assert "column names" in response.json()["detail"]
    assert "+221" not in response.text


def test_ordinary_data_with_short_values_and_spelled_words_is_approved(broker):
    """No cry of wolf: ratings of one digit down the rows, a header of years, French prose with
    "chez" and "point", counts written in words."""
    frame = harmless(300, seed=221)
    frame["stars"] = rng(222).choice(["1", "2", "3", "4", "5"], 300)
    frame["note"] = rng(223).choice(
        ["vu chez le médecin, point final", "one or two visits", "trois ou quatre fois"], 300
    )
    for year in ("2019", "2020", "2021", "2022"):
        frame[year] = rng(int(year)).choice(["yes", "no"], 300)
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    found = _as_sent(answer)
    assert not any(found.values()), found

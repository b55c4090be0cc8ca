"""Identifiers of every kind the field's detectors know, in every disguise, through every way
text crosses: a value column with an innocent name, a column name, two adjacent columns, a
catalog description.

Each identifier hides in a column called ``notes`` among ordinary values that repeat, so that
counting categories sees nothing (the column is not all distinct). The rule is the suite's: not
approved, nothing reaches fr-research's inbox; approved, the judge finds neither the identifier
as sent nor as written plainly in the bytes FR received. A column name or a catalog entry that
holds one is refused with a problem answer, and the catalog FR reads does not show it.
"""

from __future__ import annotations

import base64
from urllib.parse import quote

import pandas as pd
import pytest

from tests.adversarial.conftest import DESTINATION, SOURCE, assert_clean_refusal, settle
from tests.adversarial.tables import csv_bytes, harmless, rng
from tests.fixtures.identifiers.corpus import disguised, identifiers

# One identifier of each kind and member state (the corpus's own, valid by their check digits).
PLAIN = {f"{kind} {country}".strip(): text for kind, country, text in identifiers()}
CHOSEN = [
    "email",
    "phone SN",
    "phone NG",
    "iban FR",
    "iban SN",
    "payment_card Visa",
    "payment_card Verve",
    "passport SEN",
    "passport NG",
    "national_id FR",
    "national_id NG",
    "national_id SN",
    "national_id KE",
]
# Full names whose two parts are listed: one such value condemns a column. (A name with one
# listed part is medium evidence, found when a share of the column holds such names: below.)
NAMES = ["Awa Diop", "Chukwuemeka Okafor", "Wanjiru Kamau", "Marie Dupont"]
DISGUISES = ["plain", "full-width", "look-alike letters", "zero-width spaces", "base64", "hex"]
CASES = [(key, PLAIN[key]) for key in CHOSEN] + [(f"name {n}", n) for n in NAMES]


def _plain(key: str) -> str:
    if key == "email":
        return next(text for kind, _, text in identifiers() if kind == "email")
    return PLAIN.get(key, key.removeprefix("name "))


def _hidden(value: str, n: int = 300, seed: int = 31) -> pd.DataFrame:
    """Harmless rows, and a ``notes`` column whose five values repeat; one of them ``value``."""
    frame = harmless(n, seed=seed)
    notes = ["ok", "pending", "seen twice", "to call back", value]
    frame["notes"] = rng(seed + 1).choice(notes, n)
    return frame


def _as_sent(answer: dict) -> dict[str, str | None]:
    """Each column's ``direct_identifier`` in the report of the data as uploaded (an anonymized
    transfer's report is of what it delivers; the remedy keeps the one before)."""
    report = ((answer.get("remedy") or {}).get("before") or {}).get("report") or answer["report"]
    return {a["name"]: a["direct_identifier"] for a in report["attributes"]}


def _call(broker, member, method, path, **kwargs):
    headers = {"Authorization": f"Bearer {broker.keys[member]}"}
    return broker.client.request(method, f"{broker.url}{path}", headers=headers, **kwargs)


@pytest.mark.parametrize("how", DISGUISES)
@pytest.mark.parametrize(("key", "text"), CASES, ids=[key for key, _ in CASES])
def test_an_identifier_in_a_value_does_not_cross(broker, key, text, how):
    value = disguised(text, how)
    answer = broker.send(csv_bytes(_hidden(value)), anonymize="auto")
    assert _as_sent(answer)["notes"], answer["report"]  # found whatever the disguise
    settle(broker, answer, secrets=[value, text], known=["age_band", "sex"])


def test_a_column_of_names_half_unlisted_does_not_cross(broker):
    """Given names before family names the lists lack: medium evidence, in most values."""
    frame = harmless(300, seed=35)
    names = ["Emmanuel Macron", "Chinua Achebe", "Wole Soyinka", "Lupita Nyong'o", "Simone Veil"]
    frame["notes"] = rng(36).choice(names, 300)
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["notes"] == "person_name"
    settle(broker, answer, secrets=names, known=["age_band", "sex"])


@pytest.mark.parametrize(
    "how", ["blanks around @", "[at] and [dot]", "the words at and dot", "percent-escapes"]
)
def test_an_email_in_its_common_disguises_does_not_cross(broker, how):
    local, domain = "awa.diop", "hopital.sn"
    value = {
        "blanks around @": f"{local} @ {domain}",
        "[at] and [dot]": f"{local} [at] hopital [dot] sn",
        "the words at and dot": f"{local} at hopital dot sn",
        "percent-escapes": quote(f"{local}@{domain}", safe=""),
    }[how]
    answer = broker.send(csv_bytes(_hidden(f"write to {value}")), anonymize="auto")
    assert _as_sent(answer)["notes"] == "email"
    settle(broker, answer, secrets=[value, f"{local}@{domain}"], known=["age_band", "sex"])


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (["FR76 3000 6000", "GB82 WEST 1234"], ["0112 3456 7890 189", "5698 7654 32"]),
        (["4111 1111", "5555 5555"], ["1111 1111", "5555 4444"]),
        (["Awa", "Moussa", "Fatou"], ["Diop", "Fall", "Ndiaye"]),
    ],
    ids=["iban", "card", "name"],
)
def test_an_identifier_split_over_two_adjacent_columns_does_not_cross(broker, left, right):
    """Each column alone holds half an identifier; read together they hold a whole one."""
    r = rng(41)
    frame = harmless(300, seed=41)
    picks = r.integers(0, len(left), 300)
    frame["part_a"] = [left[i] for i in picks]
    frame["part_b"] = [right[i] for i in picks]
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    found = _as_sent(answer)
    assert found["part_a"] and found["part_b"], found
    whole = [f"{a} {b}" for a, b in zip(left, right, strict=True)]
    settle(broker, answer, secrets=[*left, *right, *whole], known=["age_band", "sex"])


@pytest.mark.parametrize(
    "name",
    [
        "ａｗａ＠ｅｘａｍｐｌｅ．ｓｎ",
        "awa [at] example [dot] sn",
        "Awa Diop",
        "FR7630006000011234567890189",
        "4111 1111 1111 1111",
        base64.b64encode(b"awa.diop@example.sn").decode(),
        "P<SENDIOP<<AWA".ljust(44, "<"),
    ],
)
def test_an_identifier_in_a_column_name_is_refused(broker, name):
    frame = harmless(60, seed=51)
    frame[name] = "x"
    response = broker.post(csv_bytes(frame), "data.csv", anonymize="auto")
    assert_clean_refusal(response)
    assert "column name" in response.json()["detail"]


CATALOG = [
    ("description", "Reach the data steward, Awa Diop, for access."),
    ("description", f"IBAN for fees: {PLAIN['iban SN']}"),
    ("title", "Admissions (contact: awa (at) example (dot) sn)"),
    ("description", "Card on file 4111-1111-1111-1111."),
    ("keywords", ["passport A12345678"]),
    ("description", "NIN 12345678901 is the steward's"),
    ("description", "Encoded contact: " + base64.b64encode(b"awa.diop@example.sn").decode()),
    ("description", "MRZ L898902C36UTO7408122F1204159ZE184226B<<<<<10"),
]


@pytest.mark.parametrize(("field", "value"), CATALOG)
def test_the_catalog_publishes_no_identifier(broker, field, value):
    description = {"title": "t", "columns": [{"name": "age", "role": "quasi_identifier"}]}
    description[field] = value
    answer = _call(broker, SOURCE, "POST", "/v1/catalog/datasets", json=description)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    seen = _call(broker, DESTINATION, "GET", "/v1/catalog", params={"limit": 100}).text
    text = value if isinstance(value, str) else value[0]
    assert text not in seen


def test_an_ordinary_catalog_entry_is_published(broker):
    """The detector does not cry wolf on a plain description of health data."""
    description = {
        "title": "Hospital admissions, Dakar 2019-2024",
        "description": "Admissions by age band, sex and diagnosis (ICD-10 I10, E11.9), "
        "1,250 rows, weekly from 2019-01-07; fees 12.50 EUR.",
        "keywords": ["Admission Date", "Discharge Ward"],
        "columns": [{"name": "age", "role": "quasi_identifier"}],
    }
    answer = _call(broker, SOURCE, "POST", "/v1/catalog/datasets", json=description)
    assert answer.status_code == 201, answer.text


def test_a_number_that_crashes_pandas_parser_is_decided(broker):
    """A cell whose exponent makes pandas' number parser crash the process is read as text: the
    transfer is decided and the broker answers the next one."""
    frame = harmless(60, seed=61)
    frame["notes"] = ["4e4920323432353234373736", "ok"] * 30
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert answer["status"]
    assert broker.send(csv_bytes(harmless(60, seed=62)))["status"]

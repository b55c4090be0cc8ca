"""Round 4 of issue 23, through a real broker: identifier kinds and name forms the detector
missed, judged on what fr-research's inbox holds.

- A value of a kind whose one hit is strong (a Ghana card, a UK driving licence, an IMEI in its
  groups, a MAC, a public IPv6 address, a VIN with its check digit, a German tax id, a US or UK
  phone written nationally, a full name in a missed form) hides among the repeating values of
  a ``notes`` column; a kind whose hit is medium or weak (a National Insurance number, a PAN, a
  public IPv4 address, a plate, GPS coordinates, lower-case names) fills its column, as a
  column of them does. Not approved, nothing reaches the inbox; approved, the judge finds none
  of them in the bytes FR received.
- A column whose name spells the forbidden ``NIN`` of Senegal's records in small capitals,
  negative circled letters or with dots does not reach FR under that name.
- A column name or a catalog entry holding one of the new kinds is refused.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest

from tests.adversarial.conftest import DESTINATION, SOURCE, assert_clean_refusal, settle
from tests.adversarial.tables import csv_bytes, harmless, rng

ONE_CONDEMNS = {
    "ghana card": "GHA-718245103-6",
    "uk driving licence": "MORGA657054SM9IJ",
    "imei": "35-209900-176148-1",
    "mac": "3C:22:FB:7A:10:4E",
    "ipv6": "2a01:e0a:1b3:4c70:5d2e:9f1a:33b8:e402",
    "vin": "1M8GDM9AXKP042788",
    "german tax id": "36 574 261 809",
    "us phone": "call (415) 555-2671",
    "uk phone": "07911 123456",
    "gps degrees": "14.6937° N, 17.4441° W",
    "name middle initial": "Awa M. Diop",
    "name zero-width": "Awa\u200bDiop",
    "name tab": "Awa\tDiop",
    "name small capitals": "ᴀᴡᴀ ᴅɪᴏᴘ",
    "name negative circled": "🅐🅦🅐 🅓🅘🅞🅟",
}
A_COLUMN_OF = {
    "uk national insurance": ["JG 10 37 59 A", "AB123456C", "KL 22 41 09 D", "PR 90 11 23 B"],
    "indian pan": ["ABCPE1234F", "BXZPK5521L", "CDEPM0042Q", "LMNPS9876A"],
    "public ipv4": ["41.82.12.7", "197.210.54.3", "102.176.65.10", "154.124.8.33"],
    "plates": ["DK-1234-AB", "TH-5521-C", "AA-123-BB", "DK-7788-KL"],
    "gps": ["14.6937, -17.4441", "14.7167, -17.4677", "6.5244, 3.3792", "-1.2921, 36.8219"],
    "lower-case names": ["awa diop", "fatou ndiaye", "moussa fall", "aminata sow"],
}


def _as_sent(answer: dict) -> dict[str, str | None]:
    """Each column's ``direct_identifier`` in the report of the data as uploaded."""
    report = ((answer.get("remedy") or {}).get("before") or {}).get("report") or answer["report"]
    return {a["name"]: a["direct_identifier"] for a in report["attributes"]}


def _call(broker, member, method, path, **kwargs):
    headers = {"Authorization": f"Bearer {broker.keys[member]}"}
    return broker.client.request(method, f"{broker.url}{path}", headers=headers, **kwargs)


@pytest.mark.parametrize("key", list(ONE_CONDEMNS))
def test_one_value_of_a_strong_kind_does_not_cross(broker, key):
    value = ONE_CONDEMNS[key]
    frame = harmless(300, seed=71)
    frame["notes"] = rng(72).choice(["ok", "pending", "seen twice", "to call back", value], 300)
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["notes"], answer["report"]
    settle(broker, answer, secrets=[value], known=["age_band", "sex"])


@pytest.mark.parametrize("key", list(A_COLUMN_OF))
def test_a_column_of_a_medium_or_weak_kind_does_not_cross(broker, key):
    values = A_COLUMN_OF[key]
    frame = harmless(300, seed=73)
    frame["notes"] = rng(74).choice(values, 300)
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["notes"], answer["report"]
    settle(broker, answer, secrets=values, known=["age_band", "sex"])


@pytest.mark.parametrize("name", ["ɴɪɴ", "🅝🅘🅝", "N.I.N.", "n_i_n"])
def test_a_forbidden_attribute_under_a_disguised_name_does_not_cross(broker, name):
    """Senegal's records forbid NIN: spelled in letter forms NFKC leaves alone, or with dots,
    it is still NIN (its values here are harmless, so only its name can be judged)."""
    frame = harmless(300, seed=75)
    frame[name] = rng(76).choice(["a", "b", "c"], 300)
    as_is = broker.send(csv_bytes(frame))  # no remedy: the rule says no
    failed = {r["rule"] for r in as_is["rules"] if not r["passed"]}
    assert "forbidden_attribute" in failed, as_is["rules"]
    settle(broker, as_is, known=["age_band", "sex"])
    answer = broker.send(csv_bytes(frame), anonymize="auto")  # the remedy drops it
    delivered = settle(broker, answer, known=["age_band", "sex"])
    if delivered is not None:
        received = pd.read_csv(io.BytesIO(delivered[1]), dtype=str, keep_default_na=False)
        assert name not in received.columns


@pytest.mark.parametrize(
    "name", ["ref 3C:22:FB:7A:10:4E", "GHA-718245103-6", "MORGA657054SM9IJ", "ᴀᴡᴀ ᴅɪᴏᴘ"]
)
def test_a_new_kind_in_a_column_name_is_refused(broker, name):
    frame = harmless(60, seed=77)
    frame[name] = "x"
    response = broker.post(csv_bytes(frame), "data.csv", anonymize="auto")
    assert_clean_refusal(response)
    assert "column name" in response.json()["detail"]


@pytest.mark.parametrize(
    "text",
    [
        "Reach the steward on (415) 555-2671.",
        "Collected at 14.6937° N, 17.4441° W.",
        "Device 35-209900-176148-1 logged the visits.",
        "Server 2a01:e0a:1b3:4c70:5d2e:9f1a:33b8:e402 holds the files.",
        "Steward: Awa M. Diop.",
    ],
)
def test_the_catalog_publishes_none_of_the_new_kinds(broker, text):
    description = {"title": "t", "columns": [{"name": "age", "role": "quasi_identifier"}]}
    description["description"] = text
    answer = _call(broker, SOURCE, "POST", "/v1/catalog/datasets", json=description)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    seen = _call(broker, DESTINATION, "GET", "/v1/catalog", params={"limit": 100}).text
    assert text not in seen


def test_ordinary_numbers_and_versions_still_cross(broker):
    """What the new kinds look like but are not: dates, amounts, ZIP+4, software versions,
    shares to four decimals, times, loopback addresses."""
    frame = harmless(300, seed=79)
    ordinary = ["2024-05-01", "1,250.00", "94103-1234", "v2.3.1", "0.1234", "12:30:45"]
    frame["notes"] = rng(80).choice([*ordinary, "127.0.0.1"], 300)
    answer = broker.send(csv_bytes(frame), anonymize="auto")
    assert _as_sent(answer)["notes"] is None, answer["report"]

"""The same hostile member against what this broker added: the out-of-core path every large CSV
takes, the destination's HTML report page, and dry runs that can be fetched.

Each is a way data could reach fr-research (FR) other than the delivery the broker measured:
counted by another engine (DuckDB, which decides from counts and writes the delivery itself), a
page the destination may open, a preview stored for the sender. The rule is the suite's: not
approved, nothing reaches the inbox; approved, the judge accepts the bytes FR received; and no
other view FR can open holds a value that was not delivered.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from tests.adversarial import judge
from tests.adversarial.conftest import ADMIN, DESTINATION, settle
from tests.adversarial.tables import (
    DIAGNOSES,
    FIRST_NAMES,
    LAST_NAMES,
    birth_dates,
    csv_bytes,
    harmless,
    national_ids,
    phone_numbers,
    rng,
)

AUTO = ["none", "auto"]


def _as_destination(broker) -> dict[str, str]:
    return {"Authorization": f"Bearer {broker.keys[DESTINATION]}"}


# --- the out-of-core path: DuckDB counts, decides and writes ------------------------------------


@pytest.mark.parametrize("anonymize", AUTO)
def test_out_of_core_every_column_declared_sensitive(out_of_core_broker, anonymize):
    """Unique birth dates with zip and sex, all declared sensitive, counted by DuckDB."""
    r = rng(21)
    zips = [f"{z:05d}" for z in r.choice(np.arange(10000, 99999), 60, replace=False)]
    frame = pd.DataFrame(
        {
            "birth_date": birth_dates(400),
            "zip": r.choice(zips, 400),
            "sex": r.choice(["F", "M"], 400),
            "diagnosis": r.choice(DIAGNOSES, 400),
        }
    )
    answer = out_of_core_broker.send(
        csv_bytes(frame), sensitive="birth_date,zip,sex,diagnosis", anonymize=anonymize
    )
    settle(out_of_core_broker, answer, known=["birth_date", "zip", "sex"])


@pytest.mark.parametrize("anonymize", AUTO)
def test_out_of_core_identifier_split_across_two_columns(out_of_core_broker, anonymize):
    """Two columns of 20 values each whose pairs give back each of 400 national ids: the
    broker adds both as quasi-identifiers from its exact first look, and counts them together."""
    r = rng(33)
    first = [f"{v:06d}" for v in r.choice(np.arange(10**5, 10**6), 20, replace=False)]
    second = [f"{v:06d}" for v in r.choice(np.arange(10**5, 10**6), 20, replace=False)]
    pairs = list(itertools.product(first, second))
    r.shuffle(pairs)
    frame = harmless(400, seed=34)
    frame.insert(0, "id_part1", [a for a, _ in pairs])
    frame.insert(1, "id_part2", [b for _, b in pairs])
    answer = out_of_core_broker.send(csv_bytes(frame), sensitive="diagnosis", anonymize=anonymize)
    settle(
        out_of_core_broker,
        answer,
        known=["id_part1", "id_part2"],
        known_sets=[["id_part1", "id_part2", "age_band", "sex"]],
        secrets=[a + b for a, b in pairs[:50]],
    )


@pytest.mark.parametrize("anonymize", AUTO)
def test_out_of_core_names_and_phone_numbers_in_a_note(out_of_core_broker, anonymize):
    """Free text that is not all distinct (five "n/a"), so not an identifier by counts alone."""
    frame = harmless(300, seed=66)
    r = rng(67)
    phones = phone_numbers(295, seed=68)
    names = [f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}" for _ in range(295)]
    spoken = [f"+221 {str(p)[:2]} {str(p)[2:5]} {str(p)[5:7]} {str(p)[7:]}" for p in phones]
    frame["note"] = [f"Call {n} on {p}" for n, p in zip(names, spoken, strict=True)] + ["n/a"] * 5
    answer = out_of_core_broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    settle(
        out_of_core_broker,
        answer,
        known=["age_band", "sex", "note"],
        secrets=spoken + names[:20],
    )


def test_out_of_core_look_alike_values_leave_as_they_were_measured(out_of_core_broker):
    """Out of core, the remedy is verified and measured from the first pass's counts (nothing
    is read again) while the delivery applies the plan to the rows as DuckDB streams them out.
    Values that differ only by a leading zero, a space, a case, a zero-width character or the
    Unicode form of a letter are distinct categories to both: if one of them missed its label
    on the way out, it would leave as a class the broker never measured. The delivered bytes
    must hold the classes the broker reported, k included."""
    r = rng(71)
    ages = [*(str(a) for a in range(18, 90)), "034", " 34", "34 ", "00"]
    cities = ["Dakar", "Dakar ", "dakar", "Dakar\u200b", "Thi\u00e8s", "Thie\u0300s", "Kaolack"]
    frame = pd.DataFrame(
        {
            "age": r.choice(ages, 900),
            "city": r.choice(cities, 900),
            "sex": r.choice(["F", "M"], 900),
            "diagnosis": r.choice(DIAGNOSES, 900),
        }
    )
    answer = out_of_core_broker.send(
        csv_bytes(frame),
        quasi_identifiers="age,city,sex",
        sensitive="diagnosis",
        anonymize="auto",
    )
    assert answer["status"] == "approved", answer["rules"]
    assert answer["dataset"]["anonymized"]
    headers, body = settle(out_of_core_broker, answer, known=["age", "city", "sex"])
    delivered = judge.parse(headers["content-type"], body)
    reported = answer["report"]["quasi_identifiers"]
    kept = [c for c in reported["attributes"] if c in delivered.columns]
    sizes = judge.keyed(delivered[kept]).groupby(kept, dropna=False).size()
    assert len(delivered) == answer["report"]["rows"] == 900
    assert (int(sizes.min()), len(sizes)) == (reported["k"], reported["equivalence_classes"])
    for attribute in answer["report"]["attributes"]:
        column = delivered[attribute["name"]]
        assert column.nunique(dropna=False) == attribute["categories"], attribute["name"]


def test_out_of_core_a_pandas_index_column_is_refused_not_delivered(out_of_core_broker):
    """An unnamed first column: in memory the broker drops a plain 0..n-1 index (and never
    delivers it); out of core it refuses the file, so nothing unnamed crosses either way."""
    frame = harmless(60, seed=9)
    answer = out_of_core_broker.post(frame.to_csv().encode(), "indexed.csv")
    assert answer.status_code == 422, answer.text
    assert "index=False" in answer.json()["detail"]


# --- what the destination can open besides the delivery -----------------------------------------


def _identified(n: int = 120) -> tuple[pd.DataFrame, list[str]]:
    """A table with names and national ids beside coarse data: anonymize=auto drops them."""
    frame = harmless(n, seed=71)
    r = rng(72)
    names = [f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)} {i}" for i in range(n)]
    ids = national_ids(n, seed=73)
    frame.insert(0, "NIN", ids)
    frame.insert(1, "full_name", names)
    return frame, ids[:40] + names[:40]


def test_the_destinations_report_page_holds_nothing_that_was_not_delivered(broker):
    """FR may open the HTML report of a transfer it received. The sender's upload had names
    and national ids (dropped by the remedy) and a file name naming a person: none of it may
    be on FR's page or in FR's view of the transfer, only the decision and what FR received."""
    frame, secrets = _identified()
    answer = broker.send(
        csv_bytes(frame),
        filename="Khady Diop +221771234567.csv",
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize="auto",
    )
    assert answer["status"] == "approved", answer["summary"]
    settle(broker, answer, known=["age_band", "sex"], secrets=secrets)
    url = f"{broker.url}/v1/transfers/{answer['id']}"
    page = broker.client.get(f"{url}/report", headers=_as_destination(broker))
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    view = broker.client.get(url, headers=_as_destination(broker))
    assert view.status_code == 200, view.text
    for seen in (page.text, view.text):
        for secret in [*secrets, "Khady", "221771234567", "NIN", "full_name"]:
            assert secret not in seen, f"{secret!r} reached the destination"
    # The sender's own page does show what it sent: the check above is not vacuous.
    own = broker.client.get(f"{url}/report", headers=ADMIN)
    assert own.status_code == 200 and "NIN" in own.text


def test_a_dry_run_preview_is_for_its_sender_only(broker):
    """A dry run stores what the transfer would deliver, for its sender to look at. FR cannot
    fetch it (404, as for any id it may not see), it is never delivered, and what the sender
    fetches is the measured table, here the generalized one without the names."""
    frame, secrets = _identified()
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize="auto",
        dry_run=True,
    )
    preview = answer["dataset"]["preview"]
    assert answer["dry_run"] and preview is not None, answer["dataset"]
    stolen = broker.client.get(f"{broker.url}{preview['url']}", headers=_as_destination(broker))
    assert stolen.status_code == 404, stolen.text
    assert not any(secret in stolen.text for secret in secrets)
    broker.assert_not_delivered(answer)
    own = broker.client.get(
        f"{broker.url}{preview['url']}",
        headers={"Authorization": f"Bearer {broker.keys['sn-hospital']}"},
    )
    assert own.status_code == 200, own.text
    assert not any(secret in own.text for secret in secrets)

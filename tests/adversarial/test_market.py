"""The data market as a way across the border: a hostile member against the catalog, the
negotiation and transfers made under an agreement, through a real broker and the bytes the
destination receives.

The rule is the suite's: not approved, nothing reaches the inbox; approved, the judge accepts
the bytes fr-research received. And the catalog, which every member reads, holds no value.
"""

from __future__ import annotations

import pytest

from tests.adversarial import judge
from tests.adversarial.conftest import ADMIN, DESTINATION, SOURCE, settle
from tests.adversarial.tables import (
    DIAGNOSES,
    FIRST_NAMES,
    LAST_NAMES,
    csv_bytes,
    harmless,
    national_ids,
    phone_numbers,
    rng,
)

COLUMNS = [
    {"name": "nin", "role": "other"},
    {"name": "name", "role": "other"},
    {"name": "age_band", "role": "quasi_identifier"},
    {"name": "sex", "role": "quasi_identifier"},
    {"name": "diagnosis", "role": "sensitive"},
]


def _agreement(broker, columns=COLUMNS, terms=None) -> str:
    """SN publishes, FR asks for research, SN offers (``terms``), FR accepts and verifies."""
    entry = broker.as_member(
        SOURCE,
        "POST",
        "/v1/catalog/datasets",
        json={"title": "admissions", "columns": columns, "purposes": ["research"]},
    )
    assert entry.status_code == 201, entry.text
    asked = broker.as_member(
        DESTINATION,
        "POST",
        "/v1/negotiations",
        json={"dataset_id": entry.json()["id"], "purpose": "research"},
    ).json()
    negotiation = asked["id"]
    broker.as_member(SOURCE, "POST", f"/v1/negotiations/{negotiation}/offer", json={"terms": terms})
    broker.as_member(DESTINATION, "POST", f"/v1/negotiations/{negotiation}/accept", json={})
    final = broker.as_member(DESTINATION, "POST", f"/v1/negotiations/{negotiation}/verify", json={})
    assert final.json()["state"] == "FINALIZED", final.text
    return final.json()["agreement_id"]


def _identified(n: int, seed: int):
    frame = harmless(n, seed=seed)
    r = rng(seed + 1)
    frame.insert(0, "nin", national_ids(n, seed=seed + 2))
    frame.insert(
        1, "name", [f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)} {i}" for i in range(n)]
    )
    return frame


@pytest.mark.parametrize("anonymize", ["none", "auto"])
def test_identifiers_sent_under_an_agreement_do_not_cross(broker, anonymize):
    """The provider names an agreement whose terms leave the national id and the name home,
    then sends them anyway: with anonymize=none nothing leaves, with auto they are dropped."""
    agreement = _agreement(broker, terms={"columns": ["age_band", "sex", "diagnosis"]})
    frame = _identified(300, seed=81)
    answer = broker.send(
        csv_bytes(frame),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
        agreement_id=agreement,
    )
    settle(
        broker,
        answer,
        known=["age_band", "sex"],
        secrets=list(frame["nin"][:50]) + list(frame["name"][:50]),
    )
    if anonymize == "none":
        failed = {(r["rule"], r["scope"]) for r in answer["rules"] if not r["passed"]}
        assert ("forbidden_attribute", "agreement") in failed


def test_someone_elses_agreement_opens_nothing(broker):
    agreement = _agreement(broker)
    broker.register("ng-intruder", "NG", "http://127.0.0.1:9/ng/inbox")
    data = csv_bytes(harmless(60, seed=91))
    stolen = broker.post(data, source="ng-intruder", agreement_id=agreement)
    assert stolen.status_code == 403
    # The consumer cannot send "its" agreement's data to itself either.
    reversed_ = broker.post(data, source=DESTINATION, destination=SOURCE, agreement_id=agreement)
    assert reversed_.status_code == 403


def test_received_data_cannot_be_sent_on_under_no_onward_transfer(broker):
    """FR receives data under an agreement forbidding onward transfer, then tries to push the
    exact bytes to a third member: refused, nothing delivered."""
    agreement = _agreement(broker, terms={"columns": ["age_band", "sex", "diagnosis"]})
    answer = broker.send(
        csv_bytes(harmless(300, seed=101)),
        quasi_identifiers="age_band,sex",
        sensitive="diagnosis",
        agreement_id=agreement,
    )
    _headers, body = settle(broker, answer, known=["age_band", "sex"])
    broker.register("fr-partner", "FR", "http://127.0.0.1:9/fr-partner/inbox")
    onward = broker.send(
        body, source=DESTINATION, destination="fr-partner", quasi_identifiers="age_band,sex"
    )
    assert onward["status"] == "rejected"
    assert "onward_transfer" in {r["rule"] for r in onward["rules"] if not r["passed"]}
    broker.assert_not_delivered(onward)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("description", "Contact the patient on +221 77 123 45 67 before use"),
        ("title", "Admissions of awa.diop@example.sn"),
        ("keywords", ["1850578006084"]),  # a French NIR
    ],
)
def test_the_catalog_carries_no_value(broker, field, value):
    """A catalog entry is read in every jurisdiction and is not measured: a provider that puts
    a phone number, an e-mail address or a national id in it is refused, nothing stored."""
    description = {"title": "t", "columns": COLUMNS, field: value}
    answer = broker.as_member(SOURCE, "POST", "/v1/catalog/datasets", json=description)
    assert answer.status_code == 422, answer.text
    assert "describe the data, never its values" in answer.json()["detail"]
    seen = broker.as_member(DESTINATION, "GET", "/v1/catalog", params={"limit": 100}).text
    text = value if isinstance(value, str) else value[0]
    assert text not in seen


def test_a_measured_entry_shows_figures_never_values(broker):
    """The provider has the broker measure a table of names and phone numbers: what the
    catalog and the destination's offers show are counts, not one of them."""
    n = 200
    r = rng(111)
    phones = phone_numbers(n, seed=112)
    frame = harmless(n, seed=113)
    frame["name"] = [f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}" for _ in range(n)]
    frame["phone"] = [f"+221{p}" for p in phones]
    frame["diagnosis"] = r.choice(DIAGNOSES, n)
    columns = [
        {"name": "age_band", "role": "quasi_identifier"},
        {"name": "sex", "role": "quasi_identifier"},
        {"name": "diagnosis", "role": "sensitive"},
        {"name": "name", "role": "other"},
        {"name": "phone", "role": "other"},
    ]
    entry = broker.as_member(
        SOURCE, "POST", "/v1/catalog/datasets", json={"title": "calls", "columns": columns}
    ).json()
    measured = broker.as_member(
        SOURCE,
        "POST",
        f"/v1/catalog/datasets/{entry['id']}/measurement",
        files={"file": ("calls.csv", csv_bytes(frame), "text/csv")},
    )
    assert measured.status_code == 200, measured.text
    assert "phone" in measured.json()["summary"]["identifiers"]
    for member in (DESTINATION, SOURCE):
        shown = broker.as_member(member, "GET", f"/v1/catalog/datasets/{entry['id']}").text
        problems = judge.leaked_secrets("application/json", shown.encode(), phones[:50], None)
        assert problems == [], problems
        assert all(name not in shown for name in frame["name"][:50])
    admin = broker.client.get(f"{broker.url}/v1/catalog/datasets/{entry['id']}", headers=ADMIN)
    assert "+221" not in admin.text


PHONE = "+221 77 123 45 67"
EMAIL = "awa.diop@example.sn"
NIR = "1850578006084"  # a French NIR (13 digits)
HIDDEN = ["awa.diop@\u200bexample.sn", "ａｗａ．ｄｉｏｐ＠ｅｘａｍｐｌｅ．ｓｎ"]


def _requested(broker) -> str:
    entry = broker.as_member(
        SOURCE,
        "POST",
        "/v1/catalog/datasets",
        json={"title": "admissions", "columns": COLUMNS, "purposes": ["research"]},
    ).json()
    asked = broker.as_member(
        DESTINATION,
        "POST",
        "/v1/negotiations",
        json={"dataset_id": entry["id"], "purpose": "research"},
    )
    assert asked.status_code in (200, 201), asked.text
    return asked.json()["id"]


def _unseen(broker, negotiation: str, secret: str) -> None:
    for member in (SOURCE, DESTINATION):
        shown = broker.as_member(member, "GET", f"/v1/negotiations/{negotiation}").text
        assert secret not in shown
    audit = broker.client.get(f"{broker.url}/v1/audit", headers=ADMIN, params={"limit": 100})
    assert secret not in audit.text


def _refused(answer, secret: str, field: str) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert field in answer.json()["detail"] and "never values" in answer.json()["detail"]
    assert secret not in answer.text


@pytest.mark.parametrize("secret", [EMAIL, PHONE, NIR, *HIDDEN])
def test_a_termination_reason_carries_no_value_to_the_other_party(broker, secret):
    negotiation = _requested(broker)
    for member in (DESTINATION, SOURCE):
        answer = broker.as_member(
            member,
            "POST",
            f"/v1/negotiations/{negotiation}/terminate",
            json={"reason": f"the patient ({secret}) withdrew consent"},
        )
        _refused(answer, secret, "reason")
    _unseen(broker, negotiation, secret)
    # a reason without a value ends it, and the other party reads it
    ended = broker.as_member(
        SOURCE,
        "POST",
        f"/v1/negotiations/{negotiation}/terminate",
        json={"reason": "no longer shared after 2026-11-30"},
    )
    assert ended.status_code == 200 and ended.json()["state"] == "TERMINATED", ended.text


@pytest.mark.parametrize("secret", [EMAIL, PHONE, NIR, *HIDDEN])
def test_a_purpose_or_column_list_carries_no_value_to_the_provider(broker, secret):
    entry = broker.as_member(
        SOURCE,
        "POST",
        "/v1/catalog/datasets",
        json={"title": "admissions", "columns": COLUMNS, "purposes": ["research"]},
    ).json()
    for body, field in (
        ({"dataset_id": entry["id"], "purpose": f"research on {secret}"}, "purpose"),
        (
            {"dataset_id": entry["id"], "purpose": "research", "columns": ["sex", secret]},
            "columns[1]",
        ),
    ):
        answer = broker.as_member(DESTINATION, "POST", "/v1/negotiations", json=body)
        _refused(answer, secret, field)
    listed = broker.as_member(SOURCE, "GET", "/v1/negotiations", params={"limit": 100}).text
    assert secret not in listed
    negotiation = _requested(broker)
    counter = broker.as_member(
        DESTINATION,
        "POST",
        f"/v1/negotiations/{negotiation}/request",
        json={"columns": ["age_band", secret]},
    )
    _refused(counter, secret, "columns[1]")
    offered = broker.as_member(
        SOURCE,
        "POST",
        f"/v1/negotiations/{negotiation}/offer",
        json={"terms": {"columns": ["age_band", secret]}},
    )
    _refused(offered, secret, "terms.columns[1]")
    _unseen(broker, negotiation, secret)

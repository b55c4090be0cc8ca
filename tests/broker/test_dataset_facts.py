"""A transfer's dataset facts (broker.transfers.facts): written, stored, read back and served by
one model; rows stored by older brokers read with their defaults.

The old rows are the shapes the broker wrote at 2026-11-21 (cafe464: the upload's figures only)
and 2026-11-22 (e7f4cd9: with what was delivered, before references and dry-run previews)."""

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from broker.callers import MEMBER, Caller
from broker.transfers.facts import DatasetFacts
from broker.transfers.models import Transfer
from broker.transfers.recording import delivery_headers
from broker.transfers.schemas import TransferRead
from broker.wire import headers as h
from tests.broker.conftest import ADMIN, bearer

FIRST = {
    "sha256": "a" * 64,
    "size_bytes": 5_120,
    "rows": 8,
    "columns": 4,
    "filename": "patients.csv",
    "format": "csv",
}
DELIVERED = FIRST | {
    "notes": [],
    "anonymized": True,
    "delivered_filename": "transfer-t-1.csv",
    "delivered_sha256": "b" * 64,
    "delivered_rows": 7,
    "delivered_columns": 3,
}


def stored_transfer(dataset: dict) -> Transfer:
    return Transfer(
        id="t-1",
        source_id="sn-hospital",
        destination_id="fr-research",
        purpose="research",
        status="approved",
        anonymize="auto",
        quasi_identifiers=["Age"],
        quasi_identifiers_inferred=False,
        sensitive=[],
        report=None,
        rules=[],
        remedy=None,
        policy_versions={"SN": 1, "FR": 1},
        dataset=dataset,
        request_fingerprint="f" * 64,
        created_at=datetime(2026, 11, 22, 9, 0, tzinfo=UTC),
        kind="microdata",
        aggregate=None,
    )


def test_the_first_rows_read_with_their_defaults():
    facts = DatasetFacts.of(FIRST)
    assert (facts.rows, facts.columns, facts.filename, facts.format) == (
        8,
        4,
        "patients.csv",
        "csv",
    )
    assert (facts.location, facts.notes, facts.anonymized, facts.preview) == (None, [], False, None)
    assert facts.delivered_sha256 is None and facts.delivered_filename is None
    assert (facts.delivered_rows, facts.delivered_columns) == (None, None)
    assert facts.stored() == FIRST | {
        "location": None,
        "notes": [],
        "anonymized": False,
        "delivered_sha256": None,
        "delivered_filename": None,
        "delivered_rows": None,
        "delivered_columns": None,
        "preview": None,
    }


def test_an_old_row_is_served_to_its_source_and_its_destination():
    transfer = stored_transfer(DELIVERED)
    mine = TransferRead.of(transfer, caller=Caller(MEMBER, "sn-hospital", "SN")).dataset
    assert (mine.sha256, mine.filename, mine.anonymized) == ("a" * 64, "patients.csv", True)
    assert mine.location is None and mine.preview is None
    theirs = TransferRead.of(transfer, caller=Caller(MEMBER, "fr-research", "FR")).dataset
    assert (theirs.sha256, theirs.rows, theirs.columns) == ("b" * 64, 7, 3)
    assert theirs.filename is None and theirs.size_bytes == 0
    headers = delivery_headers(transfer, "text/csv")
    assert headers[h.FILENAME] == "transfer-t-1.csv" and headers[h.ANONYMIZED] == "true"


def test_a_row_that_is_not_one_is_refused():
    with pytest.raises(ValueError):
        DatasetFacts.of({key: value for key, value in FIRST.items() if key != "format"})


def test_a_transfer_stores_what_it_serves(federation, client, connection):
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
    )
    assert answer.status_code == 200, answer.text
    transfer_id = answer.json()["id"]
    row = connection.execute(
        text("SELECT dataset FROM transfers WHERE id = :id"), {"id": transfer_id}
    ).scalar_one()
    stored = json.loads(row) if isinstance(row, str) else row
    assert DatasetFacts.of(stored).stored() == stored  # every field written, as the model has it
    served = client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()["dataset"]
    assert served == stored == answer.json()["dataset"]
    destination = bearer(federation.keys["fr-research"])
    seen = client.get(f"/v1/transfers/{transfer_id}", headers=destination).json()["dataset"]
    assert seen["sha256"] == stored["delivered_sha256"] != stored["sha256"]
    assert seen["filename"] is None and seen["rows"] == stored["delivered_rows"]

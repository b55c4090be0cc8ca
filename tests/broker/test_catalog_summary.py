"""A catalogued version's summary (broker.catalog.summary): written, stored, served and read by
offers with one model; a summary stored before ``dropped_at_k`` (2026-11-26, d3910dd) reads
with it null, and an offer then falls back to the identifying columns of role other."""

import json

from sqlalchemy import text

from broker.catalog.entries import summary_of
from broker.catalog.summary import CatalogSummary
from tests.broker.conftest import ADMIN, bearer
from tests.broker.test_catalog import catalog, measure, publish

FIRST = {  # the shape d3910dd wrote
    "rows": 9,
    "quasi_identifiers": ["Age", "Gender"],
    "sensitive": ["Disease"],
    "k": 1,
    "max_prosecutor_risk": 1.0,
    "l": 1,
    "t": 0.5,
    "identifiers": ["NIN", "Name", "Age"],
    "utility_at_k": {"2": 61.5, "3": 40.0},
}


def test_a_first_summary_reads_without_what_a_remedy_drops():
    summary = CatalogSummary.model_validate(FIRST)
    assert summary.dropped_at_k is None
    assert summary.stored() == FIRST | {"dropped_at_k": None}
    offered = summary_of(FIRST)
    assert (offered.rows, offered.k, offered.l, offered.t) == (9, 1, 1, 0.5)
    assert offered.utility_at_k == {2: 61.5, 3: 40.0}
    assert offered.dropped(3) is None and offered.identifiers == ("NIN", "Name", "Age")


def test_the_current_summary_reads_what_a_remedy_drops():
    offered = summary_of(FIRST | {"dropped_at_k": {"3": ["NIN", "Name"], "5": ["NIN", "Name"]}})
    assert offered.dropped(3) == ("NIN", "Name") and offered.dropped(4) == ("NIN", "Name")


def stored_summary(connection, dataset: str) -> dict:
    row = connection.execute(
        text("SELECT summary FROM catalog_versions WHERE dataset_id = :id"), {"id": dataset}
    ).scalar_one()
    return json.loads(row) if isinstance(row, str) else row


def test_the_summary_served_is_the_one_stored_old_rows_included(federation, connection):
    dataset = publish(federation).json()["id"]
    answer = measure(federation, dataset)
    assert answer.status_code == 200, answer.text
    stored = stored_summary(connection, dataset)
    assert set(stored) == set(CatalogSummary.model_fields)
    assert answer.json()["summary"] == stored
    [before] = catalog(federation, member="fr-research")["dcat:dataset"]
    # As a broker before dropped_at_k stored it: still served, and offered alike (NIN and Name
    # are the identifying columns of role other, what the remedy drops here too).
    del stored["dropped_at_k"]
    connection.execute(
        text("UPDATE catalog_versions SET summary = :s WHERE dataset_id = :id"),
        {"s": json.dumps(stored), "id": dataset},
    )
    served = federation.client.get(f"/v1/catalog/datasets/{dataset}/versions", headers=ADMIN)
    assert served.status_code == 200, served.text
    assert served.json()[0]["summary"] == stored | {"dropped_at_k": None}
    [after] = catalog(federation, member="fr-research")["dcat:dataset"]
    assert after["odrl:hasPolicy"] == before["odrl:hasPolicy"]
    own = federation.client.get(
        f"/v1/catalog/datasets/{dataset}", headers=bearer(federation.keys["sn-hospital"])
    )
    assert own.status_code == 200, own.text  # its JSON-LD, with the measurement
    assert own.json()["fedbroker:measurement"]["fedbroker:k"] == stored["k"]

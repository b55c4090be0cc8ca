"""A decision's stored rules and remedy (broker.fsla.stored) and an aggregate release's stored
document (broker.transfers.release): written, stored, read back and served by one model each;
rows stored by older brokers read with their defaults.

The old rows in tests/fixtures/stored_decisions are what the broker's code at those commits
stored (``Transfer.remedy``, ``rules``, ``report``) for patients_original.csv sent from SN to FR
with quasi-identifiers Age, Gender and sensitive Disease (tests/broker's ``federation``, run from
``git archive <commit>``): cafe464 (the first transfers, 2026-11-21: unverified hints) and
89426b2 (the first verified remedies, the same day: offered, and applied with anonymize=auto),
beside the SN and FR records seeded then.

An aggregate release stored before its document had a ``schema_version`` (version 1) held, in
``answers``, each query's document with its ``result`` (the output of
``broker.privacy.release.compute``) when released, the queries' documents without results
(``Plan.as_dict``) when not; :func:`version_1` writes that shape from a version 2 document.
"""

import json
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text

from broker.fsla.models import FSLARecord
from broker.fsla.replay import PastDecision, replay
from broker.fsla.stored import StoredRemedy, StoredRule
from broker.fsla.summary import summarize
from broker.transfers.release import StoredRelease
from broker.transfers.schemas import RemedyRead
from broker.wire.statuses import TransferStatus
from tests.broker.conftest import ADMIN, bearer
from tests.broker.test_aggregate_releases import release

STORED = Path(__file__).parents[1] / "fixtures" / "stored_decisions"
FIRST = json.loads((STORED / "decisions_cafe464.json").read_text())["offered"]
VERIFIED = json.loads((STORED / "decisions_89426b2.json").read_text())
QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


def seeded(code: str) -> FSLARecord:
    return FSLARecord.model_validate(yaml.safe_load((STORED / f"{code}_89426b2.yaml").read_text()))


def test_the_first_remedy_hints_read_with_their_defaults():
    remedy = StoredRemedy.of(FIRST["remedy"])
    assert remedy.verified is False and remedy.applied is False
    assert (remedy.information_loss, remedy.suppressed_rows, remedy.after, remedy.before) == (
        None,
        None,
        None,
        None,
    )
    assert [(s.column, s.method) for s in remedy.steps] == [
        ("NIN", "drop"),
        ("Name", "drop"),
        ("Age, Gender", "mondrian"),
        ("NIN", "generalize"),
        ("Name", "generalize"),
    ]
    assert remedy.steps[2].parameters == {"k": 3, "l": 2, "t": 0.7}
    assert remedy.steps[0].reason == FIRST["remedy"]["steps"][0]["reason"]
    assert remedy.note == FIRST["remedy"]["note"]


def test_the_first_verified_remedies_read_with_their_defaults():
    offered = StoredRemedy.of(VERIFIED["offered"]["remedy"])
    assert offered.verified is True and offered.applied is False and offered.before is None
    assert [step.reason for step in offered.steps] == ["", "", ""]  # stored as null
    assert (offered.after.rows, offered.after.k, offered.after.equivalence_classes) == (9, 4, 2)
    loss = VERIFIED["offered"]["remedy"]["information_loss"]
    assert offered.information_loss.utility_percent == loss["utility_percent"]
    assert offered.information_loss.attribute_utility_percent == {
        "Age": loss["attribute_utility_percent"]["Age"],
        "Gender": 0.0,
    }
    applied = StoredRemedy.of(VERIFIED["applied"]["remedy"])
    assert applied.applied is True
    before = applied.before
    # the report as uploaded, version 0 (no schema_version): k = 1 (NIN and Name distinct)
    assert before.report.quasi_identifiers.k == 1 and before.report.precision_measured is False
    stored_rules = VERIFIED["applied"]["remedy"]["before"]["rules"]
    assert [rule.stored() for rule in before.rules] == stored_rules


def test_old_rules_read_and_write_back_field_for_field():
    for rules in (FIRST["rules"], VERIFIED["offered"]["rules"], VERIFIED["applied"]["rules"]):
        assert [StoredRule.of(rule).stored() for rule in rules] == rules


def test_old_remedies_are_served_and_summarized():
    served = RemedyRead.model_validate(VERIFIED["applied"]["remedy"]).model_dump(mode="json")
    assert "schema_version" not in served["before"]["report"]
    assert served["before"]["report"]["quasi_identifiers"]["k"] == 1
    for decision in (FIRST, VERIFIED["offered"]):
        read = RemedyRead.model_validate(decision["remedy"])
        entries = summarize(decision["status"], decision["rules"], read.model_dump(), ["Age"])
        assert entries and all(entry["do"] for entry in entries)


def test_an_old_applied_remedy_is_replayed_from_the_data_as_uploaded():
    decision = VERIFIED["applied"]
    past = PastDecision(
        transfer_id="t-1",
        status=decision["status"],
        source_jurisdiction="SN",
        destination_jurisdiction="FR",
        purpose="research",
        quasi_identifiers=("Age", "Gender"),
        sensitive=("Disease",),
        report=decision["report"],
        rules=decision["rules"],
        remedy=decision["remedy"],
        source_policy=seeded("sn"),
        destination_policy=seeded("fr"),
    )
    found = replay(past, "SN", seeded("sn"))
    assert found.replayable, found.note
    # read from remedy.before (k = 1 as uploaded), not from the delivered report (k = 4)
    assert found.old_verdict == found.new_verdict == TransferStatus.ANONYMIZATION_REQUIRED
    assert found.newly_failed == () and found.newly_passed == ()
    assert found.delivered_passes is True


def test_an_applied_remedy_without_its_before_is_not_replayed():
    decision = VERIFIED["applied"]
    remedy = {k: v for k, v in decision["remedy"].items() if k != "before"}
    past = PastDecision(
        "t-1",
        "approved",
        "SN",
        "FR",
        "research",
        ("Age", "Gender"),
        ("Disease",),
        decision["report"],
        decision["rules"],
        remedy,
        seeded("sn"),
        seeded("fr"),
    )
    found = replay(past, "SN", seeded("sn"))
    assert not found.replayable and "not stored" in found.note


def test_a_remedy_that_is_not_one_is_refused():
    with pytest.raises(ValueError):
        StoredRemedy.of({"steps": []})  # verified missing
    with pytest.raises(ValueError):
        StoredRule.of({k: v for k, v in FIRST["rules"][0].items() if k != "passed"})


@pytest.mark.parametrize("anonymize", ["none", "auto"])
def test_a_transfer_stores_what_it_serves(federation, client, connection, anonymize):
    answer = federation.send(
        "sn-hospital",
        "patients_original.csv",
        destination="fr-research",
        anonymize=anonymize,
        **QI,
    )
    assert answer.status_code == 200, answer.text
    transfer_id = answer.json()["id"]
    row = connection.execute(
        text("SELECT remedy, rules FROM transfers WHERE id = :id"), {"id": transfer_id}
    ).one()
    remedy, rules = (json.loads(v) if isinstance(v, str) else v for v in row)
    assert StoredRemedy.of(remedy).stored() == remedy  # every field written, as the model has it
    assert [StoredRule.of(rule).stored() for rule in rules] == rules
    served = client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()
    assert served == answer.json()
    assert [{k: r[k] for k in rules[0]} for r in served["rules"]] == rules
    if anonymize == "auto":
        assert remedy["applied"] is True and served["remedy"]["applied"] is True
        report = remedy["before"].pop("report")
        assert (
            report["schema_version"]
            and "schema_version" not in served["remedy"]["before"]["report"]
        )
        served["remedy"]["before"].pop("report")
    else:
        assert remedy["applied"] is False and remedy["before"] is None
    assert served["remedy"] == remedy


def test_an_aggregate_release_stores_what_it_serves(federation, client, connection):
    answer = release(federation)
    assert answer.status_code == 200, answer.text
    transfer_id = answer.json()["id"]
    row = connection.execute(
        text("SELECT aggregate FROM transfers WHERE id = :id"), {"id": transfer_id}
    ).scalar_one()
    stored = json.loads(row) if isinstance(row, str) else row
    assert StoredRelease.of(stored).stored() == stored
    assert stored["dataset_key"] and stored["released"] is True
    served = client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()["aggregate"]
    assert served == stored == answer.json()["aggregate"]
    seen = client.get(
        f"/v1/transfers/{transfer_id}", headers=bearer(federation.keys["fr-research"])
    ).json()["aggregate"]
    assert seen == {**stored, "dataset_key": None}


def version_1(document: dict) -> dict:
    """``document`` (version 2) as brokers stored it before ``schema_version``."""
    old = {k: v for k, v in document.items() if k not in ("schema_version", "queries", "answers")}
    if document["released"]:
        pairs = zip(document["queries"], document["answers"], strict=True)
        old["answers"] = [{**query, "result": answer} for query, answer in pairs]
    else:
        old["answers"] = document["queries"]
    return old


@pytest.mark.parametrize("released", [True, False])
def test_an_aggregate_release_stored_in_version_1_reads_as_version_2(
    federation, client, connection, released
):
    transfer_id = release(federation).json()["id"]
    row = connection.execute(
        text("SELECT aggregate FROM transfers WHERE id = :id"), {"id": transfer_id}
    ).scalar_one()
    stored = json.loads(row) if isinstance(row, str) else row
    assert stored["schema_version"] == 2 and len(stored["answers"]) == len(stored["queries"]) == 3
    if not released:
        stored = {**stored, "spent": False, "released": False, "answers": None}
    old = version_1(stored)
    assert "queries" not in old and all(("result" in a) is released for a in old["answers"])
    connection.execute(
        text("UPDATE transfers SET aggregate = :a WHERE id = :id"),
        {"a": json.dumps(old), "id": transfer_id},
    )
    served = client.get(f"/v1/transfers/{transfer_id}", headers=ADMIN).json()["aggregate"]
    assert served == stored
    seen = client.get(
        f"/v1/transfers/{transfer_id}", headers=bearer(federation.keys["fr-research"])
    ).json()["aggregate"]
    assert seen == {**stored, "dataset_key": None}


def test_the_openapi_schema_names_the_release_documents_typed_fields(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    release_schema = schemas["AggregateRead"]["properties"]
    assert release_schema["queries"]["items"] == {"$ref": "#/components/schemas/PlannedQuery"}
    answers = release_schema["answers"]["anyOf"][0]["items"]["anyOf"]
    assert {a["$ref"].rsplit("/", 1)[1] for a in answers} == {
        "CountAnswer",
        "DeclaredCountsAnswer",
        "DataKeyCountsAnswer",
        "SumAnswer",
        "MeanAnswer",
        "QuantilesAnswer",
    }
    assert set(schemas["MeanAnswer"]["properties"]) == {"mean", "sum", "count", "interval"}
    assert set(schemas["PlannedQuery"]["properties"]) >= {"query", "mechanism", "accuracy"}
    assert schemas["ReleaseQuery"]["properties"]["type"]["enum"] == [
        "count",
        "count_by",
        "sum",
        "mean",
        "quantile",
    ]

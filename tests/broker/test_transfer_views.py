"""Who sees what of a transfer (TransferRead.of): its source and admins all of it, its
destination only the decision and what it received. Built from unsaved rows, no database."""

from datetime import UTC, datetime

from broker.callers import ADMIN, MEMBER, Caller
from broker.transfers.models import Transfer
from broker.transfers.schemas import TransferRead

SOURCE = Caller(MEMBER, "sn-hospital", "SN")
DESTINATION = Caller(MEMBER, "fr-research", "FR")
ADMINISTRATOR = Caller(ADMIN, admin_name="alice")
PASSED = {
    "rule": "min_k",
    "scope": "export",
    "jurisdiction": "SN",
    "attribute": "Age,Gender",
    "passed": True,
    "measured": 4,
    "threshold": 3,
    "detail": "k = 4",
}


def transfer(**changes) -> Transfer:
    values = dict(
        id="t-1",
        source_id="sn-hospital",
        destination_id="fr-research",
        purpose="research",
        status="approved",
        anonymize="none",
        quasi_identifiers=["Age", "Gender"],
        quasi_identifiers_inferred=True,
        sensitive=["Disease"],
        report=None,
        rules=[PASSED],
        remedy=None,
        policy_versions={"SN": 2, "FR": 1},
        dataset={
            "sha256": "a" * 64,
            "size_bytes": 5_120,
            "rows": 8,
            "columns": 4,
            "filename": "patients-of-dr-diallo.csv",
            "format": "csv",
            "anonymized": False,
            "delivered_filename": "transfer-t-1.csv",
            "delivered_sha256": "b" * 64,
            "delivered_rows": 8,
            "delivered_columns": 3,
        },
        request_fingerprint="f" * 64,
        created_at=datetime(2026, 11, 27, 9, 0, tzinfo=UTC),
        kind="microdata",
        aggregate=None,
    )
    return Transfer(**(values | changes))


def test_the_destination_sees_the_decision_and_what_it_received_only():
    seen = TransferRead.of(transfer(), caller=DESTINATION)
    assert (seen.status, seen.source, seen.purpose) == ("approved", "sn-hospital", "research")
    assert seen.rules == [] and seen.report is None and seen.remedy is None
    assert seen.quasi_identifiers == [] and seen.sensitive == []
    assert not seen.quasi_identifiers_inferred
    dataset = seen.dataset
    assert dataset.filename is None and dataset.size_bytes == 0
    assert dataset.sha256 == "b" * 64  # what it received, not the upload's hash
    assert (dataset.rows, dataset.columns) == (8, 3)
    assert dataset.delivered_filename == "transfer-t-1.csv"
    shown = seen.model_dump_json()
    for sent in ("a" * 64, "patients-of-dr-diallo", "Disease", "Age", "5120"):
        assert sent not in shown


def test_the_source_and_admins_see_all_of_it():
    for caller in (SOURCE, ADMINISTRATOR, None):
        seen = TransferRead.of(transfer(), caller=caller)
        assert seen.dataset.filename == "patients-of-dr-diallo.csv"
        assert seen.dataset.sha256 == "a" * 64 and seen.dataset.size_bytes == 5_120
        assert seen.quasi_identifiers == ["Age", "Gender"] and seen.sensitive == ["Disease"]
        assert [rule.rule for rule in seen.rules] == ["min_k"]


def test_the_destination_of_an_aggregate_release_never_sees_its_ledger_key():
    aggregate = {
        "epsilon": "1",
        "epsilon_exact": "1/1",
        "delta": "0",
        "delta_exact": "0/1",
        "spent": True,
        "released": True,
        "dataset_key": "c" * 64,
        "queries": [
            {
                "query": {"type": "count"},
                "mechanism": "Laplace",
                "epsilon": "1",
                "epsilon_exact": "1/1",
                "delta": "0",
                "contributions": 1,
                "scale": 1.0,
                "accuracy": {"confidence": 0.95, "half_width": 3.0, "meaning": "within 3"},
            }
        ],
        "answers": [{"count": 9}],
    }
    released = transfer(kind="aggregate", aggregate=aggregate)
    assert TransferRead.of(released, caller=DESTINATION).aggregate.dataset_key is None
    assert "c" * 64 not in TransferRead.of(released, caller=DESTINATION).model_dump_json()
    assert TransferRead.of(released, caller=SOURCE).aggregate.dataset_key == "c" * 64
    seen = TransferRead.of(released, caller=DESTINATION).aggregate
    assert seen.model_dump(mode="json") == {**aggregate, "schema_version": 2, "dataset_key": None}


def test_a_dry_run_says_so_and_an_unapproved_transfer_has_no_delivery():
    seen = TransferRead.of(transfer(status="rejected"), dry_run=True)
    assert seen.dry_run and seen.delivery.status == "not_applicable"

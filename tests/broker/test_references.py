"""Transfers by reference: the data stays where a Dask cluster reads it; the broker counts it
there, decides with the same code, and delivers a signed document naming what it wrote."""

import hashlib
import io
import json
import time

import pandas as pd
import pytest
from distributed import LocalCluster
from fastapi.testclient import TestClient
from sqlalchemy import update

from broker.background import Deadline, PastDeadline
from broker.datasets import ReadLimits
from broker.intake import pinned_files, references
from broker.main import create_app
from broker.transfers import job_queue
from broker.transfers.models import TransferJob
from broker.wire.signing import content_digest
from tests.broker.conftest import ADMIN, Federation, bearer, drain
from tests.broker.test_transfer_jobs import run_jobs
from tests.conftest import FIXTURES

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.fixture
def storage(tmp_path):
    """The federation's storage: the source's folder, the broker's output folder."""
    (tmp_path / "sn").mkdir()
    for name in ("patients_published", "patients_original"):
        frame = pd.read_csv(FIXTURES / f"{name}.csv", dtype=str, keep_default_na=False)
        frame.to_csv(tmp_path / "sn" / f"{name}.csv", index=False)
        frame.to_parquet(tmp_path / "sn" / f"{name}.parquet", index=False)
    return tmp_path


@pytest.fixture
def federation(connection, settings, cluster, storage, inbox):
    settings = settings.model_copy(
        update={
            "dask_scheduler": cluster.scheduler_address,
            "reference_roots": {"sn-hospital": [f"{storage / 'sn'}/"]},
            "reference_output": str(storage / "out"),
        }
    )
    with TestClient(create_app(settings, bind=connection)) as client:
        federation = Federation(client)
        federation.add_lab(inbox.url)
        yield federation


def by_reference(federation, location, **form):
    return federation.client.post(
        "/v1/transfers",
        headers=bearer(federation.keys["sn-hospital"]),
        data={"destination": "fr-lab", "purpose": "research", "location": location} | form,
    )


def decided(federation, answer) -> dict:
    assert answer.status_code == 202, answer.text
    run_jobs(federation.client)
    job = federation.client.get(answer.headers["Location"], headers=ADMIN).json()
    assert job["state"] == "done", job
    return job["transfer"]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_reference_is_decided_as_the_same_upload_would_be(federation, storage, suffix):
    location = str(storage / "sn" / f"patients_original.{suffix}")
    transfer = decided(federation, by_reference(federation, location, **QI))
    upload = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-lab", dry_run="true", **QI
    ).json()
    assert transfer["status"] == upload["status"] == "anonymization_required"
    assert transfer["report"] == upload["report"] and transfer["rules"] == upload["rules"]
    assert transfer["dataset"]["location"] == location
    assert transfer["dataset"]["rows"] == 9


def test_an_approved_reference_delivers_a_signed_document_naming_the_files_written(
    federation, storage, inbox
):
    location = str(storage / "sn" / "patients_published.parquet")
    transfer = decided(federation, by_reference(federation, location, **QI))
    assert transfer["status"] == "approved"
    drain(federation)
    [(headers, body)] = inbox.received
    assert headers["content-type"] == "application/vnd.fedbroker.reference+json"
    assert headers["content-digest"] == content_digest(hashlib.sha256(body).hexdigest())
    document = json.loads(body)
    assert document["location"].startswith(str(storage / "out"))
    assert document["rows"] == 9 and document["format"] == "parquet"
    frames = []
    for file in document["files"]:
        data = open(file["path"], "rb").read()  # noqa: SIM115 (read whole: tiny test files)
        assert hashlib.sha256(data).hexdigest() == file["sha256"] and len(data) == file["size"]
        frames.append(pd.read_parquet(io.BytesIO(data)))
    arrived = pd.concat(frames)
    sent = pd.read_csv(FIXTURES / "patients_published.csv", dtype=str, keep_default_na=False)
    assert sorted(arrived.itertuples(index=False)) == sorted(sent.itertuples(index=False))


def test_auto_anonymization_by_reference_writes_the_generalized_table(federation, storage):
    location = str(storage / "sn" / "patients_original.parquet")
    transfer = decided(federation, by_reference(federation, location, anonymize="auto", **QI))
    assert transfer["status"] == "approved" and transfer["dataset"]["anonymized"]
    out = pd.read_parquet(storage / "out" / f"transfer-{transfer['id']}.anonymized.reference")
    assert "Name" not in out.columns and len(out) == 9
    assert out.groupby(["Age", "Gender"]).size().min() >= transfer["remedy"]["after"]["k"]


def test_a_member_names_only_locations_it_was_granted(federation, storage):
    for location in (str(storage / "out" / "x.parquet"), "/etc/passwd.csv"):
        answer = by_reference(federation, location)
        assert answer.status_code == 403, answer.text
        assert "granted prefixes" in answer.json()["detail"]
    dotted = by_reference(federation, f"{storage / 'sn'}/../out/x.parquet")
    assert dotted.status_code == 422 and "'..'" in dotted.json()["detail"]
    answer = federation.client.post(
        "/v1/transfers",
        headers=bearer(federation.keys["ng-health"]),
        data={"destination": "fr-lab", "purpose": "research"}
        | {"location": str(storage / "sn" / "patients_original.csv")},
    )
    assert answer.status_code == 403  # another member's data is not its to send


def test_what_cannot_be_a_reference_is_a_clear_422(federation, storage):
    missing = by_reference(federation, str(storage / "sn" / "none-*.parquet"))
    assert missing.status_code == 422 and "No file" in missing.json()["detail"]
    unknown = by_reference(federation, str(storage / "sn" / "data.xlsx"))
    assert unknown.status_code == 422 and "format" in unknown.json()["detail"]
    dry = by_reference(federation, str(storage / "sn" / "patients_original.csv"), dry_run="true")
    assert dry.status_code == 422 and "dry run" in dry.json()["detail"]
    both = federation.client.post(
        "/v1/transfers",
        headers=bearer(federation.keys["sn-hospital"]),
        files={"file": ("d.csv", b"Age\n3\n", "text/csv")},
        data={"destination": "fr-lab", "purpose": "research", "location": "x.csv"},
    )
    assert both.status_code == 422 and "one of the two" in both.json()["detail"]
    neither = federation.client.post(
        "/v1/transfers",
        headers=bearer(federation.keys["sn-hospital"]),
        data={"destination": "fr-lab", "purpose": "research"},
    )
    assert neither.status_code == 422


def test_a_broker_without_a_cluster_takes_no_references(client):
    federation = Federation(client)
    answer = by_reference(federation, "s3://anywhere/x.parquet")
    assert answer.status_code == 422 and "BROKER_DASK_SCHEDULER" in answer.json()["detail"]


def test_a_link_or_a_sibling_folder_does_not_lead_out_of_the_granted_prefix(federation, storage):
    (storage / "out").mkdir(exist_ok=True)
    (storage / "out" / "theirs.csv").write_text("Age\n30\n")
    (storage / "sn" / "link.csv").symlink_to(storage / "out" / "theirs.csv")
    linked = by_reference(federation, str(storage / "sn" / "link.csv"))
    assert linked.status_code == 403, linked.text
    (storage / "sn-other").mkdir()
    (storage / "sn-other" / "data.csv").write_text("Age\n30\n")
    sibling = by_reference(federation, str(storage / "sn-other" / "data.csv"))
    assert sibling.status_code == 403, sibling.text


def _claimed(federation, answer) -> tuple:
    factory = federation.client.app.state.sessionmaker
    settings = federation.client.app.state.settings
    job_id = answer.json()["id"]
    assert job_queue.claim_job(factory, "process", settings) == job_id
    return factory, settings, job_id


def test_a_grant_withdrawn_after_the_202_fails_the_job(federation, storage):
    answer = by_reference(federation, str(storage / "sn" / "patients_published.csv"), **QI)
    factory, settings, job_id = _claimed(federation, answer)
    withdrawn = settings.model_copy(update={"reference_roots": {}})
    assert job_queue.run_job(factory, job_id, "process", withdrawn) == "failed"
    problem = federation.client.get(answer.headers["Location"], headers=ADMIN).json()["problem"]
    assert problem["status"] == 403 and "no longer under a folder granted" in problem["detail"]


def test_a_job_past_its_deadline_reads_no_file(federation, storage):
    answer = by_reference(federation, str(storage / "sn" / "patients_published.csv"), **QI)
    factory, settings, job_id = _claimed(federation, answer)
    passed = Deadline(time.time() - 1, 60)
    assert job_queue.run_job(factory, job_id, "process", settings, passed) == "failed"
    problem = federation.client.get(answer.headers["Location"], headers=ADMIN).json()["problem"]
    assert problem["status"] == 413 and "BROKER_JOB_DEADLINE_SECONDS" in problem["detail"]
    listing = pinned_files.resolve(str(storage / "sn"), "patients_published.csv", 10, 1 << 20)
    root = str(storage / "sn") + "/"
    reader = references._Reader(root, listing.root_inode, "csv", ReadLimits(), passed)
    with pytest.raises(PastDeadline):  # and the cluster checks it before each file
        reader.partition((listing.files[0], "0" * 64))


def test_a_column_with_too_many_distinct_values_is_refused_before_it_is_counted(
    federation, storage
):
    answer = by_reference(federation, str(storage / "sn" / "patients_original.csv"), **QI)
    factory, settings, job_id = _claimed(federation, answer)
    bounded = settings.model_copy(update={"out_of_core_max_distinct": 5})
    assert job_queue.run_job(factory, job_id, "process", bounded) == "failed"
    problem = federation.client.get(answer.headers["Location"], headers=ADMIN).json()["problem"]
    assert problem["status"] == 413 and "distinct values" in problem["detail"]


def test_a_job_accepted_before_files_were_pinned_fails_clearly(federation, storage, connection):
    answer = by_reference(federation, str(storage / "sn" / "patients_published.csv"), **QI)
    job_id = answer.json()["id"]
    old = {"location": "/x/*.csv", "data_format": "csv", "sha256": "0" * 64, "size": 1}
    connection.execute(
        update(TransferJob).where(TransferJob.id == job_id).values(upload={"reference": old})
    )
    run_jobs(federation.client)
    problem = federation.client.get(answer.headers["Location"], headers=ADMIN).json()["problem"]
    assert problem["status"] == 409 and "send it again" in problem["detail"]


def test_the_files_of_a_location_are_parts_of_one_table(federation, storage):
    parts = storage / "sn" / "parts"
    parts.mkdir()
    frame = pd.read_csv(FIXTURES / "patients_published.csv", dtype=str, keep_default_na=False)
    frame.iloc[:4].to_csv(parts / "1.csv", index=False)
    frame.iloc[4:].to_csv(parts / "2.csv", index=False)
    transfer = decided(federation, by_reference(federation, str(parts / "*.csv"), **QI))
    assert transfer["dataset"]["rows"] == 9 and transfer["status"] == "approved"
    frame.iloc[4:, :2].to_csv(parts / "3.csv", index=False)  # one column fewer
    answer = by_reference(federation, str(parts / "*.csv"), **QI)
    run_jobs(federation.client)
    problem = federation.client.get(answer.headers["Location"], headers=ADMIN).json()["problem"]
    assert problem["status"] == 422 and "does not have the columns" in problem["detail"]


@pytest.mark.parametrize(
    ("roots", "words"),
    [
        ({"sn-hospital": ["/data/sn/"], "ng-health": ["/data/sn/ng/"]}, "overlap"),
        ({"sn-hospital": ["/data/"]}, "spool_dir"),  # the spool holds every member's uploads
        ({"sn-hospital": ["{keys}/"]}, "signing_key_dir"),
        ({"sn-hospital": ["/data/out/"]}, "reference_output"),
        ({"sn-hospital": ["s3://sn-registry/"]}, "not an absolute path"),
        ({"sn-hospital": ["data/sn/"]}, "not an absolute path"),
    ],
)
def test_granted_folders_hold_nothing_of_another_member_or_of_the_broker(roots, words):
    from pydantic import ValidationError

    from broker.config import Settings

    keys = "/srv/broker/keys"
    roots = {member: [r.format(keys=keys) for r in rs] for member, rs in roots.items()}
    with pytest.raises(ValidationError, match=words):
        Settings(
            reference_roots=roots,
            spool_dir="/data/spool",
            signing_key_dir=keys,
            reference_output="/data/out",
        )
    Settings(
        reference_roots={"sn-hospital": ["/data/sn/"], "ng-health": ["/data/ng/"]},
        spool_dir="/data/spool",
        signing_key_dir=keys,
        reference_output="/data/out",
    )

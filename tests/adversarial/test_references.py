"""Transfers by reference against a hostile member: what was checked must be what is read.

A real broker (uvicorn on 127.0.0.1, SQLite) with a Dask ``LocalCluster``; two members own a
folder each on the federation's storage (``BROKER_REFERENCE_ROOTS``), the broker writes what
leaves to a third, and a fourth stands for the broker host's own files. The job runner does not
run on its own here: each test runs it when it chooses (``run_jobs``), so that it can change the
storage between the ``202 Accepted`` and the job, as an attacker with a shell on its storage can.

Judged by what the destination can read (every delivery and every file under the output
folder) and by what the member can read back (its job, the problem, the decision and report):
no byte of another member's folder or of the broker's host may appear in either.
"""

from __future__ import annotations

import io
import json
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd
import pytest
from distributed import LocalCluster

from broker.main import create_app
from tests.adversarial.conftest import ADMIN, DESTINATION, SOURCE, Broker, _settings
from tests.conftest import FIXTURES
from tests.servers import RecordingInbox, ServerThread

OTHER = "ng-health"  # another member, with its own granted folder
QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}
OTHER_SECRET = "NG-PRIVATE-7731"
HOST_SECRET = "HOST-SECRET-4242"
HANG_GUARD_SECONDS = 120  # a job runner that blocks fails the test instead of hanging it


def _published() -> pd.DataFrame:
    return pd.read_csv(FIXTURES / "patients_published.csv", dtype=str, keep_default_na=False)


def _marked(marker: str) -> pd.DataFrame:
    """Data that a transfer would approve, carrying ``marker`` in a value and a column name."""
    frame = _published()
    frame.loc[0, "Disease"] = marker
    return frame.assign(**{marker.lower().replace("-", "_"): marker})


@dataclass
class Storage:
    root: Path

    @property
    def mine(self) -> Path:  # the source's granted folder
        return self.root / "sn"

    @property
    def theirs(self) -> Path:  # another member's granted folder
        return self.root / "ng"

    @property
    def host(self) -> Path:  # granted to nobody: stands for the broker host's files
        return self.root / "host"

    @property
    def out(self) -> Path:  # where the broker writes what leaves by reference
        return self.root / "out"


@dataclass
class ReferenceBroker:
    broker: Broker
    app: object
    storage: Storage
    keys_dir: Path
    spool_dir: Path

    def refer(self, location: str | Path, member: str = SOURCE, **form) -> httpx.Response:
        data = {"destination": DESTINATION, "purpose": "research", "location": str(location)}
        return self.broker.client.post(
            f"{self.broker.url}/v1/transfers",
            headers={"Authorization": f"Bearer {self.broker.keys[member]}"},
            data=data | QI | form,
        )

    def accepted(self, location: str | Path, member: str = SOURCE, **form) -> httpx.Response:
        answer = self.refer(location, member, **form)
        assert answer.status_code == 202, answer.text
        return answer

    def run_jobs(self) -> None:
        """Every due job, in a thread of the test: a runner that blocks fails the test."""
        runner = self.app.state.job_runner
        failure: list[BaseException] = []

        def run() -> None:
            try:
                while runner.run_once():
                    pass
            except BaseException as error:  # shown by the assertion below
                failure.append(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(HANG_GUARD_SECONDS)
        assert not thread.is_alive(), "the job runner blocked: one job stops every other one"
        assert not failure, failure

    def job(self, answer: httpx.Response, member: str = SOURCE) -> dict:
        polled = self.broker.client.get(
            f"{self.broker.url}{answer.headers['Location']}",
            headers={"Authorization": f"Bearer {self.broker.keys[member]}"},
        )
        assert polled.status_code == 200, polled.text
        return polled.json()

    def transfer_status(self, transfer_id: str) -> int:
        return self.broker.client.get(
            f"{self.broker.url}/v1/transfers/{transfer_id}", headers=ADMIN
        ).status_code

    def destination_reads(self) -> bytes:
        """Everything the destination can read: what reached its inbox, and the files of the
        broker's output folder (the reference documents name them)."""
        seen = [body for _headers, body in list(self.broker.inbox.received)]
        if self.storage.out.exists():
            seen += [f.read_bytes() for f in sorted(self.storage.out.rglob("*")) if f.is_file()]
        return b"\n".join(seen)

    def assert_nothing_crossed(self, member_reads: str, *secrets: str) -> None:
        for secret in secrets:
            assert secret not in member_reads, f"the member read {secret!r} back"
            for spelling in (secret, secret.lower().replace("-", "_")):
                assert spelling.encode() not in self.destination_reads(), (
                    f"the destination can read {spelling!r}"
                )


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def refs(tmp_path_factory, cluster) -> Iterator[ReferenceBroker]:
    tmp = tmp_path_factory.mktemp("references")
    storage = Storage(tmp / "storage")
    for folder in (storage.mine, storage.theirs, storage.host, storage.out):
        folder.mkdir(parents=True)
    _marked(OTHER_SECRET).to_csv(storage.theirs / "private.csv", index=False)
    _marked(OTHER_SECRET).to_parquet(storage.theirs / "private.parquet", index=False)
    _marked(HOST_SECRET).to_csv(storage.host / "secret.csv", index=False)
    keys_dir = tmp / "signing-keys"
    settings = _settings(
        f"sqlite:///{tmp}/broker.db",
        keys_dir,
        dask_scheduler=cluster.scheduler_address,
        reference_roots={
            SOURCE: [f"{storage.mine}/"],
            OTHER: [f"{storage.theirs}/"],
        },
        reference_output=str(storage.out),
        jobs_enabled=False,  # run by each test when it chooses
    )
    inbox = RecordingInbox()
    inbox_server = ServerThread(inbox.app()).start()
    app = create_app(settings)
    server = ServerThread(app).start()
    broker = Broker(server.url, inbox)
    try:
        broker.register(SOURCE, "SN", "http://127.0.0.1:9/sn-hospital/inbox")
        broker.register(DESTINATION, "FR", inbox_server.url + "/inbox")
        broker.register(OTHER, "NG", "http://127.0.0.1:9/ng-health/inbox")
        yield ReferenceBroker(broker, app, storage, keys_dir, settings.spool_dir)
    finally:
        broker.client.close()
        server.stop()
        inbox_server.stop()


def _write_mine(refs: ReferenceBroker, name: str, frame: pd.DataFrame | None = None) -> Path:
    path = refs.storage.mine / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = _published() if frame is None else frame
    if name.endswith(".parquet"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def _swap_for_link(path: Path, target: Path) -> None:
    """What an attacker does between the 202 and the job: the file becomes a link."""
    path.unlink()
    path.symlink_to(target)


def _key_file(refs: ReferenceBroker) -> Path:
    return next(refs.keys_dir.glob("*.pem"))


def _key_line(refs: ReferenceBroker) -> str:
    """A line of the broker's private signing key: it must never be read back."""
    return _key_file(refs).read_text().splitlines()[1]


def _failed(refs: ReferenceBroker, answer: httpx.Response) -> dict:
    job = refs.job(answer)
    assert job["state"] == "failed", job
    assert job["transfer"] is None
    assert refs.transfer_status(job["id"]) == 404  # nothing decided, nothing stored
    return job["problem"]


# --- what the member named is resolved once, at the request ---------------------------------


@pytest.mark.parametrize("target", ["other member", "host", "signing key", "passwd"])
def test_a_file_swapped_for_a_link_after_the_202_is_never_read(refs, target):
    path = _write_mine(refs, f"swap-{target.replace(' ', '-')}.csv")
    answer = refs.accepted(path)
    destinations = {
        "other member": refs.storage.theirs / "private.csv",
        "host": refs.storage.host / "secret.csv",
        "signing key": _key_file(refs),
        "passwd": Path("/etc/passwd"),
    }
    _swap_for_link(path, destinations[target])
    refs.run_jobs()
    problem = _failed(refs, answer)
    assert problem["status"] == 409 and "changed" in problem["detail"], problem
    member_reads = json.dumps(refs.job(answer))
    assert str(destinations[target]) not in member_reads  # not even where the link leads
    refs.assert_nothing_crossed(member_reads, OTHER_SECRET, HOST_SECRET, _key_line(refs), "root:")


def test_a_folder_swapped_for_a_link_after_the_202_is_never_read(refs):
    path = _write_mine(refs, "swapped-folder/data.csv")
    answer = refs.accepted(path)
    path.parent.rename(refs.storage.mine / "moved-away")
    (refs.storage.mine / "swapped-folder").symlink_to(refs.storage.theirs)
    (refs.storage.theirs / "data.csv").write_bytes(
        (refs.storage.theirs / "private.csv").read_bytes()
    )
    refs.run_jobs()
    problem = _failed(refs, answer)
    assert problem["status"] == 409, problem
    refs.assert_nothing_crossed(json.dumps(refs.job(answer)), OTHER_SECRET)


def test_a_glob_reads_exactly_the_files_it_matched_at_the_request(refs):
    first = _write_mine(refs, "grows/a.csv")
    answer = refs.accepted(refs.storage.mine / "grows" / "*.csv")
    _write_mine(refs, "grows/b.csv")  # a new regular file
    (first.parent / "c.csv").symlink_to(refs.storage.theirs / "private.csv")  # and a link
    refs.run_jobs()
    job = refs.job(answer)
    assert job["state"] == "done", job
    assert job["transfer"]["dataset"]["rows"] == len(_published())  # a.csv alone
    refs.assert_nothing_crossed(json.dumps(job), OTHER_SECRET)


def test_a_file_rewritten_after_the_202_fails_the_job_even_with_its_times_put_back(refs):
    path = _write_mine(refs, "rewritten.csv")
    before = path.stat()
    answer = refs.accepted(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"Cholera", b"Malaria"))  # same size, other values
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    refs.run_jobs()
    problem = _failed(refs, answer)
    assert problem["status"] == 409 and "changed" in problem["detail"], problem


# --- what cannot be named at all -------------------------------------------------------------


def _refused(refs: ReferenceBroker, location: str | Path, status: int, *words: str) -> dict:
    answer = refs.refer(location)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    for word in words:
        assert word in problem["detail"], problem
    return problem


def test_chained_urls_dots_and_other_protocols_are_refused(refs):
    mine = refs.storage.mine
    _write_mine(refs, "plain.csv")
    theirs = refs.storage.theirs / "private.csv"
    for location in (
        f"{mine}/plain.csv::file://{theirs}",
        f"{mine}/plain.csv::{theirs}",
        f"simplecache::{mine}/plain.csv",
        f"zip://private.csv::{mine}/plain.csv",
    ):
        _refused(refs, location, 422, "::")
    for location in (f"{mine}/../ng/private.csv", f"{mine}/./plain.csv", f"{mine}//plain.csv"):
        _refused(refs, location, 422, "..")
    for location in (f"file://{mine}/plain.csv", "s3://sn-registry/plain.csv", "memory://x.csv"):
        _refused(refs, location, 422, "path")
    _refused(refs, f"{mine}/plain\x00.csv", 422)
    _refused(refs, "sn/plain.csv", 422, "path")  # relative


def test_special_files_under_the_members_own_folder_are_refused_at_once(refs):
    mine = refs.storage.mine
    os.mkfifo(mine / "fifo.csv")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(mine / "socket.csv"))
    (mine / "folder.csv").mkdir()
    specials = ["fifo.csv", "socket.csv", "folder.csv"]
    try:
        os.mknod(mine / "zero.csv", 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's twin
        specials.append("zero.csv")
    except PermissionError:
        pass  # not root here: no device can be made
    try:
        for name in specials:
            _refused(refs, mine / name, 422, "not a regular file")
        os.mkdir(mine / "specials")
        os.mkfifo(mine / "specials" / "b.csv")
        _write_mine(refs, "specials/a.csv")
        _refused(refs, mine / "specials" / "*.csv", 422, "b.csv", "not a regular file")
    finally:
        server.close()


def test_a_fifo_swapped_in_after_the_202_blocks_no_job(refs):
    path = _write_mine(refs, "becomes-fifo.csv")
    answer = refs.accepted(path)
    theirs = _marked("NG-OWN-DATA").iloc[:, :3]
    theirs.to_csv(refs.storage.theirs / "own.csv", index=False)
    others = refs.accepted(refs.storage.theirs / "own.csv", member=OTHER)
    path.unlink()
    os.mkfifo(path)
    refs.run_jobs()  # returns: nothing opened the FIFO
    assert _failed(refs, answer)["status"] == 409
    assert refs.job(others, member=OTHER)["state"] == "done"


@pytest.mark.parametrize(
    "target",
    ["passwd", "the other member's file", "the other member's folder", "spool", "key", "mine"],
)
def test_a_link_is_refused_at_the_request_wherever_it_leads(refs, target):
    _write_mine(refs, "linked-target.csv")
    targets = {
        "passwd": Path("/etc/passwd"),
        "the other member's file": refs.storage.theirs / "private.csv",
        "the other member's folder": refs.storage.theirs,
        "spool": refs.spool_dir,
        "key": _key_file(refs),
        "mine": refs.storage.mine / "linked-target.csv",
    }
    folder = targets[target].is_dir()
    name = f"link-{target.replace(' ', '-').replace(chr(39), '')}"
    link = refs.storage.mine / (name if folder else f"{name}.csv")
    link.symlink_to(targets[target])
    location = link / "private.csv" if folder else link
    problem = _refused(refs, location, 403, "link")
    assert str(targets[target]) not in problem["detail"]  # where it leads is not said


def test_a_hard_link_to_a_file_outside_is_refused(refs):
    hard = refs.storage.mine / "hard.csv"
    os.link(refs.storage.theirs / "private.csv", hard)
    _refused(refs, hard, 403, "hard link")
    inside = _write_mine(refs, "twice.csv")
    os.link(inside, refs.storage.mine / "twice-again.csv")
    _refused(refs, inside, 403, "hard link")  # either name could be the outside one


@pytest.mark.parametrize(
    "folder",
    ["Sn", "SN", "\u0455n", "s\u200bn", "sn-other", "s\uff4e"],  # case, Cyrillic, ZWSP, sibling
)
def test_a_look_alike_of_a_granted_folder_is_not_granted(refs, folder):
    look_alike = refs.storage.root / folder
    look_alike.mkdir(exist_ok=True)
    _marked(HOST_SECRET).to_csv(look_alike / "data.csv", index=False)
    _refused(refs, look_alike / "data.csv", 403, "granted")


def test_another_members_folder_is_not_granted_even_when_it_exists(refs):
    problem = _refused(refs, refs.storage.theirs / "private.csv", 403, "granted")
    assert OTHER_SECRET not in json.dumps(problem)


# --- a reference meets the rules an upload meets ---------------------------------------------


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_an_email_as_a_column_name_fails_the_job_as_an_upload_is_refused(refs, suffix):
    frame = _published().rename(columns={"Disease": "jane.doe@example.org"})
    path = _write_mine(refs, f"email-column.{suffix}", frame)
    answer = refs.accepted(path, sensitive="")
    refs.run_jobs()
    problem = _failed(refs, answer)
    assert problem["status"] == 422 and "e-mail" in problem["detail"], problem
    assert b"jane.doe" not in refs.destination_reads()


def test_look_alike_column_names_fail_the_job(refs):
    frame = _published().assign(**{"\u0410ge": "x"})  # Cyrillic A: "Age" twice to the eye
    path = _write_mine(refs, "look-alike-columns.csv", frame)
    answer = refs.accepted(path)
    refs.run_jobs()
    problem = _failed(refs, answer)
    assert problem["status"] == 422 and "look-alike" in problem["detail"], problem


def test_a_parquet_files_metadata_does_not_reach_the_destination(refs):
    frame = _published()
    path = refs.storage.mine / "metadata.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame).replace_schema_metadata({"note": HOST_SECRET})
    pq.write_table(table, path)
    answer = refs.accepted(path)
    refs.run_jobs()
    job = refs.job(answer)
    assert job["state"] == "done" and job["transfer"]["status"] == "approved", job
    document = _delivered_document(refs, job["id"])
    for file in document["files"]:
        data = Path(file["path"]).read_bytes()
        assert HOST_SECRET.encode() not in data
        assert len(pd.read_parquet(io.BytesIO(data)).columns) == 3


def _delivered_document(refs: ReferenceBroker, transfer_id: str) -> dict:
    _headers, body = refs.broker.delivered_for(transfer_id)
    return json.loads(body)


def test_the_members_path_does_not_cross_the_border(refs):
    path = _write_mine(refs, "jane.doe@example.org/published.csv")
    answer = refs.accepted(path)
    refs.run_jobs()
    job = refs.job(answer)
    assert job["state"] == "done" and job["transfer"]["status"] == "approved", job
    _headers, body = refs.broker.delivered_for(job["id"])
    assert b"jane.doe" not in body and str(refs.storage.mine).encode() not in body
    seen = refs.broker.client.get(
        f"{refs.broker.url}/v1/transfers/{job['id']}",
        headers={"Authorization": f"Bearer {refs.broker.keys[DESTINATION]}"},
    )
    assert seen.status_code == 200 and "jane.doe" not in seen.text

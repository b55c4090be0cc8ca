"""Local datasets: upload, list, download, replace, delete, and names that are not file names."""

from __future__ import annotations

import hashlib
import uuid

import httpx
import pytest

from tests.member_cloud.conftest import FIXTURES, Members, closed_port

CSV = (FIXTURES / "patients_published.csv").read_bytes()


@pytest.fixture(scope="module")
def member(tmp_path_factory):
    members = Members(tmp_path_factory.mktemp("datasets"))
    server = members.start(
        "sn-datasets", api_key="k" * 20, broker_url=f"http://127.0.0.1:{closed_port()}"
    )
    yield server
    members.stop(server)


@pytest.fixture
def client(member):
    with httpx.Client(base_url=member.url, timeout=10) as client:
        yield client


def unique(suffix: str = ".csv") -> str:
    return f"d-{uuid.uuid4().hex[:8]}{suffix}"


def upload(client, name=None, data=CSV, filename="upload.csv", **form):
    if name is not None:
        form["name"] = name
    return client.post("/datasets", files={"file": (filename, data, "text/csv")}, data=form)


def test_upload_list_and_download(client, member):
    name = unique()
    answer = upload(client, name)

    assert answer.status_code == 201, answer.text
    assert answer.headers["location"] == f"/datasets/{name}"
    created = answer.json()
    assert created["name"] == name
    assert created["size_bytes"] == len(CSV)
    assert created["sha256"] == hashlib.sha256(CSV).hexdigest()

    listed = {d["name"]: d for d in client.get("/datasets").json()}
    assert listed[name]["sha256"] == created["sha256"]
    assert listed[name]["size_bytes"] == len(CSV)

    data = client.get(f"/datasets/{name}")
    assert data.status_code == 200
    assert data.content == CSV
    assert data.headers["content-type"] == "text/csv"
    assert data.headers["content-disposition"] == f"attachment; filename*=UTF-8''{name}"
    assert data.headers["x-content-type-options"] == "nosniff"
    assert (member.app.state.settings.data_dir / "datasets" / name).read_bytes() == CSV


def test_the_file_name_is_the_default_name(client):
    filename = unique(".json")
    answer = upload(client, data=b'[{"a": 1}]', filename=filename)
    assert answer.status_code == 201, answer.text
    assert answer.json()["name"] == filename
    assert client.get(f"/datasets/{filename}").headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("suffix", "served"),
    [
        (".html", "application/octet-stream"),
        (".svg", "application/octet-stream"),
        (".js", "application/octet-stream"),
        (".txt", "application/octet-stream"),
        (".parquet", "application/vnd.apache.parquet"),
        (".zip", "application/zip"),
    ],
)
def test_a_dataset_is_served_as_an_attachment_of_a_safe_type(client, suffix, served):
    name = unique(suffix)
    page = b"<html><script>alert(document.cookie)</script></html>"
    assert upload(client, name, data=page).status_code == 201

    data = client.get(f"/datasets/{name}")

    assert data.content == page
    assert data.headers["content-type"] == served
    assert data.headers["content-disposition"] == f"attachment; filename*=UTF-8''{name}"
    assert data.headers["x-content-type-options"] == "nosniff"


def test_an_existing_name_is_kept_unless_replace(client):
    name = unique()
    assert upload(client, name).status_code == 201

    refused = upload(client, name, data=b"other\n")
    assert refused.status_code == 409
    assert refused.headers["content-type"] == "application/problem+json"
    assert client.get(f"/datasets/{name}").content == CSV

    replaced = upload(client, name, data=b"other\n", replace="true")
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["sha256"] == hashlib.sha256(b"other\n").hexdigest()
    assert client.get(f"/datasets/{name}").content == b"other\n"
    listed = {d["name"]: d for d in client.get("/datasets").json()}
    assert listed[name]["sha256"] == hashlib.sha256(b"other\n").hexdigest()


def test_delete(client):
    name = unique()
    upload(client, name)
    assert client.delete(f"/datasets/{name}").status_code == 204
    assert client.get(f"/datasets/{name}").status_code == 404
    assert client.delete(f"/datasets/{name}").status_code == 404


@pytest.mark.parametrize(
    "name",
    [
        "../escape.csv",
        "a/b.csv",
        "a\\b.csv",
        "..",
        "x..csv",
        ".hidden",
        "a b.csv",
        "é.csv",
        "a" * 129,
    ],
)
def test_names_that_are_not_safe_file_names_are_422(client, member, name):
    answer = upload(client, name)

    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["type"] == "urn:fedbroker:problem:invalid-name"
    root = member.app.state.settings.data_dir
    assert not (root / "escape.csv").exists()
    assert not (root / "datasets" / "a").exists()


def test_an_uploaded_file_name_with_a_path_is_422(client):
    answer = upload(client, filename="../../etc/passwd")
    assert answer.status_code == 422


@pytest.mark.parametrize("path", ["/datasets/.hidden", "/datasets/x..y", "/datasets/a%20b"])
def test_reading_a_bad_name_is_422(client, path):
    answer = client.get(path)
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"


def test_an_unknown_dataset_is_404(client):
    answer = client.get("/datasets/nothing-here.csv")
    assert answer.status_code == 404
    assert answer.json()["type"] == "urn:fedbroker:problem:not-found"


def test_whoami_and_docs(client, member):
    me = client.get("/").json()
    assert me["id"] == "sn-datasets"
    assert me["jurisdiction"] == "SN"
    assert me["inbox_url"] == f"http://127.0.0.1:{member.port}/inbox"
    assert client.get("/livez").json() == {"status": "ok"}
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/datasets", "/datasets/{name}", "/transfers", "/inbox", "/inbox/{transfer_id}"} <= set(
        paths
    )
    assert client.get("/docs").status_code == 200

"""ARX hierarchies in transfer requests and F-SLA records, through a real broker: what the
recipient would receive (the dry run's data) follows the hierarchy, and each threat class that
applies to the new inputs is held (3: labels; 4: folded names; 5/8: identifiers in labels; 15:
bounds; 16: a malformed file is a 422 naming the file and the line, nothing stored)."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from broker.anonymize.hierarchies import MAX_HIERARCHIES, MAX_UPLOAD_BYTES, read_hierarchy
from broker.errors import InvalidHierarchy
from broker.intake.hierarchies import read_parts
from tests.broker.conftest import ADMIN, bearer
from tests.shared_data import DATA

ADULT = DATA / "arx-adult"
PROBLEM = "application/problem+json"
QI = {"quasi_identifiers": "age,education,sex"}


def in_place(name: str) -> Path:
    """A file of ARX's adult data set, read in place; the test skips, naming where it looked,
    without it."""
    found = ADULT / name
    if not found.is_file():
        pytest.skip(f"ARX's adult data set is not at {ADULT}")
    return found


@pytest.fixture(scope="module")
def adult() -> bytes:
    frame = pd.read_csv(in_place("adult.csv"), sep=";", dtype=str).head(2000)
    return frame[["age", "education", "sex", "salary-class"]].to_csv(index=False).encode()


def arx(name: str) -> bytes:
    return in_place(f"adult_hierarchy_{name}.csv").read_bytes()


def send(federation, data: bytes, hierarchies=(), source="sn-hospital", headers=None, **form):
    form = {"destination": "sn-lab", "purpose": "research", **QI, **form}
    files = [("file", ("adult.csv", data, "text/csv"))]
    files += [("hierarchy", (name, content, "text/csv")) for name, content in hierarchies]
    return federation.client.post(
        "/v1/transfers",
        headers={**bearer(federation.keys[source]), **(headers or {})},
        files=files,
        data=form,
    )


def set_policy(client, code: str, **fields) -> None:
    current = client.get(f"/v1/policies/{code}", headers=ADMIN)
    record = current.json()["record"] | fields
    answer = client.put(
        f"/v1/policies/{code}", headers={**ADMIN, "If-Match": current.headers["ETag"]}, json=record
    )
    assert answer.status_code == 200, answer.text


def k_domestically(client, k: int = 5) -> None:
    record = client.get("/v1/policies/SN", headers=ADMIN).json()["record"]
    set_policy(client, "SN", domestic_export=record["domestic_export"] | {"min_k": k})


def received(federation, body: dict) -> pd.DataFrame:
    """What the recipient would receive: the dry run's verified result."""
    url = body["dataset"]["preview"]["url"]
    fetched = federation.client.get(url, headers=bearer(federation.keys["sn-hospital"]))
    assert fetched.status_code == 200
    return pd.read_csv(io.BytesIO(fetched.content), dtype=str, keep_default_na=False)


def levels_of(name: str) -> set[str]:
    """Every label of an ARX hierarchy, the values included."""
    hierarchy = read_hierarchy(arx(name))
    return set(hierarchy.levels) | {label for row in hierarchy.levels.values() for label in row}


def test_the_remedy_follows_the_requests_hierarchy(federation, adult):
    k_domestically(federation.client)
    body = send(
        federation,
        adult,
        [("education.csv", arx("education"))],
        anonymize="auto",
        dry_run="true",
    ).json()
    assert body["status"] == "approved", (body["remedy"], body["rules"])
    sent = received(federation, body)
    # every education label is one of the ARX hierarchy's, and the values were generalized
    assert set(sent["education"]) <= levels_of("education")
    assert not set(sent["education"]) & set(read_hierarchy(arx("education")).levels)
    assert sent.groupby(["age", "education", "sex"]).size().min() >= 5
    steps = {s["column"]: s["method"] for s in body["remedy"]["steps"]}
    assert steps["education"] == "hierarchy"


def test_range_labels_leave_re_labelled(federation, adult):
    # class 3: ARX's age ranges (35-39) have real values as bounds; they leave on a grid
    k_domestically(federation.client)
    body = send(
        federation, adult, [("age.csv", arx("age"))], anonymize="auto", dry_run="true"
    ).json()
    assert body["status"] == "approved", body
    assert "range label(s) whose bounds are values of their class" in body["remedy"]["note"]
    ages = set(received(federation, body)["age"])
    arx_labels = {label for row in read_hierarchy(arx("age")).levels.values() for label in row}
    assert not (ages - {"*"}) & (arx_labels - {"*"}), ages  # no ARX range label left as written


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        # class 3: a label that is a value of its class of several values
        (b"Bachelors;Bachelors;*\nMasters;Bachelors;*\n", "names 'Bachelors'"),
        # class 5/8: a label holding a direct identifier crosses the border
        (b"Bachelors;ada@example.org;*\nMasters;ada@example.org;*\n", "e-mail"),
        # class 16: malformed, named by file and line
        (b"Bachelors;Higher;*\nMasters;Higher\n", "'education.csv', line 2"),
        (b"Bachelors;;*\n", "line 1: an empty label"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"", "is empty"),
    ],
)
def test_a_hierarchy_that_cannot_be_followed_is_a_422_naming_it(federation, adult, content, detail):
    answer = send(federation, adult, [("education.csv", content)])
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM)
    assert detail in answer.json()["detail"]
    assert federation.client.get("/v1/transfers", headers=ADMIN).json()["total"] == 0


def test_a_hierarchy_must_cover_its_column_and_name_one(federation, adult):
    partial = b"Bachelors;Higher;*\nMasters;Higher;*\n"
    answer = send(federation, adult, [("education.csv", partial)])
    assert answer.status_code == 422
    assert "does not cover" in answer.json()["detail"] and "value(s) of the column" in answer.text
    unknown = send(federation, adult, [("zip.csv", partial)])
    assert unknown.status_code == 422 and "'zip'" in unknown.json()["detail"]
    # class 4: a name that differs from a column only by case or look-alike letters is refused
    for name in ("Education.csv", "educаtion.csv"):  # the second holds a Cyrillic a
        folded = send(federation, adult, [(name, arx("education"))])
        assert folded.status_code == 422 and "education" in folded.json()["detail"], name
    twice = send(federation, adult, [("education.csv", partial), ("EDUCATION.csv", partial)])
    assert twice.status_code == 422 and "already given" in twice.json()["detail"]
    unnamed = send(federation, adult, [("education.txt", partial)])
    assert unnamed.status_code == 422 and "for its column" in unnamed.json()["detail"]


def test_hierarchies_are_bounded(federation, adult):
    # class 15: too many files, too many levels, too long a label, too large a file
    many = [(f"c{i}.csv", b"a;*\n") for i in range(MAX_HIERARCHIES + 1)]
    assert "more than 32" in send(federation, adult, many).json()["detail"]
    deep = b"Bachelors;" + b";".join(b"L%d" % i for i in range(17)) + b"\n"
    assert "more than 16" in send(federation, adult, [("education.csv", deep)]).json()["detail"]
    long = b"Bachelors;" + b"x" * 201 + b"\n"
    assert "longer than 200" in send(federation, adult, [("education.csv", long)]).json()["detail"]
    wide = b"".join(b"v%05d;*\n" % i for i in range(20_001))
    tiny = b"age,education,sex\n39,Bachelors,Male\n"
    answer = send(federation, tiny, [("education.csv", wide)])
    assert answer.status_code == 422 and "more than 20,000" in answer.json()["detail"]


def test_a_hierarchy_file_is_read_no_further_than_its_bound():
    # class 15: read_parts reads at most 1 MiB + 1 byte of a part, then refuses it
    huge = io.BytesIO(b"v;*\n" * (MAX_UPLOAD_BYTES // 4 + 1) + b"never read" * 1000)
    with pytest.raises(InvalidHierarchy, match="larger than 1 MiB"):
        read_parts([("education.csv", huge)])
    assert huge.tell() == MAX_UPLOAD_BYTES + 1


def test_a_records_hierarchy_is_followed_before_the_requests(federation, adult):
    client = federation.client
    k_domestically(client)
    table = read_hierarchy(arx("education")).table()
    set_policy(client, "SN", hierarchies={"education": table})
    other = b"".join(b"%s;Any;*\n" % v.encode() for v in read_hierarchy(arx("education")).levels)
    body = send(
        federation,
        adult,
        [("education.csv", other)],
        anonymize="auto",
        dry_run="true",
    ).json()
    assert body["status"] == "approved", body
    assert "the request's hierarchy for 'education' is not used" in body["remedy"]["note"]
    assert set(received(federation, body)["education"]) <= levels_of("education")


def test_a_record_refuses_unsafe_or_oversized_hierarchies(federation):
    client = federation.client
    current = client.get("/v1/policies/SN", headers=ADMIN)
    record = current.json()["record"]
    headers = {**ADMIN, "If-Match": current.headers["ETag"]}
    cases = [
        ({"education": {"Bachelors": ["Bachelors"], "Masters": ["Bachelors"]}}, "names"),
        ({"education": {"Bachelors": ["+221 77 123 45 67"]}}, "phone"),
        ({"education": {"Bachelors": ["A", "*"], "Masters": ["A"]}}, "levels"),
        ({"Education": {"a": ["*"]}, "education": {"a": ["*"]}}, "name one attribute"),
        ({f"c{i}": {"a": ["*"]} for i in range(MAX_HIERARCHIES + 1)}, "at most 32"),
    ]
    for hierarchies, detail in cases:
        answer = client.put(
            "/v1/policies/SN", headers=headers, json=record | {"hierarchies": hierarchies}
        )
        assert answer.status_code == 422, (hierarchies, answer.text)
        assert detail in answer.text, (detail, answer.text)
    assert (
        client.get("/v1/policies/SN", headers=ADMIN).json()["version"] == current.json()["version"]
    )


def test_a_records_hierarchy_that_misses_a_value_refuses_the_remedy(federation, adult):
    client = federation.client
    k_domestically(client)
    set_policy(client, "SN", hierarchies={"education": {"Bachelors": ["Higher", "*"]}})
    body = send(federation, adult, anonymize="auto").json()
    assert body["status"] == "rejected", body
    assert body["remedy"]["verified"] is False
    assert "SN's hierarchy for 'education' does not cover" in body["remedy"]["note"]


def test_a_job_decided_in_the_background_follows_its_hierarchies(federation, adult):
    client = federation.client
    k_domestically(client)
    form = {"destination": "sn-lab", "purpose": "research", "anonymize": "auto", **QI}
    files = [
        ("file", ("adult.csv", adult, "text/csv")),
        ("hierarchy", ("education.csv", arx("education"), "text/csv")),
    ]
    headers = {**bearer(federation.keys["sn-hospital"]), "Prefer": "respond-async"}
    answer = client.post("/v1/transfers", headers=headers, files=files, data=form)
    assert answer.status_code == 202, answer.text
    runner = client.app.state.job_runner
    while runner.run_once():
        pass
    polled = client.get(answer.headers["Location"], headers=headers).json()
    decided = polled["transfer"]
    assert polled["state"] == "done" and decided["status"] == "approved", polled
    assert {s["column"]: s["method"] for s in decided["remedy"]["steps"]}["education"] == (
        "hierarchy"
    )


def test_the_same_key_with_another_hierarchy_is_another_request(federation, adult):
    key = {"Idempotency-Key": "upload-h"}
    first = send(federation, adult, [("education.csv", arx("education"))], headers=key)
    assert first.status_code == 200, first.text
    other = b"".join(b"%s;Any;*\n" % v.encode() for v in read_hierarchy(arx("education")).levels)
    second = send(federation, adult, [("education.csv", other)], headers=key)
    assert second.status_code == 409


def test_a_table_counted_out_of_core_follows_the_hierarchy_too(connection, settings, adult):
    from fastapi.testclient import TestClient

    from broker.main import create_app
    from tests.broker.conftest import Federation

    out_of_core = settings.model_copy(update={"in_memory_max_bytes": 0})
    with TestClient(create_app(out_of_core, bind=connection)) as client:
        federation = Federation(client)
        k_domestically(client)
        body = send(
            federation,
            adult,
            [("education.csv", arx("education"))],
            anonymize="auto",
            dry_run="true",
        ).json()
        assert body["status"] == "approved", (body["remedy"], body["rules"])
        assert set(received(federation, body)["education"]) <= levels_of("education")
        partial = b"Bachelors;Higher;*\nMasters;Higher;*\n"
        refused = send(federation, adult, [("education.csv", partial)])
        assert refused.status_code == 422 and "does not cover" in refused.json()["detail"]

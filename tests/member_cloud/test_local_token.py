"""MEMBER_LOCAL_TOKEN: the member cloud's own API needs it; health, docs and deliveries do not."""

from __future__ import annotations

import logging
import uuid

import httpx
import pytest

from tests.member_cloud.conftest import (
    LOCAL_TOKEN,
    Members,
    closed_port,
    delivery_headers,
)

API_KEY = "member-key-for-local-token-tests"
CSV = b"Age,Gender\n20-30,F\n"

# Every route of the member's own API, with a request that would succeed with the token.
PROTECTED = [
    ("GET", "/", {}),
    ("GET", "/datasets", {}),
    ("POST", "/datasets", {"files": {"file": ("new.csv", CSV, "text/csv")}}),
    ("GET", "/datasets/{name}", {}),
    ("DELETE", "/datasets/{name}", {}),
    ("POST", "/transfers", {"json": {"dataset": "known.csv", "destination": "x", "purpose": "y"}}),
    ("GET", "/inbox", {}),
    ("GET", "/inbox/{transfer_id}", {}),
    ("GET", "/inbox/{transfer_id}/meta", {}),
    ("GET", "/catalog", {}),
    ("POST", "/catalog", {"json": {"dataset": "known.csv", "title": "t"}}),
    ("POST", "/negotiations", {"json": {"dataset_id": "d", "purpose": "research"}}),
    ("GET", "/negotiations", {}),
    ("GET", "/negotiations/{negotiation_id}", {}),
    ("POST", "/negotiations/{negotiation_id}/offer", {"json": {}}),
    ("POST", "/negotiations/{negotiation_id}/request", {"json": {}}),
    ("POST", "/negotiations/{negotiation_id}/accept", {}),
    ("POST", "/negotiations/{negotiation_id}/verify", {}),
    ("POST", "/negotiations/{negotiation_id}/terminate", {"json": {"reason": "r"}}),
]


@pytest.fixture(scope="module")
def member(tmp_path_factory):
    members = Members(tmp_path_factory.mktemp("local-token"))
    server = members.start(
        "sn-guarded",
        api_key=API_KEY,
        local_token=LOCAL_TOKEN,
        broker_url=f"http://127.0.0.1:{closed_port()}",
    )
    yield server
    members.stop(server)


@pytest.fixture(scope="module")
def stranger(member):
    """A client without the token."""
    with httpx.Client(base_url=member.url, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def owner(member):
    """A client with the token."""
    headers = {"Authorization": f"Bearer {LOCAL_TOKEN}"}
    with httpx.Client(base_url=member.url, headers=headers, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def transfer_id(member, stranger):
    """A delivery in the inbox (posted without the token: the broker's signature is enough)."""
    transfer_id = str(uuid.uuid4())
    headers = delivery_headers(transfer_id, CSV, f"{member.url}/inbox", recipient="sn-guarded")
    answer = stranger.post("/inbox", content=CSV, headers=headers)
    assert answer.status_code == 201, answer.text
    return transfer_id


def assert_401(answer, challenge="Bearer"):
    assert answer.status_code == 401, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["www-authenticate"].startswith(challenge)
    problem = answer.json()
    assert problem["type"] == "urn:fedbroker:problem:not-authenticated"
    assert problem["status"] == 401
    return problem


@pytest.mark.parametrize(("method", "path", "kwargs"), PROTECTED, ids=lambda v: str(v)[:40])
def test_every_route_of_the_members_api_needs_the_token(
    stranger, owner, transfer_id, method, path, kwargs
):
    owner.post("/datasets", files={"file": ("known.csv", CSV, "text/csv")}, data={"replace": "1"})
    path = path.format(name="known.csv", transfer_id=transfer_id, negotiation_id="n-1")

    missing = stranger.request(method, path, **kwargs)
    wrong = stranger.request(
        method, path, headers={"Authorization": f"Bearer {LOCAL_TOKEN}x"}, **kwargs
    )
    other_scheme = stranger.request(
        method, path, headers={"Authorization": f"Basic {LOCAL_TOKEN}"}, **kwargs
    )

    assert "MEMBER_LOCAL_TOKEN" in assert_401(missing)["detail"]
    assert assert_401(wrong)["instance"] == path
    assert wrong.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert_401(other_scheme)
    # the dataset is still there, nothing was created
    assert owner.get("/datasets/known.csv").status_code == 200
    assert "new.csv" not in {d["name"] for d in owner.get("/datasets").json()}


def test_with_the_token_the_api_answers(owner, transfer_id):
    assert owner.get("/").json()["id"] == "sn-guarded"
    assert owner.post("/datasets", files={"file": ("a.csv", CSV, "text/csv")}).status_code == 201
    assert owner.get("/datasets/a.csv").content == CSV
    assert owner.delete("/datasets/a.csv").status_code == 204
    assert owner.get(f"/inbox/{transfer_id}").content == CSV
    assert owner.get(f"/inbox/{transfer_id}/meta").json()["transfer_id"] == transfer_id
    assert transfer_id in [entry["transfer_id"] for entry in owner.get("/inbox").json()]
    # lower-case scheme (RFC 9110: case-insensitive)
    lower = owner.get("/", headers={"Authorization": f"bearer {LOCAL_TOKEN}"})
    assert lower.status_code == 200


def test_unknown_paths_need_the_token_too(stranger, owner):
    assert_401(stranger.get("/admin"))
    assert owner.get("/admin").status_code == 404


def test_health_docs_and_deliveries_need_no_token(stranger, transfer_id):
    assert stranger.get("/livez").json() == {"status": "ok"}
    assert stranger.get("/readyz").json() == {"status": "ready"}  # what the broker checks
    docs = stranger.get("/docs")
    assert docs.status_code == 200
    assert stranger.get("/openapi.json").status_code == 200
    assert stranger.get("/docs/oauth2-redirect").status_code == 200
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f"/static-offline-docs/{asset}" in docs.text
        assert stranger.get(f"/static-offline-docs/{asset}").status_code == 200
    # POST /inbox is public, but the broker's signature is checked (and challenged) as before
    unsigned = stranger.post("/inbox", content=CSV, headers={"Content-Type": "text/csv"})
    assert_401(unsigned, challenge="FedbrokerSignature")
    # only the listed methods are public
    assert_401(stranger.post("/livez"))
    assert_401(stranger.post("/readyz"))
    assert_401(stranger.delete("/inbox"))


def test_a_body_is_not_read_before_the_token_is_checked(stranger, member):
    answer = stranger.post("/datasets", content=b"not multipart at all")
    assert_401(answer)  # a 422 would mean the body was parsed first


def test_the_openapi_document_declares_the_bearer_scheme_where_it_is_checked(stranger, owner):
    document = stranger.get("/openapi.json").json()
    schemes = document["components"]["securitySchemes"]
    assert schemes == {
        "LocalToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "This member cloud's MEMBER_LOCAL_TOKEN",
        }
    }
    documented = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if operation.get("security") == [{"LocalToken": []}]
    }
    public = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "security" not in operation
    }
    assert {(m, p) for m, p, _ in PROTECTED} == documented
    assert public == {("GET", "/livez"), ("GET", "/readyz"), ("POST", "/inbox")}
    for method, path in documented:
        assert "401" in document["paths"][path][method.lower()]["responses"], (method, path)


def test_without_a_token_on_loopback_the_api_is_open_and_says_so(tmp_path, caplog):
    members = Members(tmp_path)
    with caplog.at_level(logging.WARNING, logger="member_cloud"):
        server = members.start(
            "sn-open", host="127.0.0.1", api_key="k", broker_url=f"http://127.0.0.1:{closed_port()}"
        )
    try:
        assert httpx.get(f"{server.url}/datasets").status_code == 200
        document = httpx.get(f"{server.url}/openapi.json").json()
        assert "securitySchemes" not in document.get("components", {})
        assert "open" in document["info"]["description"]
    finally:
        members.stop(server)
    warnings = [r for r in caplog.records if r.name == "member_cloud" and r.levelname == "WARNING"]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "MEMBER_LOCAL_TOKEN is not set" in message
    assert "\n" not in message


def test_a_browser_at_the_root_is_sent_to_the_docs(stranger, owner):
    html = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    answer = stranger.get("/", headers=html, follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/docs"
    assert stranger.get("/", headers=html, follow_redirects=True).status_code == 200
    # an API client still gets the 401, and with the token the member's identity
    assert_401(stranger.get("/"))
    assert_401(stranger.get("/", headers={**html, "Authorization": "Bearer nope"}))
    assert owner.get("/", headers=html).json()["id"] == "sn-guarded"

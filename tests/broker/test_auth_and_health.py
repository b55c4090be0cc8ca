"""Health probes, authentication and the problem+json shape of errors."""

from tests.broker.conftest import ADMIN, bearer


def test_health_needs_no_token(client):
    assert client.get("/livez").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}


def test_missing_token_is_401_problem_json(client):
    answer = client.get("/v1/policies")
    assert answer.status_code == 401
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["www-authenticate"] == "Bearer"
    body = answer.json()
    assert body["type"] == "urn:fedbroker:problem:not-authenticated"
    assert body["instance"] == "/v1/policies" and body["status"] == 401


def test_wrong_or_malformed_token_is_401(client):
    assert client.get("/v1/members", headers=bearer("fbk_nope")).status_code == 401
    assert client.get("/v1/members", headers={"Authorization": "Basic abc"}).status_code == 401


def test_member_on_admin_route_is_403(federation):
    answer = federation.client.get("/v1/audit", headers=bearer(federation.keys["sn-hospital"]))
    assert answer.status_code == 403
    assert answer.json()["type"] == "urn:fedbroker:problem:forbidden"


def test_suspended_member_is_refused(federation):
    client = federation.client
    assert (
        client.post("/v1/members/ng-health/suspend", headers=ADMIN).json()["status"] == "suspended"
    )
    answer = client.get("/v1/members", headers=bearer(federation.keys["ng-health"]))
    assert answer.status_code == 403 and "suspended" in answer.json()["detail"]
    client.post("/v1/members/ng-health/reactivate", headers=ADMIN)
    assert (
        client.get("/v1/members", headers=bearer(federation.keys["ng-health"])).status_code == 200
    )


def test_unknown_route_and_method_are_problems(client):
    answer = client.get("/v1/nothing", headers=ADMIN)
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"
    assert client.delete("/v1/policies", headers=ADMIN).status_code == 405


def test_docs_are_served_without_internet(client):
    page = client.get("/docs").text
    assert "cdn" not in page.lower()
    assert "/static-offline-docs/swagger-ui-bundle.js" in page
    assert client.get("/static-offline-docs/swagger-ui-bundle.js").status_code == 200


def test_unexpected_errors_are_problem_json(connection, settings):
    from fastapi.testclient import TestClient

    from broker.main import create_app

    app = create_app(settings, bind=connection)

    @app.get("/boom")
    def boom():
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/boom")
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/problem+json"
    assert "secret internals" not in answer.text


def test_nested_parquet_is_a_422(federation):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"a": [[1, 2], [3]]}), buffer)
    answer = federation.client.post(
        "/v1/analyze", headers=ADMIN, files={"file": ("n.parquet", buffer.getvalue())}
    )
    assert answer.status_code == 422 and "nested" in answer.json()["detail"]

"""Health probes, authentication and the problem+json shape of errors."""

import pytest

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


def test_every_answer_and_problem_carries_a_request_id(client):
    answer = client.get("/v1/members", headers={"X-Request-ID": "trace-42"})
    assert answer.headers["x-request-id"] == "trace-42"
    problem = client.get("/v1/nothing-here", headers={"X-Request-ID": "trace-43"})
    assert problem.json()["request_id"] == "trace-43"
    made = client.get("/livez", headers={"X-Request-ID": "not ok!"}).headers["x-request-id"]
    assert len(made) == 32  # an unusable id is replaced


def test_log_lines_are_json_with_the_request_id(capfd):
    import json
    import logging

    from broker.web.requests_log import configure_logging
    from broker.wire.request_id import current

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging()
        token = current.set("trace-44")
        logging.getLogger("broker.delivery").warning("delivery of %s failed", "t-1")
        current.reset(token)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    line = json.loads(capfd.readouterr().err.strip().splitlines()[-1])
    assert line["request_id"] == "trace-44" and line["level"] == "WARNING"
    assert line["message"] == "delivery of t-1 failed" and line["logger"] == "broker.delivery"


def test_prometheus_metrics_count_decisions_deliveries_and_the_outbox(federation, client):
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
    )
    assert answer.json()["status"] == "approved"
    client.get("/v1/nothing-here")
    text = client.get("/metrics").text
    assert (
        'fedbroker_decisions_total{destination_jurisdiction="FR",source_jurisdiction="SN",'
        'status="approved"} 1.0' in text
    )
    assert "fedbroker_outbox_pending 1.0" in text  # no worker runs in these tests
    assert "fedbroker_outbox_oldest_pending_seconds" in text
    assert 'fedbroker_analysis_seconds_count{kind="transfer"} 1.0' in text
    assert 'http_requests_total{handler="/v1/transfers",method="POST",status="2xx"} 1.0' in text


def test_prometheus_metrics_count_the_statements_sent_to_the_database(tmp_path, settings):
    """Each statement the process sends, as the engine's own hook sees it (a test's listener
    beside the broker's), counted once: a load benchmark divides it by the decisions."""
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    from broker.main import create_app

    own = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'b.db'}"})
    with TestClient(create_app(own)) as client:
        counter = client.app.state.monitoring.database_statements

        def counted() -> float:  # the counter alone: a scrape reads the outbox meanwhile
            return next(s.value for s in counter.collect()[0].samples if s.name.endswith("_total"))

        seen = []
        event.listen(client.app.state.engine, "before_cursor_execute", lambda *a: seen.append(1))
        before = counted()
        assert client.get("/v1/members", headers=ADMIN).status_code == 200
        after, statements = counted(), len(seen)
        served = client.get("/metrics").text
    assert before > 0  # the migrations and the seeding, at start
    assert after - before == statements > 0
    assert "fedbroker_database_statements_total " in served


def test_prometheus_metrics_count_the_transactions_opened_not_the_reads_outside_them(
    tmp_path, settings
):
    """On SQLite every transaction the broker opens is a BEGIN IMMEDIATE it sends; the token's
    read, outside any transaction, is none."""
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    from broker.main import create_app

    own = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'b.db'}"})
    with TestClient(create_app(own)) as client:
        counter = client.app.state.monitoring.database_transactions

        def counted() -> float:
            return next(s.value for s in counter.collect()[0].samples if s.name.endswith("_total"))

        begun = []
        event.listen(
            client.app.state.engine,
            "before_cursor_execute",
            lambda _c, _cur, statement, *a: begun.append(statement == "BEGIN IMMEDIATE"),
        )
        before = counted()
        created = client.post(
            "/v1/members",
            headers=ADMIN,
            json={
                "id": "qq-lab",
                "name": "QQ",
                "jurisdiction": "SN",
                "inbox_url": "http://127.0.0.1:9/i",
            },
        )
        assert created.status_code == 201, created.text
        after, seen = counted(), list(begun)
        served = client.get("/metrics").text  # (its outbox reading is one more)
    assert after - before == sum(seen) >= 1
    assert not seen[0]  # the token's read, outside any transaction
    assert "fedbroker_database_transactions_total " in served


def test_a_member_over_its_upload_rate_gets_429_with_retry_after(connection, settings):
    from fastapi.testclient import TestClient

    from broker.main import create_app
    from tests.broker.conftest import Federation

    settings = settings.model_copy(update={"rate_limit": "2/minute"})
    with TestClient(create_app(settings, bind=connection)) as limited:
        federation = Federation(limited)

        def send(member):
            return federation.send(member, "patients_published.csv", destination="fr-research")

        for _ in range(2):
            assert send("sn-hospital").status_code == 200
        answer = send("sn-hospital")
        assert answer.status_code == 429
        assert answer.headers["content-type"] == "application/problem+json"
        assert 1 <= int(answer.headers["retry-after"]) <= 60
        assert "2 per 1 minute" in answer.json()["detail"]
        # Another member has its own budget; admins have none.
        assert send("sn-lab").status_code == 200
        files = {"file": ("a.csv", b"a,b\n1,2\n")}
        for _ in range(3):
            assert limited.post("/v1/analyze", headers=ADMIN, files=files).status_code == 200


def test_the_catalogs_measurement_upload_counts_against_the_upload_rate(connection, settings):
    """Measuring a catalog dataset reads an upload as a transfer does: it is rate limited too,
    and a caller over its limit is refused before its file is copied."""
    from fastapi.testclient import TestClient

    from broker.main import create_app
    from tests.broker.conftest import Federation
    from tests.broker.test_catalog import measure, publish

    settings = settings.model_copy(update={"rate_limit": "2/minute"})
    with TestClient(create_app(settings, bind=connection)) as limited:
        federation = Federation(limited)
        dataset = publish(federation).json()["id"]
        assert measure(federation, dataset).status_code == 200
        sent = federation.send("sn-hospital", "patients_published.csv", destination="fr-research")
        assert sent.status_code == 200
        answer = measure(federation, dataset)  # the third upload in a minute
        assert answer.status_code == 429, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert int(answer.headers["retry-after"]) >= 1


def test_a_bad_rate_setting_is_named():
    from pydantic import ValidationError

    from broker.config import Settings

    with pytest.raises(ValidationError, match="not a rate"):
        Settings(rate_limit="often")


def test_the_root_points_to_the_docs(client):
    answer = client.get("/", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/docs"
    assert client.get("/").status_code == 200  # followed: the docs page, no token needed

"""Schemathesis over the broker's OpenAPI schema: no 5xx and no undocumented status.

The schema comes from an app built with ``create_app`` (building it touches no database). Every
operation is then called in-process (ASGI) on one migrated SQLite database, once as the admin and
once as a member cloud, with schemathesis's three phases (the schema's examples, coverage of
boundaries and fuzzing). Checks: no server error, every status documented for its operation, the
content type and the body match what the schema documents. Generation is deterministic (fixed
seed, derandomized, no example database) and bounded (a few examples per operation), so a run
repeats exactly and stays short.

Every failure schemathesis found is kept below as an exact reproducer, run as a regression test
with the same checks. A new finding gets a reproducer marked ``xfail(strict=True)`` with a reason
naming the bug (strict, so the mark fails once the bug is fixed and must then be removed); if the
fuzzing keeps hitting it, ``hypothesis.reject()`` those inputs in ``test_operation`` meanwhile.
"""

from __future__ import annotations

import pytest
import schemathesis
import yaml
from fastapi.testclient import TestClient
from schemathesis.checks import not_a_server_error
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from broker.config import Settings
from broker.main import create_app
from broker.storage.db import make_engine, upgrade
from tests.broker.conftest import ADMIN, Federation, bearer
from tests.conftest import ADMIN_TOKEN, POLICIES

MAX_EXAMPLES = 8  # per operation, caller and phase
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20250611,
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
        # What is checked is each answer, not its speed: a page with a chart of a year of days
        # takes a second on a quiet machine, and a second request for it waits on the charts'
        # lock; past schemathesis's default of 10 s on a loaded one (a hang still fails).
        "request-timeout": 60,
    }
)
INT64_MAX = 2**63 - 1


def broker_settings(database_url: str = "sqlite://") -> Settings:
    return Settings(
        database_url=database_url,
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        apply_migrations=False,
        delivery_enabled=False,
        jobs_enabled=False,
        health_check_enabled=False,
        max_upload_bytes=200_000,
        inbox_allowed_networks=["127.0.0.0/8"],
    )


schema = schemathesis.openapi.from_dict(create_app(broker_settings()).openapi(), config=CONFIG)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """The broker on a migrated SQLite file with two members; yields (app, member API keys)."""
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('schemathesis') / 'broker.db'}")
    upgrade(engine)
    engine.dispose()
    app = create_app(broker_settings(engine.url.render_as_string(hide_password=False)))
    with TestClient(app) as client:
        keys = Federation(client).keys
    yield app, keys
    shutdown_lifespans()  # schemathesis keeps the app's lifespan running until told


@pytest.fixture(scope="module", params=["admin", "member"])
def caller(request, broker) -> dict[str, str]:
    """The Authorization header: the admin token, or the SN hospital's API key."""
    _, keys = broker
    return ADMIN if request.param == "admin" else bearer(keys["sn-hospital"])


@schema.parametrize()
def test_operation(case, broker, caller):
    app, _ = broker
    case.call_and_validate(app=app, headers=caller, checks=CHECKS)


def _new_jurisdiction_record() -> dict:
    record = yaml.safe_load((POLICIES / "sn.yaml").read_text(encoding="utf-8"))
    return {**record, "jurisdiction": "QQ", "name": "Schemathesis test jurisdiction"}


TOO_BIG = INT64_MAX + 1
NOT_UTF8 = {"body": b'{"id": "\xff"}', "media_type": "application/json"}
FOUND = {  # what schemathesis found, by reproducer id
    "int64-overflow": "an integer parameter above 2**63-1 reached SQLite: OverflowError, a 500 "
    "in text/plain",
    "non-utf8-json": "a JSON body that is not UTF-8 got 400 'There was an error parsing the "
    "body', a status these operations did not document",
    "new-jurisdiction-201": "PUT of version 1 of a new jurisdiction answered 201, which was not "
    "documented",
}
# (id, operation, request, statuses the fix answers)
REPRODUCERS = [
    (
        "int64-overflow",
        "GET /v1/policies/{jurisdiction}/versions/{number}",
        {"path_parameters": {"jurisdiction": "SN", "number": TOO_BIG}},
        {422},
    ),
    ("int64-overflow", "GET /v1/audit", {"query": {"after": TOO_BIG}}, {422}),
    ("int64-overflow", "GET /v1/transfers", {"query": {"offset": TOO_BIG}}, {422}),
    ("non-utf8-json", "POST /v1/members", NOT_UTF8, {400, 422}),
    (
        "non-utf8-json",
        "PUT /v1/policies/{jurisdiction}",
        {"path_parameters": {"jurisdiction": "SN"}, **NOT_UTF8},
        {400, 422},
    ),
    (
        "non-utf8-json",
        "POST /v1/policies/{jurisdiction}/check",
        {"path_parameters": {"jurisdiction": "SN"}, **NOT_UTF8},
        {400, 422},
    ),
    (
        "new-jurisdiction-201",
        "PUT /v1/policies/{jurisdiction}",
        {"path_parameters": {"jurisdiction": "QQ"}, "body": _new_jurisdiction_record()},
        {201},
    ),
]


@pytest.mark.parametrize(
    ("name", "label", "case_data", "statuses"),
    [
        pytest.param(name, label, case_data, statuses, id=f"{name}:{label}")
        for name, label, case_data, statuses in REPRODUCERS
    ],
)
def test_reproducer(broker, name, label, case_data, statuses):
    """An exact request that once broke a check, sent as the admin with the same checks."""
    app, _ = broker
    method, path = label.split(" ", 1)
    case = schema[path][method].Case(**case_data)
    response = case.call_and_validate(app=app, headers=ADMIN, checks=CHECKS)
    assert response.status_code in statuses, f"{FOUND[name]}; now: {response.text}"

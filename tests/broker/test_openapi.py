"""The broker's OpenAPI document, walked as a client generator and /docs read it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from broker.main import create_app
from broker.wire.statuses import RuleName
from tests.broker.test_schemathesis import broker_settings

METHODS = {"get", "put", "post", "patch", "delete", "head", "options"}
# FastAPI's default operationId: function name, path and method (put_policy_v1_policies__...).
AUTO_GENERATED = re.compile(r"__|_v\d+_|_(get|put|post|patch|delete|head|options)$")
OPERATION_IDS = {  # the stable names clients are generated with: change one only on purpose
    "GET /.well-known/dspace-version": "get_dspace_version",
    "POST /dsp/2025-1/catalog/request": "dsp_request_catalog",
    "GET /dsp/2025-1/catalog/datasets/{dataset_id}": "dsp_get_dataset",
    "POST /dsp/2025-1/negotiations/request": "dsp_request_negotiation",
    "GET /dsp/2025-1/negotiations/{provider_pid}": "dsp_get_negotiation",
    "POST /dsp/2025-1/negotiations/{provider_pid}/request": "dsp_counter_request_negotiation",
    "POST /dsp/2025-1/negotiations/{provider_pid}/events": "dsp_accept_negotiation",
    "POST /dsp/2025-1/negotiations/{provider_pid}/agreement/verification": "dsp_verify_agreement",
    "POST /dsp/2025-1/negotiations/{provider_pid}/termination": "dsp_terminate_negotiation",
    "POST /dsp/2025-1/transfers/request": "dsp_request_transfer",
    "GET /dsp/2025-1/transfers/{provider_pid}": "dsp_get_transfer",
    "POST /dsp/2025-1/transfers/{provider_pid}/start": "dsp_start_transfer",
    "POST /dsp/2025-1/transfers/{provider_pid}/completion": "dsp_complete_transfer",
    "POST /dsp/2025-1/transfers/{provider_pid}/suspension": "dsp_suspend_transfer",
    "POST /dsp/2025-1/transfers/{provider_pid}/termination": "dsp_terminate_transfer",
    "GET /metrics": "get_metrics",
    "GET /livez": "get_liveness",
    "GET /readyz": "get_readiness",
    "GET /v1/policies": "list_policies",
    "GET /v1/policies/{jurisdiction}": "get_policy",
    "PUT /v1/policies/{jurisdiction}": "put_policy",
    "PATCH /v1/policies/{jurisdiction}": "patch_policy",
    "GET /v1/policies/{jurisdiction}/versions": "list_policy_versions",
    "GET /v1/policies/{jurisdiction}/versions/{number}": "get_policy_version",
    "GET /v1/policies/{jurisdiction}/versions/{old}/diff/{new}": "diff_policy_versions",
    "POST /v1/policies/{jurisdiction}/check": "check_policy",
    "POST /v1/policies/{jurisdiction}/replay": "replay_policy",
    "GET /v1/members": "list_members",
    "POST /v1/members": "register_member",
    "GET /v1/members/{member_id}": "get_member",
    "POST /v1/members/{member_id}/suspend": "suspend_member",
    "POST /v1/members/{member_id}/reactivate": "reactivate_member",
    "POST /v1/members/{member_id}/api-key": "rotate_member_key",
    "POST /v1/members/{member_id}/api-key/revoke": "revoke_member_keys",
    "POST /v1/transfers": "create_transfer",
    "GET /v1/transfers": "list_transfers",
    "GET /v1/transfers/jobs/{job_id}": "get_transfer_job",
    "POST /v1/transfers/{transfer_id}/redeliver": "redeliver_transfer",
    "GET /v1/transfers/{transfer_id}": "get_transfer",
    "GET /v1/transfers/dry-runs/{dry_run_id}/data": "get_dry_run_data",
    "GET /v1/transfers/{transfer_id}/report": "get_transfer_report",
    "POST /v1/transfers/{transfer_id}/erasure": "erase_transfer",
    "GET /v1/catalog": "list_catalog",
    "POST /v1/catalog/datasets": "publish_dataset",
    "GET /v1/catalog/datasets/{dataset_id}": "get_catalog_dataset",
    "PUT /v1/catalog/datasets/{dataset_id}": "revise_dataset",
    "DELETE /v1/catalog/datasets/{dataset_id}": "withdraw_dataset",
    "GET /v1/catalog/datasets/{dataset_id}/versions": "list_catalog_versions",
    "POST /v1/catalog/datasets/{dataset_id}/measurement": "measure_dataset",
    "POST /v1/negotiations": "create_negotiation",
    "GET /v1/negotiations": "list_negotiations",
    "GET /v1/negotiations/{negotiation_id}": "get_negotiation",
    "POST /v1/negotiations/{negotiation_id}/offer": "offer_negotiation",
    "POST /v1/negotiations/{negotiation_id}/request": "request_negotiation",
    "POST /v1/negotiations/{negotiation_id}/accept": "accept_negotiation",
    "POST /v1/negotiations/{negotiation_id}/verify": "verify_negotiation",
    "POST /v1/negotiations/{negotiation_id}/terminate": "terminate_negotiation",
    "GET /v1/agreements": "list_agreements",
    "GET /v1/agreements/{agreement_id}": "get_agreement",
    "GET /v1/notifications": "list_notifications",
    "POST /v1/analyze": "analyze_dataset",
    "GET /v1/audit": "list_audit_entries",
    "GET /v1/audit/verify": "verify_audit_chain",
    "GET /v1/admins": "list_admins",
    "POST /v1/admins": "create_admin",
    "POST /v1/admins/{name}/revoke": "revoke_admin",
    "GET /v1/federation/overview": "get_federation_overview",
    "GET /v1/federation/overview.html": "get_federation_overview_page",
    "GET /.well-known/fedbroker-keys.json": "get_signing_keys",
}


@pytest.fixture(scope="module")
def spec() -> dict:
    return create_app(broker_settings()).openapi()


def operations(spec: dict):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield f"{method.upper()} {path}", operation


def test_every_operation_has_a_stable_operation_id_and_a_description(spec):
    found = dict(operations(spec))
    assert found, "no operations in the schema"
    bad = []
    for label, operation in found.items():
        operation_id = operation.get("operationId", "")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", operation_id) or AUTO_GENERATED.search(
            operation_id
        ):
            bad.append(f"{label}: operationId {operation_id!r} looks auto-generated")
        if not (operation.get("description") or "").strip():
            bad.append(f"{label}: no description")
        if not (operation.get("summary") or "").strip():
            bad.append(f"{label}: no summary")
    assert not bad, "\n".join(bad)
    ids = [operation["operationId"] for operation in found.values()]
    assert len(ids) == len(set(ids))
    assert {label: op["operationId"] for label, op in found.items()} == OPERATION_IDS


def test_the_auto_generated_pattern_is_caught():
    assert AUTO_GENERATED.search("put_policy_v1_policies__jurisdiction__put")
    assert AUTO_GENERATED.search("livez_livez_get")
    assert not AUTO_GENERATED.search("get_policy_version")


def schema(spec: dict, name: str) -> dict:
    return spec["components"]["schemas"][name]


def enum_of(spec: dict, model: str, field: str) -> list[str]:
    prop = schema(spec, model)["properties"][field]
    ref = prop.get("$ref") or next(
        (p["$ref"] for p in prop.get("anyOf", []) + prop.get("allOf", []) if "$ref" in p), None
    )
    target = schema(spec, ref.split("/")[-1]) if ref else prop
    return target["enum"]


@pytest.mark.parametrize(
    ("model", "field", "values"),
    [
        ("RuleRead", "scope", {"export", "import", "agreement", "federation", "request"}),
        ("DeliveryRead", "status", {"not_applicable", "pending", "held", "delivered", "failed"}),
        ("TransferRead", "status", {"approved", "anonymization_required", "rejected"}),
        ("TransferRead", "anonymize", {"none", "auto"}),
        ("MemberRead", "status", {"active", "suspended"}),
        ("MemberHealthRead", "state", {"up", "down", "unknown"}),
        ("TransferJobRead", "state", {"queued", "running", "done", "failed"}),
        ("PolicyWarningRead", "code", None),
    ],
)
def test_status_rule_and_scope_fields_are_enums(spec, model, field, values):
    found = set(enum_of(spec, model, field))
    assert found if values is None else found == values


def test_rule_enum_lists_every_rule_a_decision_can_report(spec):
    """Each rule name written in broker/fsla (RuleResult(...) and per_attribute(...) calls, and
    the names in the risk table) is in RuleName, so a decision never fails its own schema."""
    assert set(enum_of(spec, "RuleRead", "rule")) == {r.value for r in RuleName}
    written = set()
    for path in Path("broker/fsla").rglob("*.py"):  # the rule families too
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args:
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                first = node.args[0]
                if name in ("RuleResult", "per_attribute") and isinstance(first, ast.Constant):
                    written.add(first.value)
            if isinstance(node, ast.Tuple) and len(node.elts) == 3:  # (rule, label, bound)
                first = node.elts[0]
                if isinstance(first, ast.Constant) and str(first.value).startswith("max_"):
                    written.add(first.value)
    assert len(written) > 15
    assert written <= {r.value for r in RuleName}, written - {r.value for r in RuleName}


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/v1/transfers", ["quasi_identifiers", "sensitive", "person_key", "location"]),
        ("/v1/analyze", ["quasi_identifiers", "sensitive"]),
    ],
)
def test_optional_form_fields_are_not_prefilled_with_string(spec, path, fields):
    """Swagger UI fills a nullable text field (anyOf string/null) with "string" and sends it on
    Execute; an empty default leaves the field empty, which sends nothing."""
    body = spec["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]
    properties = schema(spec, body["schema"]["$ref"].split("/")[-1])["properties"]
    for field in fields:
        prop = properties[field]
        assert prop.get("type") == "string" and "anyOf" not in prop, (field, prop)
        assert prop["default"] == "" and "examples" not in prop, (field, prop)
        assert "e.g." in prop["description"]

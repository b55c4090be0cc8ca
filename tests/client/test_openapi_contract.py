"""The client against the broker's OpenAPI document: the published file is the app's document,
the models are generated from it, and every operation has the method that calls its route and
reads its answer with the model of its schema."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from fedbroker.client import models as m
from fedbroker.client._core import Call
from fedbroker.client.operations import Operations, operations

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "openapi.json"
sys.path.insert(0, str(ROOT / "scripts"))
import export_openapi  # noqa: E402
import generate_client  # noqa: E402


@pytest.fixture(scope="module")
def spec() -> dict:
    return export_openapi.document()


def test_the_published_document_is_the_apps(spec):
    """docs/openapi.json cannot drift: run scripts/export_openapi.py after changing a route."""
    assert DOCUMENT.read_text(encoding="utf-8") == export_openapi.rendered(spec)


def test_the_models_are_generated_from_the_published_document():
    """Run scripts/generate_client.py after exporting the document."""
    written = generate_client.render(json.loads(DOCUMENT.read_text(encoding="utf-8")))
    assert generate_client.OUTPUT.read_text(encoding="utf-8") == written


def test_the_async_stub_is_generated_from_the_operations():
    """AsyncClient's methods, for type checkers: each operation as ``async def``."""
    source = generate_client.OPERATIONS.read_text(encoding="utf-8")
    assert generate_client.STUB.read_text(encoding="utf-8") == generate_client.stub(source)
    stubbed = re.findall(r"async def (\w+)\(", generate_client.STUB.read_text(encoding="utf-8"))
    assert sorted(stubbed) == sorted(operations().values())


def test_the_generated_module_is_formatted_as_ruff_would():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", str(generate_client.OUTPUT)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_schema_is_a_model_with_its_fields(spec):
    """Read from the document, not from the generator: each schema's properties, required
    ones without a default."""
    for name, schema in spec["components"]["schemas"].items():
        model = getattr(m, name)
        if "enum" in schema:
            assert sorted(member.value for member in model) == sorted(schema["enum"]), name
            continue
        fields = {field.alias or attr: field for attr, field in model.model_fields.items()}
        assert set(fields) == set(schema.get("properties", {})), name
        required = {alias for alias, field in fields.items() if field.is_required()}
        assert required == set(schema.get("required", ())), name


class Recorder(Operations):
    """Returns the call an operation would make instead of making it."""

    def _call(self, call: Call) -> Call:
        return call


def example(parameter: inspect.Parameter) -> object:
    kind = str(parameter.annotation)
    if kind.startswith("int"):
        return 7
    if kind.startswith("Upload"):
        return b"a,b\n1,2\n"
    if kind.startswith(("Body", "Mapping")):
        return {}
    return "id-1"


def recorded(name: str) -> tuple[Call, dict[str, object]]:
    method = getattr(Recorder, name)
    arguments = {
        parameter.name: example(parameter)
        for parameter in list(inspect.signature(method).parameters.values())[1:]
        if parameter.default is inspect.Parameter.empty
    }
    return method(Recorder(), **arguments), arguments


def expected_answer(operation: dict) -> object:
    """The Python type the document says the successful answer is."""
    responses = operation["responses"]
    success = min(code for code in responses if code.startswith("2"))
    content = responses[success].get("content", {})
    if not content:
        return None
    if "application/json" not in content:
        media = next(iter(content))
        return str if media.startswith("text/") else bytes
    schema = content["application/json"]["schema"]
    if "$ref" in schema:
        return getattr(m, schema["$ref"].rsplit("/", 1)[1])
    if schema.get("type") == "array" and "$ref" in schema["items"]:
        return list[getattr(m, schema["items"]["$ref"].rsplit("/", 1)[1])]
    if schema.get("type") == "object" or schema == {}:
        values = schema.get("additionalProperties")
        return dict[str, str] if values == {"type": "string"} else dict[str, typing.Any]
    raise AssertionError(f"no Python type for {schema}")


# The Dataspace Protocol's binding is for dataspace connectors, which speak the protocol with
# clients of their own: the member clouds' client leaves it out.
PROTOCOL_TAG = "Dataspace Protocol"


def every_operation(spec: dict):
    """Every operation of the document a member cloud calls (all but the protocol's)."""
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            if PROTOCOL_TAG not in operation.get("tags", []):
                yield method.upper(), path, operation


def test_only_the_protocols_routes_are_left_to_connectors(spec):
    left = {
        path
        for path, methods in spec["paths"].items()
        for operation in methods.values()
        if PROTOCOL_TAG in operation.get("tags", [])
    }
    assert left and all(p.startswith("/dsp/") or p == "/.well-known/dspace-version" for p in left)


def test_every_operation_of_the_document_has_a_client_method(spec):
    """The explicit marks (operationId -> method), not names matched by spelling."""
    ids = {operation["operationId"] for _, _, operation in every_operation(spec)}
    assert set(operations()) == ids


def test_every_method_calls_its_route_and_reads_its_answer(spec):
    for method, path, operation in every_operation(spec):
        name = operations()[operation["operationId"]]
        call, arguments = recorded(name)
        route = path.format_map(arguments)
        assert (call.method, call.path) == (method, route), name
        assert call.answer == expected_answer(operation), name


def test_operations_that_take_an_idempotency_key_always_send_one(spec):
    """A random key when the caller gives none, so that the client's own retries are safe."""
    for _, _, operation in every_operation(spec):
        headers = {
            p["name"].lower() for p in operation.get("parameters", []) if p["in"] == "header"
        }
        call, _ = recorded(operations()[operation["operationId"]])
        sent = {name.lower() for name in call.headers}
        assert ("idempotency-key" in sent) == ("idempotency-key" in headers), operation[
            "operationId"
        ]


# Where a method's argument is not named as the document's parameter.
RENAMED = {"file": "data", "prefer": "respond_async", "q": "keywords", "state": "states"}
WHOLE_BODY = {"record", "description", "patch"}  # a method that takes the whole JSON body


def test_every_parameter_of_every_operation_can_be_given(spec):
    """Query, path and header parameters, form fields, and the fields of a JSON body the method
    spreads into arguments: a method that left one out could not send it."""
    schemas = spec["components"]["schemas"]
    for _, _, operation in every_operation(spec):
        name = operations()[operation["operationId"]]
        arguments = set(inspect.signature(getattr(Operations, name)).parameters)
        wanted = {
            p["name"].lower().replace("-", "_")
            for p in operation.get("parameters", [])
            if p["in"] in ("query", "path", "header")
        }
        for media, content in operation.get("requestBody", {}).get("content", {}).items():
            reference = content["schema"].get("$ref")
            if reference is None or (media == "application/json" and WHOLE_BODY & arguments):
                continue
            wanted |= set(schemas[reference.rsplit("/", 1)[1]]["properties"])
        missing = {RENAMED.get(p, p) for p in wanted} - arguments
        assert missing == set(), name

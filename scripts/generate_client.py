"""Generate the Python client's typed parts: its answer models from docs/openapi.json, and the
async client's type stub from its operations.

fedbroker/client/models.py: every schema of the broker's OpenAPI document becomes a pydantic
model (an enumeration of strings becomes a ``StrEnum``), so the client's models are the
document's, field for field. The models accept fields the document does not list yet
(``extra="allow"``): a newer broker does not break an older client.

fedbroker/client/_async_operations.pyi: the operations of fedbroker/client/operations.py as
``async def``, which is what ``AsyncClient``'s methods are at run time (each returns the
awaitable of its answer); type checkers read it, nothing imports it when the client runs.

A test fails when either committed file differs from what this script writes. Run it after
scripts/export_openapi.py, and after changing an operation:

    python scripts/generate_client.py
"""

from __future__ import annotations

import ast
import json
import keyword
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "openapi.json"
OUTPUT = ROOT / "fedbroker" / "client" / "models.py"
OPERATIONS = ROOT / "fedbroker" / "client" / "operations.py"
STUB = ROOT / "fedbroker" / "client" / "_async_operations.pyi"
RESERVED = {"model_config", "model_fields", "copy", "dict", "json", "schema", "validate"}
HEADER = '''"""The broker's answers as pydantic models, generated from its OpenAPI document.

Do not edit: scripts/generate_client.py writes this module from docs/openapi.json.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class BrokerModel(BaseModel):
    """Base of every answer model: unknown fields are kept, so a newer broker reads fine."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
'''


def quoted(value: object) -> str:
    """A literal as ruff formats it (double quotes)."""
    return json.dumps(value, ensure_ascii=False)


def annotation(schema: dict) -> str:
    """The Python type of a JSON Schema, as pydantic writes them."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "anyOf" in schema or "oneOf" in schema:
        parts = [annotation(part) for part in schema.get("anyOf", schema.get("oneOf"))]
        return " | ".join(dict.fromkeys(parts))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return annotation(schema["allOf"][0])
    if "const" in schema:
        return f"Literal[{quoted(schema['const'])}]"
    if "enum" in schema:
        return f"Literal[{', '.join(quoted(value) for value in schema['enum'])}]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(annotation({**schema, "type": one}) for one in kind)
    if kind == "string":
        return "datetime" if schema.get("format") == "date-time" else "str"
    if kind == "array":
        return f"list[{annotation(schema['items']) if 'items' in schema else 'Any'}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        value = annotation(extra) if isinstance(extra, dict) and extra else "Any"
        return f"dict[str, {value}]"
    return {"integer": "int", "number": "float", "boolean": "bool", "null": "None"}.get(kind, "Any")


def attribute(name: str) -> str:
    """A Python attribute for a JSON property (``class`` becomes ``class_``)."""
    plain = name.isidentifier() and not keyword.iskeyword(name) and name not in RESERVED
    if plain and not name.startswith(("_", "model_")):
        return name
    cleaned = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "field"
    return f"{cleaned}_"


def docstring(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    lines = textwrap.wrap(
        text + '"""', width=99, initial_indent=f'{indent}"""', subsequent_indent=indent
    )
    return [*lines, ""]


def model(name: str, schema: dict) -> list[str]:
    if "enum" in schema and schema.get("type") == "string":
        lines = [f"class {name}(StrEnum):", *docstring(schema.get("description"), "    ")]
        for value in schema["enum"]:
            member = attribute(value.upper().replace(" ", "_").replace("-", "_"))
            lines.append(f"    {member} = {quoted(value)}")
        return lines
    lines = [f"class {name}(BrokerModel):", *docstring(schema.get("description"), "    ")]
    required = set(schema.get("required", ()))
    properties = schema.get("properties", {})
    for prop, spec in properties.items():
        kind = annotation(spec)
        field = attribute(prop)
        arguments = [] if field == prop else [f"alias={quoted(prop)}"]
        if prop not in required:
            if "None" not in kind.split(" | "):
                kind += " | None"
            arguments.insert(0, "None")
        if arguments == ["None"]:
            lines.append(f"    {field}: {kind} = None")
        elif arguments:
            lines.append(f"    {field}: {kind} = Field({', '.join(arguments)})")
        else:
            lines.append(f"    {field}: {kind}")
    if not properties:
        lines.append("    pass")
    return lines


def render(document: dict) -> str:
    schemas = document["components"]["schemas"]
    parts = [HEADER]
    for name in sorted(schemas):
        parts.append("\n\n" + "\n".join(model(name, schemas[name])).rstrip() + "\n")
    classes = [name for name in sorted(schemas) if "enum" not in schemas[name]]
    parts.append("\n\nfor _model in (\n")
    parts.extend(f"    {name},\n" for name in classes)
    parts.append("):\n    _model.model_rebuild()\n")
    return formatted("".join(parts), OUTPUT)  # long unions wrapped as ruff wraps them


STUB_HEADER = '''"""The async client's operations for type checkers: each one awaited.

Do not edit: scripts/generate_client.py writes this stub from fedbroker/client/operations.py.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from fedbroker.client import models as m
from fedbroker.client.operations import Body, Upload

class AsyncOperations:
'''


def stub(source: str) -> str:
    """Every operation method of ``Operations`` in ``source``, as an ``async def`` stub."""
    tree = ast.parse(source)
    operations = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Operations"
    )
    lines = [STUB_HEADER]
    for node in operations.body:
        marked = isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Call) and getattr(d.func, "id", "") == "operation"
            for d in node.decorator_list
        )
        if not marked:
            continue
        node.decorator_list = []
        node.body = [ast.Expr(ast.Constant(...))]
        lines.append("    async " + ast.unparse(node).replace("\n", " ") + "\n")
    return formatted("".join(lines), STUB)


def formatted(source: str, path: Path) -> str:
    """``source`` as ``ruff format`` writes it (a stub is written on one line a method)."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return done.stdout


def main() -> None:
    OUTPUT.write_text(render(json.loads(DOCUMENT.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    STUB.write_text(stub(OPERATIONS.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {STUB.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())

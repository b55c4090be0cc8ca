"""MkDocs hook: the reference pages, generated from the code at every build.

Hand-copied reference tables drift from the code (a default changes, a setting is added); these
pages cannot: each is written from the object the program itself reads. The settings from the
pydantic-settings classes, the F-SLA fields from the record model, the HTTP API from the app's
OpenAPI document, the command line from its argparse parsers. ``mkdocs build --strict`` runs in
the test suite, so a page that no longer builds fails it.
"""

from __future__ import annotations

import os
import tempfile
import typing
from collections.abc import Callable, Iterable
from pathlib import Path

from mkdocs.structure.files import File, Files
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


def on_files(files: Files, config) -> Files:
    for path, write in PAGES.items():
        files.append(File.generated(config, path, content=write()))
    return files


# --- helpers ---------------------------------------------------------------------------------


def _cell(text: object) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(annotation: object) -> str:
    text = getattr(annotation, "__name__", None) if not typing.get_args(annotation) else None
    text = text or str(annotation)
    for prefix in ("typing.", "pathlib.", "pydantic.types.", "datetime."):
        text = text.replace(prefix, "")
    return text.replace("NoneType", "None")


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        return "required" if field.default_factory is None else f"`{field.default_factory()!r}`"
    value = field.default
    if value is None:
        return "none"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, BaseModel):  # a nested record: its own defaults are listed below
        return f"`{type(value).__name__}()`"
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"`{value:_}`".replace("_", ",")
    return f"`{value}`"


def _fields_table(model: type[BaseModel], name_of: Callable[[str], str]) -> str:
    rows = ["| name | type | default | what it is |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        rows.append(
            f"| `{name_of(name)}` | `{_cell(_type(field.annotation))}` | {_default(field)} | "
            f"{_cell(field.description or '')} |"
        )
    return "\n".join(rows)


# --- settings --------------------------------------------------------------------------------


def settings_page() -> str:
    from broker.config import Settings
    from member_cloud.config import MemberSettings

    def env(prefix: str) -> Callable[[str], str]:
        return lambda name: f"{prefix}{name.upper()}"

    return "\n".join(
        [
            "# Settings",
            "",
            "Every setting is read from the environment (or a `.env` file) by pydantic-settings, "
            "or from a file named after it in `/run/secrets`, where Docker and Kubernetes mount "
            "secrets ([secrets as files](../operations/deployment.md#secrets-as-files)). This "
            "page is generated from the settings classes at each build of the site, so it "
            "lists exactly what the code reads.",
            "",
            "## The broker (`BROKER_*`) {#broker}",
            "",
            _fields_table(Settings, env(Settings.model_config["env_prefix"])),
            "",
            "## A member cloud (`MEMBER_*`) {#member-cloud}",
            "",
            _fields_table(MemberSettings, env(MemberSettings.model_config["env_prefix"])),
            "",
        ]
    )


# --- F-SLA fields ----------------------------------------------------------------------------


def _models_below(model: type[BaseModel]) -> Iterable[type[BaseModel]]:
    """``model`` and every model its fields hold, each once, in the order first met."""
    seen: list[type[BaseModel]] = []

    def walk(current: type[BaseModel]) -> None:
        if current in seen:
            return
        seen.append(current)
        for field in current.model_fields.values():
            for inner in _model_types(field.annotation):
                walk(inner)

    walk(model)
    return seen


def _model_types(annotation: object) -> Iterable[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from _model_types(argument)


def _stricter(model: type[BaseModel], name: str) -> str:
    """The rule's declared stricter direction in words (none for a field that is no rule)."""
    from broker.fsla import stricter

    try:
        declared = stricter.declaration(model, name)
    except KeyError:
        return ""
    words = {
        stricter.HIGHER: "higher",
        stricter.LOWER: "lower",
        stricter.TRUE: "`true`",
        stricter.FALSE: "`false`",
        stricter.UNION: "more names",
        stricter.NESTED: "each of its fields",
    }[declared["stricter"]]
    if "order" in declared:
        words = "earlier in " + ", ".join(f"`{v}`" for v in declared["order"])
    if declared.get("empty") == "strictest":
        words += " (empty: the strictest)"
    return words


def _rules_table(model: type[BaseModel]) -> str:
    rows = [
        "| name | type | default | stricter | what it is |",
        "|---|---|---|---|---|",
    ]
    for name, field in model.model_fields.items():
        rows.append(
            f"| `{name}` | `{_cell(_type(field.annotation))}` | {_default(field)} | "
            f"{_stricter(model, name)} | {_cell(field.description or '')} |"
        )
    return "\n".join(rows)


def fsla_page() -> str:
    from broker.fsla.models import FSLARecord

    parts = [
        "# F-SLA record fields",
        "",
        "An F-SLA record is one YAML or JSON document per jurisdiction (the seeds are in the "
        "repository's `policies/` folder). This page is generated from the record's model, the "
        "one the broker validates every record with. Each rule declares which of two of its "
        "values is the stricter (the *stricter* column): when several rule sets apply to a "
        "transfer, the strictest value of each rule wins, and an agreement's terms may never "
        "be looser than the records'. Empty sets no rule, unless the column says otherwise.",
        "",
    ]
    for model in _models_below(FSLARecord):
        parts += [f"## `{model.__name__}`", "", (model.__doc__ or "").strip(), ""]
        if model is FSLARecord:
            parts += [_fields_table(model, lambda name: name), ""]
        else:
            parts += [_rules_table(model), ""]
    return "\n".join(parts)


# --- HTTP API --------------------------------------------------------------------------------


def _openapi() -> dict:
    from broker.config import Settings
    from broker.main import create_app

    # The app loads its signing keys when it is made: a throwaway folder, so that building the
    # site never writes a key into the checkout.
    with tempfile.TemporaryDirectory() as keys:
        settings = Settings(admin_token="x" * 16, signing_key_dir=keys, _env_file=None)
        return create_app(settings).openapi()


def http_api_page() -> str:
    document = _openapi()
    parts = [
        "# HTTP API",
        "",
        f"{document['info']['title']} {document['info']['version']}. A running broker serves "
        "this API's interactive documentation at `/docs` and its OpenAPI document at "
        "`/openapi.json`; [the same document](../openapi.json) is published with this site "
        "(`docs/openapi.json`, written by `scripts/export_openapi.py`), to generate clients in "
        "any language. Every error is an RFC 9457 `application/problem+json` document.",
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, dict]]] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            tag = (operation.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append((method.upper(), path, operation))
    for tag, operations in by_tag.items():
        parts += [f"## {tag}", ""]
        for method, path, operation in operations:
            parts += [f"### `{method} {path}`", "", f"**{operation.get('summary', '')}**", ""]
            if operation.get("description"):
                parts += [operation["description"], ""]
            parameters = operation.get("parameters", [])
            if parameters:
                parts += ["| parameter | in | required | what it is |", "|---|---|---|---|"]
                for p in parameters:
                    parts.append(
                        f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} "
                        f"| {_cell(p.get('description', ''))} |"
                    )
                parts.append("")
            body = operation.get("requestBody", {}).get("content", {})
            if body:
                parts += [f"Request body: {', '.join(f'`{t}`' for t in body)}.", ""]
                parts += _body_fields(document, body)
            answers = operation.get("responses", {})
            codes = ", ".join(
                f"{code} {_cell(a.get('description', ''))}" for code, a in answers.items()
            )
            parts += [f"Answers: {codes}.", ""]
    return "\n".join(parts)


def _body_fields(document: dict, body: dict) -> list[str]:
    """The fields of a request body, from its schema: a form's fields or a JSON object's keys."""
    schema = next(iter(body.values())).get("schema", {})
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    if name == "FSLARecord":
        return [
            "The body is an F-SLA record: its fields are listed in [F-SLA record fields](fsla.md).",
            "",
        ]
    schema = document["components"]["schemas"].get(name, {})
    properties = schema.get("properties", {})
    if not properties:
        return []
    required = set(schema.get("required", []))
    rows = ["| field | required | what it is |", "|---|---|---|"]
    for field, spec in properties.items():
        rows.append(
            f"| `{field}` | {'yes' if field in required else 'no'} | "
            f"{_cell(spec.get('description', ''))} |"
        )
    return [*rows, ""]


# --- command line ----------------------------------------------------------------------------


def cli_page() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help at the terminal's width
    from broker.cli.app import build_parser

    parser = build_parser()
    parts = [
        "# Command line",
        "",
        "`fedbroker COMMAND [options]`, generated from the command line's own parsers. Exit "
        "status: 0 done, 1 the command ran but did not pass, 2 a usage or input error (one "
        "line on stderr), 130 interrupted.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    commands = next(a for a in parser._actions if a.dest == "command")  # argparse keeps them here
    for name, command in commands.choices.items():
        parts += [
            f"## `fedbroker {name}`",
            "",
            "```text",
            command.format_help().rstrip(),
            "```",
            "",
        ]
    return "\n".join(parts)


PAGES: dict[str, Callable[[], str]] = {
    "reference/settings.md": settings_page,
    "reference/fsla.md": fsla_page,
    "reference/http-api.md": http_api_page,
    "reference/cli.md": cli_page,
}

"""Settings read from environment variables: one line that says what is wrong with one.

Both services are configured by pydantic-settings (the broker by ``BROKER_*`` variables, a
member cloud by ``MEMBER_*``). It fails in two ways: a value that does not validate
(``ValidationError``), and a list or mapping that is not JSON (``SettingsError``, which names
only the field). Either becomes one line naming the variable and the form it expects, for the
command line and the services' start-up.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping

from pydantic import BaseModel, ValidationError
from pydantic_settings import SettingsError

_FIELD_OF_SETTINGS_ERROR = re.compile(r'for field "([^"]+)"')
_LISTS = (list, set, frozenset, tuple)
# pydantic's error types for a value that is not the list or mapping its field needs
_NOT_A_STRUCTURE = frozenset(
    {"list_type", "set_type", "frozen_set_type", "tuple_type", "dict_type"}
)


def describe(error: ValidationError | SettingsError, prefix: str, model: type[BaseModel]) -> str:
    """``error`` in words: each bad or missing variable named with ``prefix``; "; " between."""
    if isinstance(error, SettingsError):
        return _not_json(error, prefix, model)
    parts = []
    for item in error.errors():
        field = "_".join(str(part) for part in item["loc"])
        message = str(item["msg"])
        if item["type"] in ("value_error", "assertion_error"):  # our validators' own words
            message = str((item.get("ctx") or {}).get("error", message))
        if not field:  # a check across several variables says which itself
            parts.append(message)
        elif item["type"] == "missing":
            parts.append(f"{prefix}{field.upper()} is not set")
        elif item["type"] in _NOT_A_STRUCTURE and field in model.model_fields:
            form = _json_form(model.model_fields[field].annotation)
            parts.append(f"{prefix}{field.upper()} must be {form}")
        else:
            parts.append(f"{prefix}{field.upper()}: {message}")
    return "; ".join(parts)


def _not_json(error: SettingsError, prefix: str, model: type[BaseModel]) -> str:
    found = _FIELD_OF_SETTINGS_ERROR.search(str(error))
    if not found or found.group(1) not in model.model_fields:
        return str(error)
    name = found.group(1)
    form = _json_form(model.model_fields[name].annotation)
    reason = f" ({error.__cause__})" if error.__cause__ else ""
    return f"{prefix}{name.upper()} must be {form}{reason}"


def _json_form(annotation: object) -> str:
    """What JSON a field of this type is written as, with an example."""
    for candidate in (annotation, *typing.get_args(annotation)):  # Optional[...] included
        origin = typing.get_origin(candidate) or candidate
        if isinstance(origin, type) and issubclass(origin, _LISTS):
            return 'a JSON list, for example ["first", "second"]'
        if isinstance(origin, type) and issubclass(origin, Mapping):
            return 'a JSON object, for example {"name": "value"}'
    return "JSON"

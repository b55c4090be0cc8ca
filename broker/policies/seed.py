"""The seed F-SLA records in ``policies/*.yaml``: read and validated, one file a jurisdiction."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from broker.fsla.models import FSLARecord
from broker.wire.problem_model import field_errors


class PolicyFileError(ValueError):
    """A seed file is unusable; the message names the file, the field and the reason."""


def describe(error: ValidationError) -> str:
    """The first error, worded as the API words it (no "Value error, " prefix)."""
    first = field_errors(error.errors(), drop=(), model=FSLARecord)[0]
    where = "(record)" if first["field"] == "body" else first["field"]
    return f"field '{where}': {first['reason']}"


def load_records(folder: Path) -> list[FSLARecord]:
    """Every record in ``folder``; the first invalid file raises :class:`PolicyFileError`."""
    if not folder.is_dir():
        raise PolicyFileError(f"{folder}: the policy folder does not exist")
    records: dict[str, tuple[Path, FSLARecord]] = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = f" at line {mark.line + 1}" if mark else ""
            reason = getattr(error, "problem", None) or "syntax error"
            raise PolicyFileError(f"{path}: not valid YAML{line}: {reason}") from None
        except UnicodeDecodeError:
            raise PolicyFileError(f"{path}: not UTF-8 text") from None
        if not isinstance(document, dict):
            raise PolicyFileError(f"{path}: must hold one F-SLA record (a mapping)")
        try:
            record = FSLARecord.model_validate(document)
        except ValidationError as error:
            raise PolicyFileError(f"{path}: {describe(error)}") from None
        if path.stem.upper() != record.jurisdiction:
            raise PolicyFileError(
                f"{path}: field 'jurisdiction': {record.jurisdiction!r} does "
                f"not match the file name (expected {path.stem.upper()!r})"
            )
        if record.jurisdiction in records:
            raise PolicyFileError(
                f"{path}: jurisdiction {record.jurisdiction} is already "
                f"defined in {records[record.jurisdiction][0]}"
            )
        records[record.jurisdiction] = (path, record)
    return [record for _, record in records.values()]

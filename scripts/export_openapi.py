"""Write the broker's OpenAPI document to docs/openapi.json, from which clients are generated.

The document is the one the broker serves at ``/openapi.json``, built from ``create_app`` with
settings that do not touch a database; a test fails when the committed file differs from it.
Run it after changing a route or a schema, then regenerate the Python client's models:

    python scripts/export_openapi.py
    python scripts/generate_client_models.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUTPUT = ROOT / "docs" / "openapi.json"


def document() -> dict:
    """The broker's OpenAPI document, as its default settings describe it."""
    from broker.config import Settings
    from broker.main import create_app

    settings = Settings(
        database_url="sqlite://",
        admin_token="export-openapi-document",
        apply_migrations=False,
        delivery_enabled=False,
        jobs_enabled=False,
        health_check_enabled=False,
    )
    return create_app(settings).openapi()


def rendered(spec: dict) -> str:
    return json.dumps(spec, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main() -> None:
    OUTPUT.write_text(rendered(document()), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

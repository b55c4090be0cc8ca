"""Write the broker's OpenAPI document to docs/openapi.json, from which clients are generated.

The document is the one the broker serves at ``/openapi.json``, built from ``create_app`` with
default settings (signing keys in a throwaway folder, so nothing is written into the checkout); a
test fails when the committed file differs from it, and the HTTP API page of the docs links it.
Run it after changing a route or a schema, then regenerate the Python client's models:

    python scripts/export_openapi.py
    python scripts/generate_client.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUTPUT = ROOT / "docs" / "openapi.json"


def document() -> dict:
    """The broker's OpenAPI document, as its default settings describe it."""
    from broker.config import Settings
    from broker.main import create_app

    # The app loads its signing keys when it is made: a throwaway folder for them.
    with tempfile.TemporaryDirectory() as keys:
        settings = Settings(admin_token="x" * 16, signing_key_dir=keys, _env_file=None)
        return create_app(settings).openapi()


def rendered(spec: dict) -> str:
    return json.dumps(spec, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main() -> None:
    OUTPUT.write_text(rendered(document()), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""The pure packages import no web, database or HTTP code (STYLE: layering rule 4)."""

import subprocess
import sys

import pytest

FORBIDDEN = ("fastapi", "starlette", "sqlalchemy", "httpx", "uvicorn", "alembic")


@pytest.mark.parametrize(
    "package",
    ["broker", "broker.metrics", "broker.datasets", "broker.fsla.evaluate", "broker.anonymize"],
)
def test_pure_packages_pull_in_no_web_or_database_code(package):
    code = f"import sys, {package}; print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""

"""broker.anonymize is pure: importing it pulls in no web, database or HTTP code."""

import subprocess
import sys

FORBIDDEN = (
    "fastapi",
    "starlette",
    "sqlalchemy",
    "httpx",
    "uvicorn",
    "alembic",
    "pycanon",
    "anjana",
)


def test_anonymize_imports_no_web_database_or_peer_library():
    code = (
        "import sys, broker.anonymize; "
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""

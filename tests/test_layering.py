"""Who may import whom, checked in fresh interpreters (STYLE: layering).

- The pure packages import no web, database or HTTP code, nor the peer libraries the tests and
  benchmarks compare against (STYLE: layering rule 4).
- ``broker.wire``, the wire contract, imports nothing else from ``broker``; ``member_cloud``
  imports nothing from ``broker`` but ``broker.wire``; ``demo`` may import both services, and
  neither imports it.
"""

import subprocess
import sys

import pytest

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
# Imports the named modules, and with --walk every module of their packages (the migrations
# run Alembic when imported: they are left out), then prints every module loaded.
IMPORT = """
import importlib, pkgutil, sys
walk = sys.argv[1] == "--walk"
for name in sys.argv[2:]:
    module = importlib.import_module(name)
    for found in pkgutil.walk_packages(getattr(module, "__path__", []) if walk else [], name + "."):
        if not found.name.startswith("broker.migrations"):
            importlib.import_module(found.name)
print("\\n".join(sorted(sys.modules)))
"""


def loaded_by(*names: str, walk: bool) -> set[str]:
    """The modules a fresh interpreter holds after importing ``names`` (and, with ``walk``,
    every module of those packages)."""
    flag = "--walk" if walk else "--only"
    result = subprocess.run(
        [sys.executable, "-c", IMPORT, flag, *names], capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


@pytest.mark.parametrize(
    "package",
    ["broker", "broker.metrics", "broker.datasets", "broker.fsla.evaluate", "broker.anonymize"],
)
def test_pure_packages_pull_in_no_web_or_database_code(package):
    loaded = loaded_by(package, walk=False)
    assert [m for m in FORBIDDEN if m in loaded] == []


def test_the_wire_imports_nothing_else_from_broker():
    loaded = loaded_by("broker.wire", walk=True)
    assert "broker.wire.signing" in loaded
    others = [m for m in loaded if within(m, "broker") and m != "broker"]
    assert [m for m in others if not within(m, "broker.wire")] == []


def test_the_member_cloud_imports_only_the_wire_from_broker():
    loaded = loaded_by("member_cloud", walk=True)
    assert "member_cloud.main" in loaded and "broker.wire.problems" in loaded
    others = [m for m in loaded if within(m, "broker") and m != "broker"]
    assert [m for m in others if not within(m, "broker.wire")] == []


def test_neither_service_imports_the_demo():
    loaded = loaded_by("broker", "member_cloud", walk=True)
    assert "broker.main" in loaded and "member_cloud.main" in loaded
    assert [m for m in loaded if within(m, "demo")] == []

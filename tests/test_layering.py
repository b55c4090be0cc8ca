"""Who may import whom, checked in fresh interpreters (STYLE: layering).

- The pure packages import no web, database or HTTP code, nor the peer libraries the tests and
  benchmarks compare against (STYLE: layering rule 4).
- An engine library is imported by its own engine only (DuckDB by the ``broker/engines/duckdb/``
  package, Dask by ``broker/engines/dask.py``); the engine protocol, the other engines, the
  metrics, the anonymization and the F-SLA code never do.
- A service (``broker/<domain>/service.py``) imports neither FastAPI nor ``broker.web.deps``: it
  takes a :class:`broker.callers.Caller`, never a request.
- No module of a domain imports another domain's service (but the audit log's): that work is
  in ``broker.flows``.
- ``broker.delivery`` imports nothing of ``broker.transfers``: an outbox row stands alone.
- The packages of ``broker`` (and its modules at the root) import one another without a circle:
  a layer imports only layers below it, so each can be read, tested and moved on its own.
- ``broker.wire``, the wire contract, imports nothing else from ``broker``; ``member_cloud``
  imports nothing from ``broker`` but ``broker.wire``; ``demo`` may import both services, and
  neither imports it.
- ``fedbroker.client``, the client member clouds use, imports httpx, pydantic and
  ``broker.wire`` only: no web framework, no database, neither service.
"""

import ast
import subprocess
import sys
from pathlib import Path

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
ENGINE_LIBRARIES = ("duckdb", "dask", "distributed", "polars", "pyspark", "ray")
# Where each engine library may be imported: its engine's module, or every module of its
# engine's package (a folder, ending in "/"). A library with no engine is imported nowhere.
ENGINE_HOMES = {
    "duckdb": "broker/engines/duckdb/",
    "dask": "broker/engines/dask.py",
    "distributed": "broker/engines/dask.py",
}
ROOT = Path(__file__).resolve().parents[1]
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


PURE = [
    "broker.engines.base",
    "broker.engines.pandas",
    "broker.engines.recoded",
    "broker.metrics",
    "broker.datasets",
    "broker.anonymize",
    "broker.fsla",
    "broker.columns",  # names, numbers, roles, missing values, precision: shared by every layer
    "broker.identifiers",
    "broker.wire.statuses",
    "broker.reports",
    "broker.catalog.jsonld",
    "broker.negotiations.states",
    "broker.privacy",
    "broker.members.health",  # the health rules, and what the catalog calls to show a provider's
    "broker.delivery.states",
    "broker.federation.overview",
    "broker.callers",  # who calls: a domain type that services take, with no web import
    "broker.transfers.facts",  # the stored documents: pydantic only
    "broker.catalog.summary",
    "broker.fsla.stored",  # a decision's stored rules and remedy
    "broker.transfers.release",  # an aggregate release's stored document
]


def imports_of(path: Path) -> list[str]:
    """The absolute module names ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return found


def test_broker_alone_pulls_in_nothing():
    loaded = loaded_by("broker", walk=False)
    assert [m for m in loaded if within(m, "broker") and m != "broker"] == []


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_pull_in_no_web_database_or_engine_library(package):
    loaded = loaded_by(package, walk=True)
    assert [m for m in (*FORBIDDEN, *ENGINE_LIBRARIES) if m in loaded] == []


def test_only_its_engine_imports_an_engine_library():
    importers = []
    for path in sorted((ROOT / "broker").rglob("*.py")) + sorted(
        (ROOT / "member_cloud").rglob("*.py")
    ):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for library in {n.split(".")[0] for n in names} & set(ENGINE_LIBRARIES):
                importers.append((path.relative_to(ROOT).as_posix(), library))
    assert importers, "no engine imports its library: the check reads nothing"
    misplaced = []
    for path, library in importers:
        home = ENGINE_HOMES.get(library)
        if home is None or not (path.startswith(home) if home.endswith("/") else path == home):
            misplaced.append((path, library))
    assert misplaced == []


def test_no_service_imports_the_web_layer():
    services = sorted((ROOT / "broker").rglob("service.py"))
    assert len(services) >= 8
    web = [
        (path.relative_to(ROOT).as_posix(), name)
        for path in services
        for name in imports_of(path)
        if name.split(".")[0] in ("fastapi", "starlette") or within(name, "broker.web")
    ]
    assert web == []


AUDIT = "broker.audit.service"  # the audit log: every use case writes to it, as to a database


def test_no_domain_imports_another_domains_service():
    """Work that spans domains lives in broker/flows.py (STYLE: one home per idea); a domain
    reads another through its repository or a read module (catalog/entries.py,
    negotiations/agreements.py), never through the service that changes it."""
    domains = {path.parent.name for path in (ROOT / "broker").glob("*/service.py")}
    found = set()
    for domain in sorted(domains):
        for path in sorted((ROOT / "broker" / domain).glob("*.py")):
            if path.name == "router.py":
                continue
            for name in imports_of(path):
                parts = name.split(".")
                service = parts[0] == "broker" and len(parts) >= 3 and parts[2] == "service"
                if service and parts[1] != domain and name != AUDIT:
                    found.add((path.relative_to(ROOT).as_posix(), name))
    assert sorted(found) == []


def layer_of(path: Path) -> str:
    """The layer a module of ``broker`` belongs to: its top-level package (``broker/engines/...``
    is ``engines``) or, at the root, its own name (``broker/flows.py`` is ``flows``). A resource's
    ``router.py`` is its web face: it belongs to ``web``, with the dependencies it uses."""
    parts = path.relative_to(ROOT / "broker").parts
    return "web" if parts[-1] == "router.py" else parts[0].removesuffix(".py")


def layer_imports() -> dict[tuple[str, str], list[str]]:
    """Each import of one layer by another, with where it is written: every import statement of
    every module (inside functions and ``if TYPE_CHECKING`` too, since a circle there is still
    one), the migrations left out (they import every model on purpose)."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted((ROOT / "broker").rglob("*.py")):
        if path.relative_to(ROOT / "broker").parts[0] == "migrations":
            continue
        layer = layer_of(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "broker":
                names = [f"broker.{alias.name}" for alias in node.names]  # from broker import x
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "broker" and len(parts) > 1 and parts[1] != layer:
                    where = f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
                    found.setdefault((layer, parts[1]), []).append(where)
    return found


def circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one layer (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in sorted(graph[node]):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_the_layers_import_one_another_without_a_circle():
    """A circle between packages means neither can be understood, tested or moved alone: the
    web layer (``web/`` and every ``router.py``) sits on the domains, the domains on ``intake/``,
    ``storage/``, the pure packages, ``columns/`` and ``wire/``; ``main.py`` and ``flows.py``
    sit on top."""
    imports = layer_imports()
    assert ("web", "transfers") in imports and ("transfers", "intake") in imports  # reads
    found = circles(set(imports))
    detail = {
        f"{a} -> {b}": imports[a, b][:3]
        for group in found
        for a, b in sorted(imports)
        if a in group and b in group
    }
    assert found == [], detail


def test_circles_are_found():
    """The finder itself, on a graph with two circles and a chain."""
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("e", "f")}
    assert circles(edges) == [["a", "b", "c"], ["d", "e"]]
    assert circles({("a", "b"), ("b", "c")}) == []


def test_delivery_imports_nothing_of_transfers():
    """The outbox row carries all a delivery needs (whom for, the headers, what leaves)."""
    loaded = loaded_by("broker.delivery", walk=True)
    assert "broker.delivery.worker" in loaded
    assert [m for m in loaded if within(m, "broker.transfers")] == []


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


def test_the_client_imports_only_httpx_pydantic_and_the_wire():
    loaded = loaded_by("fedbroker.client", walk=True)
    assert "fedbroker.client.clients" in loaded and "httpx" in loaded and "pydantic" in loaded
    others = [m for m in loaded if within(m, "broker") and m != "broker"]
    assert [m for m in others if not within(m, "broker.wire")] == []
    heavy = ("fastapi", "starlette", "sqlalchemy", "uvicorn", "pandas", "numpy", "member_cloud")
    assert [m for m in heavy if m in loaded] == []


def test_neither_service_imports_the_demo():
    loaded = loaded_by("broker", "member_cloud", walk=True)
    assert "broker.main" in loaded and "member_cloud.main" in loaded
    assert [m for m in loaded if within(m, "demo")] == []


def test_sender_text_is_read_as_numbers_in_one_place():
    """pandas' number parser crashes the process on some sender text (a segmentation fault, not
    an exception): every reading goes through broker.columns.numbers.numbers_of, which guards it."""
    callers = []
    for path in sorted((ROOT / "broker").rglob("*.py")) + sorted(
        (ROOT / "member_cloud").rglob("*.py")
    ):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "to_numeric":
                callers.append(path.relative_to(ROOT).as_posix())
    assert callers == ["broker/columns/numbers.py"]


def test_the_number_guard_holds_where_the_parser_would_crash():
    """Run in a child: were the guard gone, the crash would take the test runner down."""
    code = (
        "from broker.columns.numbers import numbers_of;"
        "print(numbers_of(['4e4920323432353234373736', '28', '1E+99999']).tolist())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[nan, 28.0, nan]"


def test_both_services_answer_errors_from_one_base():
    """The broker's and the member cloud's errors are one tree rooted in the wire: a class that
    carries a problem status is a ``ProblemError``, so one handler answers them all alike."""
    import broker.errors
    import member_cloud.errors
    from broker.wire.problem_model import ProblemError

    carriers = [
        value
        for module in (broker.errors, member_cloud.errors)
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Exception) and hasattr(value, "status")
    ]
    assert len(carriers) > 20
    assert all(issubclass(error, ProblemError) for error in carriers)
    assert member_cloud.errors.NotFound is broker.errors.NotFound


@pytest.mark.parametrize("package", ["broker.metrics", "broker.anonymize"])
def test_lazily_exported_names_are_not_their_modules_names(package):
    """A package that loads its names on first use must not export a name its submodules also
    have: once the submodule is imported, the package's attribute is that module, not the name
    (``from broker.anonymize import mondrian`` would give the module)."""
    import importlib
    import pkgutil

    module = importlib.import_module(package)
    submodules = {found.name for found in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_every_package_says_what_it_is_and_names_the_page_that_explains_it():
    """A newcomer opening a package finds its first paragraph and the manual's page for the
    rest; a page that moves or disappears fails here, not in a reader's hands."""
    for init in sorted((ROOT / "broker").glob("*/__init__.py")):
        if init.parent.name == "migrations":
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        pages = [
            word.strip("`.,()") for word in doc.split() if word.strip("`.,()").startswith("docs/")
        ]
        assert doc and pages, f"{init.parent.name}: no docstring naming its docs page"
        assert all((ROOT / page).is_file() for page in pages), (init.parent.name, pages)


def test_no_service_loads_the_web_framework():
    """A service raises problems and reads the database; FastAPI and Starlette are the web
    layer's (broker/web, the routers, broker.main). Checked on what importing every service
    loads, so an indirect import (through the errors, say) counts too."""
    services = sorted(
        "broker." + ".".join(path.relative_to(ROOT / "broker").with_suffix("").parts)
        for path in (ROOT / "broker").glob("*/service.py")
    )
    code = "import importlib, sys\n" + "".join(
        f"importlib.import_module({s!r})\n" for s in services
    )
    code += "print(' '.join(m for m in ('fastapi', 'starlette') if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert len(services) >= 8
    assert loaded == []

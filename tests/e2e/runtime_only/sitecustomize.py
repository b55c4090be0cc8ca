"""Put on PYTHONPATH, this makes the dev extras unimportable in a process and its children:
the demo test runs with it to show that ``make demo`` needs only the runtime dependencies."""

import sys
from importlib.abc import MetaPathFinder

DEV_ONLY = frozenset(
    {
        "dask",
        "distributed",
        "pytest",
        "hypothesis",
        "ruff",
        "pycanon",
        "anjana",
        "schemathesis",
        "playwright",
    }
)


class _NoDevExtras(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in DEV_ONLY:
            raise ModuleNotFoundError(f"{name} is a dev extra, absent after `make demo`")
        return None


sys.meta_path.insert(0, _NoDevExtras())

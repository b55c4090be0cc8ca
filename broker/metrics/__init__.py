"""Privacy measures on pandas frames: pure code with no web or database imports.

Its names load their modules on first use, so that a light importer (the command line's
help, the serving supervisor) does not pay for pandas.

Explained in ``docs/explanations/measures.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for readers and type checkers; loaded on first use
    from broker.metrics.anonymity import k_anonymity, sensitive_measure
    from broker.metrics.mmaq import mmaq_from_counts
    from broker.metrics.report import AnalysisReport, ReportOptions, analyze

__all__ = [
    "AnalysisReport",
    "ReportOptions",
    "analyze",
    "k_anonymity",
    "mmaq_from_counts",
    "sensitive_measure",
]

_HOMES = {
    "k_anonymity": "broker.metrics.anonymity",
    "sensitive_measure": "broker.metrics.anonymity",
    "mmaq_from_counts": "broker.metrics.mmaq",
    "AnalysisReport": "broker.metrics.report",
    "ReportOptions": "broker.metrics.report",
    "analyze": "broker.metrics.report",
}


def __getattr__(name: str) -> Any:
    """Import a name's module the first time the name is asked for (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)

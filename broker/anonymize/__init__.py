"""Anonymization: suppression, generalization, Mondrian, partition, information loss, planning.

Pure pandas/numpy code like :mod:`broker.metrics` (no web or database imports). Every function
returns new data and leaves its input untouched; results are frozen dataclasses.

Its names load their modules on first use, so that a light importer (the command line's
help) does not pay for pandas.

Explained in ``docs/explanations/anonymization.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for readers and type checkers; loaded on first use
    from broker.anonymize.generalization import (
        generalize_date,
        generalize_hierarchy,
        generalize_prefix,
        generalize_quantiles,
        generalize_range,
    )
    from broker.anonymize.limits import WHOLE_TABLE_ROWS
    from broker.anonymize.loss import InformationLoss, information_loss
    from broker.anonymize.mondrian import AnonymizationError, MondrianResult
    from broker.anonymize.partition import Link, PartitionResult
    from broker.anonymize.planner import plan_on_engine, plan_remedy
    from broker.anonymize.qid import QidDimension, QidLevel, qid_dimension
    from broker.anonymize.steps import Anonymized, Step, apply_steps
    from broker.anonymize.suppression import drop_columns, mask
    from broker.anonymize.target import Acceptance, Remedy, Target
    from broker.anonymize.verify import Check

__all__ = [
    "WHOLE_TABLE_ROWS",
    "Acceptance",
    "AnonymizationError",
    "Anonymized",
    "Check",
    "InformationLoss",
    "Link",
    "MondrianResult",
    "PartitionResult",
    "QidDimension",
    "QidLevel",
    "Remedy",
    "Step",
    "Target",
    "apply_steps",
    "drop_columns",
    "generalize_date",
    "generalize_hierarchy",
    "generalize_prefix",
    "generalize_quantiles",
    "generalize_range",
    "information_loss",
    "mask",
    "plan_on_engine",
    "plan_remedy",
    "qid_dimension",
]

_HOMES = {
    "WHOLE_TABLE_ROWS": "broker.anonymize.limits",
    "plan_on_engine": "broker.anonymize.planner",
    "generalize_date": "broker.anonymize.generalization",
    "generalize_hierarchy": "broker.anonymize.generalization",
    "generalize_prefix": "broker.anonymize.generalization",
    "generalize_quantiles": "broker.anonymize.generalization",
    "generalize_range": "broker.anonymize.generalization",
    "InformationLoss": "broker.anonymize.loss",
    "information_loss": "broker.anonymize.loss",
    "AnonymizationError": "broker.anonymize.mondrian",
    "MondrianResult": "broker.anonymize.mondrian",
    "Link": "broker.anonymize.partition",
    "PartitionResult": "broker.anonymize.partition",
    "plan_remedy": "broker.anonymize.planner",
    "QidDimension": "broker.anonymize.qid",
    "QidLevel": "broker.anonymize.qid",
    "qid_dimension": "broker.anonymize.qid",
    "Anonymized": "broker.anonymize.steps",
    "Step": "broker.anonymize.steps",
    "apply_steps": "broker.anonymize.steps",
    "drop_columns": "broker.anonymize.suppression",
    "mask": "broker.anonymize.suppression",
    "Acceptance": "broker.anonymize.target",
    "Remedy": "broker.anonymize.target",
    "Target": "broker.anonymize.target",
    "Check": "broker.anonymize.verify",
}


def __getattr__(name: str) -> Any:
    """Import a name's module the first time the name is asked for (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)

"""Anonymization: suppression, generalization, Mondrian, partition, information loss, planning.

Pure pandas/numpy code like :mod:`broker.metrics` (no web or database imports). Every function
returns new data and leaves its input untouched; results are frozen dataclasses.
"""

from broker.anonymize.counts import WHOLE_TABLE_ROWS, plan_on_engine
from broker.anonymize.generalization import (
    generalize_date,
    generalize_hierarchy,
    generalize_prefix,
    generalize_quantiles,
    generalize_range,
)
from broker.anonymize.loss import InformationLoss, information_loss
from broker.anonymize.mondrian import AnonymizationError, MondrianResult, mondrian
from broker.anonymize.partition import Link, PartitionResult, partition
from broker.anonymize.planner import plan_remedy
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
    "mondrian",
    "partition",
    "plan_on_engine",
    "plan_remedy",
    "qid_dimension",
]

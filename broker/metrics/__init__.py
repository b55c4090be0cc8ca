"""Privacy measures on pandas frames: pure code with no web or database imports."""

from broker.metrics.anonymity import k_anonymity, sensitive_measure
from broker.metrics.mmaq import mmaq, mmaq_from_counts
from broker.metrics.report import AnalysisReport, analyze

__all__ = [
    "AnalysisReport",
    "analyze",
    "k_anonymity",
    "mmaq",
    "mmaq_from_counts",
    "sensitive_measure",
]

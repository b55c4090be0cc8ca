"""The measurement report as API schemas: the stored report's own model
(:mod:`broker.metrics.stored`), so the API describes exactly what is written and read back."""

from broker.metrics.stored import Report

__all__ = ["Report"]

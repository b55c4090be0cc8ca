"""Datasets in and out: the canonical table the broker measures, and the bytes it delivers.

:mod:`broker.datasets.reading` turns CSV, JSON or Parquet bytes into a canonical table (one
reader module per format, with :mod:`~broker.datasets.limits` and
:mod:`~broker.datasets.column_names` for what any dataset may hold);
:mod:`broker.datasets.writing` serializes a table in the format it came in. What leaves the
broker is always written by it from the table it measured, never the bytes it received.

Explained in ``docs/explanations/border.md``.
"""

from broker.datasets.dataset import CSV, FORMATS, JSON, MEDIA_TYPES, PARQUET, Dataset, DatasetError
from broker.datasets.limits import DatasetTooLarge, ReadLimits
from broker.datasets.reading import detect_format, read_dataset, read_path
from broker.datasets.writing import write_dataset

__all__ = [
    "CSV",
    "FORMATS",
    "JSON",
    "MEDIA_TYPES",
    "PARQUET",
    "Dataset",
    "DatasetError",
    "DatasetTooLarge",
    "ReadLimits",
    "detect_format",
    "read_dataset",
    "read_path",
    "write_dataset",
]

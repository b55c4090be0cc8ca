"""Datasets in and out: the canonical table the broker measures, and the bytes it delivers.

:mod:`broker.datasets.reading` turns CSV, JSON or Parquet bytes into a canonical table;
:mod:`broker.datasets.writing` serializes a table in the format it came in. What leaves the
broker is always written by it from the table it measured, never the bytes it received.
"""

from broker.datasets.reading import (
    CSV,
    FORMATS,
    JSON,
    MEDIA_TYPES,
    PARQUET,
    Dataset,
    DatasetError,
    DatasetTooLarge,
    ReadLimits,
    detect_format,
    read_dataset,
    read_path,
)
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

"""The canonical table every reader returns and the writer serializes, and its three formats."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

CSV, JSON, PARQUET = "csv", "json", "parquet"
FORMATS = (CSV, JSON, PARQUET)
MEDIA_TYPES = {
    CSV: "text/csv",
    JSON: "application/json",
    PARQUET: "application/vnd.apache.parquet",
}


class DatasetError(ValueError):
    """The dataset cannot be read; the message is one line meant for the person who sent it."""


@dataclass(frozen=True, eq=False)
class Dataset:
    """A canonical table and how to write it again in the format it came in."""

    frame: pd.DataFrame
    format: str
    delimiter: str = ","
    schema: pa.Schema | None = None  # Parquet: the column types, without any metadata
    notes: tuple[str, ...] = field(default=())

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]

"""An uploaded dataset, as the routes that take one (transfers, analyze) receive and check it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from broker.datasets import DatasetError, read_dataset
from broker.errors import InvalidDataset, UnknownColumn


@dataclass(frozen=True)
class Upload:
    data: bytes
    filename: str | None
    content_type: str | None


def parse_columns(text: str | None) -> tuple[str, ...]:
    """``"a, b"`` -> ``("a", "b")``; blanks are dropped."""
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def read_upload(upload: Upload) -> pd.DataFrame:
    try:
        return read_dataset(upload.data, upload.filename)
    except DatasetError as error:
        raise InvalidDataset(str(error)) from None


def check_columns(frame: pd.DataFrame, quasi_identifiers, sensitive) -> None:
    for role, names in (
        ("Quasi-identifier", quasi_identifiers),
        ("Sensitive attribute", sensitive),
    ):
        for name in names:
            if name not in frame.columns:
                raise UnknownColumn(f"{role} {name!r} is not a column of the uploaded dataset")
    both = sorted(set(quasi_identifiers) & set(sensitive))
    if both:
        raise UnknownColumn(f"Column {both[0]!r} is declared both quasi-identifier and sensitive")

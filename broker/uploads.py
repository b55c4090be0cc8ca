"""An uploaded dataset, as the routes that take one (transfers, analyze) receive and check it."""

from __future__ import annotations

from dataclasses import dataclass

from broker.config import Settings
from broker.datasets import Dataset, DatasetError, DatasetTooLarge, ReadLimits, read_dataset
from broker.errors import InvalidDataset, PayloadTooLarge, UnknownColumn
from broker.roles import RoleError, Roles


@dataclass(frozen=True)
class Upload:
    data: bytes
    filename: str | None
    content_type: str | None


def read_limits(settings: Settings) -> ReadLimits:
    return ReadLimits(
        max_columns=settings.max_columns,
        max_cells=settings.max_cells,
        max_decoded_bytes=settings.max_decoded_bytes,
        max_row_groups=settings.max_row_groups,
        max_cell_chars=settings.max_cell_chars,
    )


def read_upload(upload: Upload, settings: Settings) -> Dataset:
    try:
        return read_dataset(upload.data, upload.filename, limits=read_limits(settings))
    except DatasetTooLarge as error:
        raise PayloadTooLarge(str(error)) from None
    except DatasetError as error:
        raise InvalidDataset(str(error)) from None


def declare_roles(
    dataset: Dataset,
    quasi_identifiers: tuple[str, ...],
    sensitive: tuple[str, ...],
    person_key: str | None = None,
) -> Roles:
    try:
        return Roles.declare(list(dataset.frame.columns), quasi_identifiers, sensitive, person_key)
    except RoleError as error:
        raise UnknownColumn(str(error)) from None

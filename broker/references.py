"""Transfers by reference: a dataset too large for any one machine stays where it lies.

The member names a location its cluster's storage holds (``s3://bucket/registry/*.parquet``,
a shared folder); the broker has its Dask cluster (``BROKER_DASK_SCHEDULER``) count the data
there, decides with the same code as for an upload, and, when approved, has the cluster write
the table that may leave (anonymized where needed, rows shuffled) as Parquet under
``BROKER_REFERENCE_OUTPUT``. The destination receives a signed reference document: where the
files are, their sizes and SHA-256 digests.

A member may name only locations under the prefixes an administrator granted it
(``BROKER_REFERENCE_ROOTS``): otherwise it could have the broker read another member's data and
send it to itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import PurePosixPath

from broker.config import Settings
from broker.datasets import DatasetError
from broker.engines.base import Engine
from broker.errors import Forbidden, InvalidDataset, Unprocessable
from broker.tables import Table, Written, declare_roles
from broker.wire.canonical import sha256_of

REFERENCE = "reference"  # the delivered document's format
MEDIA_TYPE = "application/vnd.fedbroker.reference+json"
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


@dataclass(frozen=True)
class Reference:
    """A dataset named by its location, and the fingerprint of its files' listing."""

    location: str
    data_format: str
    sha256: str  # of the listing (names, sizes, version stamps): the data is not read to name it
    size: int


def resolve(location: str, source_id: str, settings: Settings) -> Reference:
    """Check that the source may name ``location`` and that files are there; its listing."""
    if settings.dask_scheduler is None or settings.reference_output is None:
        raise Unprocessable(
            "This broker takes no transfers by reference: its operator has set no Dask cluster "
            "(BROKER_DASK_SCHEDULER) and output location (BROKER_REFERENCE_OUTPUT); upload the "
            "file instead"
        )
    location = location.strip()
    roots = [root.rstrip("/") + "/" for root in settings.reference_roots.get(source_id, [])]
    refusal = Forbidden(
        f"Member {source_id!r} may name locations under its granted prefixes only "
        f"({', '.join(roots) or 'none'}), not {location!r}"
    )
    if ".." in PurePosixPath(location).parts or not any(map(location.startswith, roots)):
        raise refusal
    suffix = PurePosixPath(location.rstrip("/")).suffix.lower()
    if suffix not in _FORMATS:
        raise Unprocessable(
            f"Cannot tell the format of {location!r}: name .parquet or .csv files (a glob such "
            "as .../*.parquet for several)"
        )
    from broker.engines.dask import listing

    try:
        files = listing(location)
    except (OSError, ValueError) as error:
        raise InvalidDataset(f"Cannot list {location!r}: {error}") from None
    if not files:
        raise InvalidDataset(f"No file at {location!r}")
    local = "://" not in location or location.startswith("file://")
    if local and not all(_inside(f["path"], roots) for f in files):
        raise refusal  # a link under the prefix that leads out of it
    return Reference(location, _FORMATS[suffix], sha256_of(files), sum(f["size"] for f in files))


def _inside(path: str, roots: list[str]) -> bool:
    """Whether a local file, its links followed, lies under one of the roots (theirs too)."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(root) + os.sep) for root in roots)


def open_reference(
    reference: Reference,
    quasi_identifiers: tuple[str, ...],
    sensitive: tuple[str, ...],
    person_key: str | None,
) -> Table:
    from broker.engines.dask import open_location

    try:
        engine = open_location(reference.location, reference.data_format)
    except (OSError, ValueError, DatasetError) as error:
        raise InvalidDataset(f"Cannot read {reference.location!r}: {error}") from None
    columns = engine.columns
    roles = declare_roles(columns, quasi_identifiers, sensitive, person_key)
    if roles.person_key is not None:
        engine = open_location(reference.location, reference.data_format, roles.person_key)
    return ReferenceTable(engine, roles, REFERENCE, len(columns))


class ReferenceTable(Table):
    """A table that stays on the cluster's storage: what leaves is written there, and the
    delivery is a document saying where."""

    @property
    def media_type(self) -> str:
        return MEDIA_TYPE

    def write(self, engine: Engine, name: str, settings: Settings) -> Written:
        from broker.engines.dask import write

        location = f"{settings.reference_output.rstrip('/')}/{name.removesuffix('.json')}"
        files = write(engine, location)
        document = {"location": location, "format": "parquet", "rows": engine.rows}
        return Written.of_bytes(json.dumps(document | {"files": files}, indent=2).encode())

"""A transfer's dataset facts as one document: written, served and read back by this model.

Pure (pydantic only). The decision of each kind (:mod:`broker.transfers.microdata`,
:mod:`broker.transfers.aggregate`) writes ``Transfer.dataset`` as :meth:`DatasetFacts.stored`;
the API serves it (``TransferRead.dataset``, :class:`broker.transfers.schemas.DatasetRead`, the
same fields); the delivery's headers and the destination's view read it with
:meth:`DatasetFacts.of`.

Rows stored by older brokers lack what was added since: :meth:`DatasetFacts._older_rows` gives
them their defaults, in one place. The first transfers (2026-11-21) stored ``sha256``,
``size_bytes``, ``rows``, ``columns``, ``filename`` and ``format``; since then came
``anonymized`` (False), ``notes`` ([]), the ``delivered_*`` figures (None: nothing written by
the broker), ``location`` (None: uploaded, not by reference) and ``preview`` (None).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, model_validator


class DryRunPreview(BaseModel):
    """What a dry run's transfer would deliver, fetchable for a while by whoever ran it."""

    url: str = Field(
        description="GET it (same credentials) for the data",
        examples=["/v1/transfers/dry-runs/0b7c.../data"],
    )
    expires_at: datetime = Field(description="Until when (BROKER_DRY_RUN_RETENTION_SECONDS)")
    filename: str
    media_type: str = Field(description="The input's format, as a delivery is written")
    sha256: str
    size_bytes: int
    rows: int
    columns: int
    what: str = Field(
        description="Which table this is: the data as delivered, the anonymized data "
        "(anonymize=auto), or the verified remedy's result (what anonymize=auto would deliver)"
    )
    note: str = Field(description="Rows are shuffled on purpose, as in every delivery")


class DatasetFacts(BaseModel):
    """What a transfer stores of its data (``Transfer.dataset``): written by the decision of
    its kind, served as ``TransferRead.dataset``, read by the delivery's headers and the
    destination's view."""

    sha256: str = Field(
        description="SHA-256 of the data as uploaded (by reference: of the files it named, "
        "as pinned at the request: paths, sizes, inodes and times)"
    )
    size_bytes: int
    rows: int
    columns: int
    format: str = Field(
        description="csv, json or parquet: the format the data is delivered in; reference: "
        "a document naming Parquet files on the federation's storage"
    )
    filename: str | None = Field(description="The name it was uploaded with (never delivered)")
    location: str | None = Field(None, description="Where the data lies (by reference)")
    notes: list[str] = Field(
        default_factory=list,
        description="What reading the data changed (a JSON column of mixed types becomes text)",
    )
    anonymized: bool = Field(
        False,
        description="True when the broker delivers an anonymized version instead of the upload",
    )
    delivered_sha256: str | None = Field(
        None,
        description="SHA-256 of the bytes delivered: the broker writes them from the table it "
        "measured (rows shuffled, person key removed), never forwards the upload",
    )
    delivered_filename: str | None = None
    delivered_rows: int | None = None
    delivered_columns: int | None = None
    preview: DryRunPreview | None = Field(
        None,
        description="Dry runs only: where to fetch what the transfer would deliver (None when "
        "nothing would leave)",
    )

    @model_validator(mode="before")
    @classmethod
    def _older_rows(cls, data: Any) -> Any:
        """The defaults of the fields a row stored by an older broker lacks (listed in the
        module docstring)."""
        if not isinstance(data, dict):
            return data
        return {
            "location": None,
            "notes": [],
            "anonymized": False,
            "delivered_sha256": None,
            "delivered_filename": None,
            "delivered_rows": None,
            "delivered_columns": None,
            "preview": None,
            **data,
        }

    @classmethod
    def of(cls, stored: Any) -> DatasetFacts:
        """The facts of a stored ``Transfer.dataset``."""
        return cls.model_validate(stored)

    def stored(self) -> dict[str, Any]:
        """What ``Transfer.dataset`` holds: this model's JSON."""
        return self.model_dump(mode="json")

"""A catalogued version's measurement summary as one document: written, served and read back
by this model.

Pure (pydantic only). The catalog's measurement (:func:`broker.catalog.service.measure`) writes
``CatalogVersion.summary`` as :meth:`CatalogSummary.stored`; the API serves it
(``CatalogEntryRead.summary``); offers read it (:func:`broker.catalog.entries.summary_of`).

Summaries stored by older brokers lack what was added since: :meth:`CatalogSummary._older_rows`
gives them their defaults, in one place. The first ones (2026-11-26) lacked ``dropped_at_k``
(None: the broker did not record what a remedy would drop, so an offer cannot say).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator


class CatalogSummary(BaseModel):
    """What the catalog keeps of a measurement of the provider's file: figures, never values."""

    rows: int
    quasi_identifiers: list[str] = Field(description="The quasi-identifiers measured")
    sensitive: list[str] = Field(description="The sensitive columns measured")
    k: int | None = Field(
        description="k on the quasi-identifiers, in people (null: no quasi-identifier)"
    )
    max_prosecutor_risk: float | None = Field(
        description="The highest prosecutor risk, 1 / the smallest class in rows (null: no "
        "quasi-identifier)"
    )
    l: int | None = Field(
        description="The fewest distinct sensitive values in a class, over the sensitive "
        "columns (null: none)"
    )
    t: float | None = Field(
        description="The largest t-closeness over the sensitive columns (null: none)"
    )
    identifiers: list[str] = Field(description="The columns that identify")
    utility_at_k: dict[str, float] = Field(
        description="k -> the share of information (percent, non-uniform entropy) a "
        "generalization to k kept (a table in memory, up to a size)"
    )
    dropped_at_k: dict[str, list[str]] | None = Field(
        description="k -> the columns a remedy asking k drops as identifiers: what an offer "
        "keeps home (null: measured before the broker recorded them)"
    )

    @model_validator(mode="before")
    @classmethod
    def _older_rows(cls, data: Any) -> Any:
        """The defaults of the fields a summary stored by an older broker lacks (listed in the
        module docstring)."""
        if not isinstance(data, dict):
            return data
        return {"dropped_at_k": None, **data}

    def stored(self) -> dict[str, Any]:
        """What ``CatalogVersion.summary`` holds: this model's JSON."""
        return self.model_dump(mode="json")

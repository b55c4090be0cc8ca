"""The catalog's API shapes: a dataset's description as its provider writes it, and the entry as
the broker keeps it. The catalog itself is answered as JSON-LD (:mod:`broker.catalog.jsonld`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from broker.catalog.summary import CatalogSummary
from broker.columns.names import attribute_key
from broker.wire.statuses import ColumnRole

MAX_CATALOG_COLUMNS = 1_000

EXAMPLE_DESCRIPTION: dict[str, Any] = {
    "title": "Dakar hospital admissions 2025",
    "description": "One row per admission: age band, sex, region and diagnosis.",
    "keywords": ["health", "admissions", "Senegal"],
    "columns": [
        {"name": "Age", "role": "quasi_identifier", "description": "Age in years"},
        {"name": "Gender", "role": "quasi_identifier"},
        {"name": "Disease", "role": "sensitive", "description": "Diagnosis at discharge"},
    ],
    "rows": 200,
    "format": "csv",
    "purposes": ["research", "public_health"],
}


class ColumnDescription(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, examples=["Age"])
    role: ColumnRole = Field(
        ColumnRole.OTHER,
        description="`quasi_identifier` (an outsider may know it), `sensitive` (judged by l "
        "and t), `person_key` (names the person of each row: measured, never delivered), or "
        "`other`",
    )
    description: str = Field("", max_length=1_000, examples=["Age in years"])


class DatasetDescription(BaseModel):
    """What a provider says of a dataset it holds. The broker adds the provider, its
    jurisdiction and, when it measured the data, its summary."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [EXAMPLE_DESCRIPTION]})

    title: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=5_000)
    keywords: list[str] = Field(default_factory=list, max_length=50)
    columns: list[ColumnDescription] = Field(min_length=1, max_length=MAX_CATALOG_COLUMNS)
    rows: int | None = Field(None, ge=0, description="How many rows it holds, as the provider says")
    format: Literal["csv", "json", "parquet"] = Field(
        "csv", description="The format a transfer of it is sent in"
    )
    purposes: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="The purposes it may serve; empty: every purpose the F-SLA records allow",
    )

    @field_validator("keywords", "purposes")
    @classmethod
    def _no_blank_words(cls, words: list[str]) -> list[str]:
        cleaned = [word.strip() for word in words]
        if any(not word or len(word) > 200 for word in cleaned):
            raise ValueError("each entry must be 1 to 200 characters, not blank")
        return cleaned

    @model_validator(mode="after")
    def _columns_are_distinct(self) -> DatasetDescription:
        seen: dict[str, str] = {}
        for column in self.columns:
            key = attribute_key(column.name)
            if key in seen:
                raise ValueError(
                    f"columns {seen[key]!r} and {column.name!r} have the same name (names "
                    "compare without regard to case, look-alike letters or invisible characters)"
                )
            seen[key] = column.name
        keys = [c.name for c in self.columns if c.role == ColumnRole.PERSON_KEY]
        if len(keys) > 1:
            raise ValueError(f"at most one column can be the person key, not {keys}")
        return self

    def roles(self, role: ColumnRole) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.role == role)


class CatalogEntryRead(BaseModel):
    """A catalogued dataset as its provider (or an administrator) sees it."""

    id: str = Field(examples=["3f2b9c1e-8a4d-4f6b-9e1a-2c7d5b8e9f10"])
    provider: str = Field(examples=["sn-hospital"])
    provider_health: str = Field(
        "unknown",
        description="The provider's health as the broker's last checks saw it (`up`, `down`, "
        "`unknown`)",
    )
    jurisdiction: str = Field(examples=["SN"])
    version: int = Field(description="Starts at 1; every revision adds one", examples=[1])
    description: DatasetDescription
    summary: CatalogSummary | None = Field(
        None,
        description="The broker's measurement of the file the provider sent for this version "
        "(rows, the quasi-identifiers it measured, k, l, t, the columns that identify, the "
        "utility a generalization to k kept); null until measured",
    )
    measured_at: datetime | None = None
    withdrawn: bool = False
    created_at: datetime
    updated_at: datetime

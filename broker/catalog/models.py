"""Catalogued datasets: what a member publishes about a dataset it holds, never the data.

A dataset keeps every version of its description (:class:`CatalogVersion`); the dataset row
holds the current version and, copied from it, what the catalog is searched by (delimited,
case-folded text, so that the filters are one indexed query on SQLite and PostgreSQL alike).
Withdrawn datasets stay, with their versions, out of the catalog.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from broker.storage.db import Base, UTCDateTime


class CatalogDataset(Base):
    __tablename__ = "catalog_datasets"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("members.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)  # the current one
    # Search fields of the current version: "\n"-delimited and case-folded ("\nresearch\n").
    title: Mapped[str] = mapped_column(String(200))
    search_text: Mapped[str] = mapped_column(Text)  # title, description and keywords
    search_columns: Mapped[str] = mapped_column(Text)
    search_purposes: Mapped[str] = mapped_column(Text)
    withdrawn_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class CatalogVersion(Base):
    __tablename__ = "catalog_versions"

    dataset_id: Mapped[str] = mapped_column(ForeignKey("catalog_datasets.id"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    description: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The broker's measurement of the file the provider sent for it (never the file itself).
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    measured_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    measured_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

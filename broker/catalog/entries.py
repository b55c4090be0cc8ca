"""Reading the catalog: a dataset at a version with its provider (:class:`Entry`), as the
catalog's routes show it and as a negotiation about it reads it (read only: publishing, revising
and withdrawing are :mod:`broker.catalog.service`'s)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from broker.callers import Caller
from broker.catalog import repository
from broker.catalog.models import CatalogDataset, CatalogVersion
from broker.catalog.schemas import DatasetDescription
from broker.catalog.summary import CatalogSummary
from broker.errors import NotFound
from broker.fsla import offers as offers_
from broker.fsla.models import FSLARecord
from broker.members import repository as members_repository
from broker.members.health import health_read
from broker.members.models import Member
from broker.wire.statuses import HealthState


@dataclass(frozen=True)
class Entry:
    """A catalogued dataset at one version, with its provider."""

    dataset: CatalogDataset
    version: CatalogVersion
    provider: Member
    provider_health: str = HealthState.UNKNOWN  # as the broker's last checks saw it

    def as_dict(self) -> dict[str, Any]:
        """What :mod:`broker.catalog.jsonld` and the read schema take."""
        return {
            "id": self.dataset.id,
            "provider": self.provider.id,
            "provider_health": self.provider_health,
            "jurisdiction": self.provider.jurisdiction,
            "version": self.version.version,
            "description": self.version.description,
            "summary": None
            if self.version.summary is None
            else CatalogSummary.model_validate(self.version.summary).stored(),
            "measured_at": self.version.measured_at,
            "withdrawn": self.dataset.withdrawn_at is not None,
            "created_at": self.dataset.created_at,
            "updated_at": self.dataset.updated_at,
        }

    def described(self) -> DatasetDescription:
        """The provider's description of this version, as the model reads it back."""
        return DatasetDescription.model_validate(self.version.description)

    def listing(self) -> offers_.Listing:
        description = self.described()
        return offers_.Listing(
            provider_id=self.provider.id,
            provider_jurisdiction=self.provider.jurisdiction,
            columns=tuple((c.name, c.role) for c in description.columns),
            purposes=tuple(description.purposes),
            summary=summary_of(self.version.summary),
        )


def summary_of(stored: dict[str, Any] | None) -> offers_.Summary | None:
    """The summary a version stored (:class:`~broker.catalog.summary.CatalogSummary`), as an
    offer reads it."""
    if stored is None:
        return None
    summary = CatalogSummary.model_validate(stored)
    dropped = summary.dropped_at_k
    return offers_.Summary(
        rows=summary.rows,
        k=summary.k,
        l=summary.l,
        t=summary.t,
        identifiers=tuple(summary.identifiers),
        utility_at_k={int(k): v for k, v in summary.utility_at_k.items()},
        dropped_at_k=None if dropped is None else {int(k): tuple(v) for k, v in dropped.items()},
    )


def entry(session: Session, caller: Caller, dataset_id: str, version: int | None = None) -> Entry:
    """A dataset at its current version (or ``version``). A withdrawn dataset, or one of a
    suspended provider, is seen only by its provider and administrators."""
    dataset = repository.get(session, dataset_id)
    if dataset is None:
        raise NotFound(f"No dataset {dataset_id!r} in the catalog")
    provider = session.get(Member, dataset.provider_id)
    hidden = dataset.withdrawn_at is not None or provider.status != "active"
    if hidden and not (caller.is_admin or caller.member_id == dataset.provider_id):
        raise NotFound(f"No dataset {dataset_id!r} in the catalog")
    number = dataset.version if version is None else version
    row = repository.version(session, dataset.id, number)
    if row is None:
        raise NotFound(
            f"Dataset {dataset_id} has no version {number} (its latest is {dataset.version})"
        )
    return with_health(session, [Entry(dataset, row, provider)])[0]


def entry_at(session: Session, dataset_id: str, version: int) -> Entry:
    """A dataset at ``version``, whatever its state (what a negotiation or an agreement about
    it was made on)."""
    dataset = repository.get(session, dataset_id)
    row = repository.version(session, dataset_id, version)
    if dataset is None or row is None:
        raise NotFound(f"No version {version} of dataset {dataset_id!r}")
    return Entry(dataset, row, session.get(Member, dataset.provider_id))


def with_health(session: Session, entries: list[Entry]) -> list[Entry]:
    """The entries with their providers' health, as the broker's checks last saw it."""
    found = members_repository.healths(session, [e.provider.id for e in entries])
    return [
        dataclasses.replace(
            e, provider_health=health_read(found.get(e.provider.id), admin=False).state
        )
        for e in entries
    ]


def party_map(session: Session, member_ids: list[str]) -> dict[str, offers_.Party]:
    """Each member as an offer's party: its jurisdiction's current record and its status."""
    found = {}
    for row in members_repository.parties(session, list(dict.fromkeys(member_ids))):
        record = None if row.document is None else FSLARecord.model_validate(row.document)
        found[row.id] = offers_.Party(row.id, row.jurisdiction, record, row.status, row.version)
    return found

"""Reads and writes of the catalog: datasets, their versions, and the searches over them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from broker.catalog.models import CatalogDataset, CatalogVersion
from broker.members.models import Member
from broker.wire.statuses import MemberStatus


def get(session: Session, dataset_id: str) -> CatalogDataset | None:
    return session.get(CatalogDataset, dataset_id)


def version(session: Session, dataset_id: str, number: int) -> CatalogVersion | None:
    return session.get(CatalogVersion, (dataset_id, number))


def versions(session: Session, dataset_id: str) -> list[CatalogVersion]:
    query = select(CatalogVersion).where(CatalogVersion.dataset_id == dataset_id)
    return list(session.scalars(query.order_by(CatalogVersion.version)))


def add(session: Session, dataset: CatalogDataset, first: CatalogVersion) -> None:
    session.add(dataset)
    session.flush()
    session.add(first)
    session.flush()


def add_version(session: Session, row: CatalogVersion) -> None:
    session.add(row)
    session.flush()


def listed(
    session: Session,
    *,
    jurisdiction: str | None,
    purpose: str | None,
    column: str | None,
    words: Sequence[str],
    provider: str | None,
    offset: int,
    limit: int,
) -> tuple[list[tuple[CatalogDataset, CatalogVersion, Member]], int]:
    """The current version of every dataset in the catalog (not withdrawn, its provider active)
    that matches the filters, newest change first, one page, and how many match in all. The
    search fields are delimited and case-folded (``"\\nresearch\\n"``), so each filter is a
    substring match that cannot cross a word's edge."""
    query = (
        select(CatalogDataset, CatalogVersion, Member)
        .join(
            CatalogVersion,
            and_(
                CatalogVersion.dataset_id == CatalogDataset.id,
                CatalogVersion.version == CatalogDataset.version,
            ),
        )
        .join(Member, Member.id == CatalogDataset.provider_id)
        .where(CatalogDataset.withdrawn_at.is_(None), Member.status == MemberStatus.ACTIVE)
    )
    if jurisdiction is not None:
        query = query.where(Member.jurisdiction == jurisdiction)
    if provider is not None:
        query = query.where(CatalogDataset.provider_id == provider)
    if purpose is not None:
        query = query.where(
            CatalogDataset.search_purposes.contains(_delimited(purpose), autoescape=True)
        )
    if column is not None:
        query = query.where(
            CatalogDataset.search_columns.contains(_delimited(column), autoescape=True)
        )
    for word in words:
        query = query.where(CatalogDataset.search_text.contains(word.casefold(), autoescape=True))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = session.execute(
        query.order_by(CatalogDataset.updated_at.desc(), CatalogDataset.id)
        .offset(offset)
        .limit(limit)
    )
    return [tuple(row) for row in rows], int(total or 0)


def _has(field, text: str):
    """``field`` holds ``text`` (its % and _ are taken literally)."""
    return field.contains(text, autoescape=True)


def _delimited(word: str) -> str:
    return f"\n{word.strip().casefold()}\n"

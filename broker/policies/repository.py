from sqlalchemy import func, select
from sqlalchemy.orm import Session

from broker.policies.models import PolicyVersion


def latest(session: Session, jurisdiction: str) -> PolicyVersion | None:
    query = (
        select(PolicyVersion)
        .where(PolicyVersion.jurisdiction == jurisdiction)
        .order_by(PolicyVersion.version.desc())
        .limit(1)
    )
    return session.scalars(query).first()


def latest_of_each(session: Session) -> list[PolicyVersion]:
    newest = (
        select(PolicyVersion.jurisdiction, func.max(PolicyVersion.version).label("v"))
        .group_by(PolicyVersion.jurisdiction)
        .subquery()
    )
    query = (
        select(PolicyVersion)
        .join(
            newest,
            (PolicyVersion.jurisdiction == newest.c.jurisdiction)
            & (PolicyVersion.version == newest.c.v),
        )
        .order_by(PolicyVersion.jurisdiction)
    )
    return list(session.scalars(query))


def versions(session: Session, jurisdiction: str, after: int, limit: int) -> list[PolicyVersion]:
    """Up to ``limit`` versions numbered above ``after``, oldest first."""
    query = (
        select(PolicyVersion)
        .where(PolicyVersion.jurisdiction == jurisdiction, PolicyVersion.version > after)
        .order_by(PolicyVersion.version)
        .limit(limit)
    )
    return list(session.scalars(query))


def version(session: Session, jurisdiction: str, number: int) -> PolicyVersion | None:
    query = select(PolicyVersion).where(
        PolicyVersion.jurisdiction == jurisdiction, PolicyVersion.version == number
    )
    return session.scalars(query).first()


def add(session: Session, row: PolicyVersion) -> None:
    session.add(row)
    session.flush()

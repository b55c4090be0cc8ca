"""F-SLA records: read, version on every change, check drafts, load the seed files."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.canonical import sha256_of
from broker.errors import Conflict, InvalidPolicy, NotFound, VersionMismatch
from broker.fsla.models import FSLARecord
from broker.policies import repository
from broker.policies.models import PolicyVersion


def current(session: Session, jurisdiction: str) -> PolicyVersion:
    row = repository.latest(session, jurisdiction.upper())
    if row is None:
        raise NotFound(f"No F-SLA record for jurisdiction {jurisdiction!r}")
    return row


def record_of(row: PolicyVersion) -> FSLARecord:
    return FSLARecord.model_validate(row.document)


def list_current(session: Session) -> list[PolicyVersion]:
    return repository.latest_of_each(session)


def versions(session: Session, jurisdiction: str) -> list[PolicyVersion]:
    rows = repository.versions(session, jurisdiction.upper())
    if not rows:
        raise NotFound(f"No F-SLA record for jurisdiction {jurisdiction!r}")
    return rows


def version(session: Session, jurisdiction: str, number: int) -> PolicyVersion:
    row = repository.version(session, jurisdiction.upper(), number)
    if row is None:
        current(session, jurisdiction)  # 404 names the jurisdiction when it is unknown
        raise NotFound(f"F-SLA record {jurisdiction.upper()} has no version {number}")
    return row


def check_draft(jurisdiction: str, document: dict[str, Any]) -> FSLARecord:
    """Validate a record without saving it; every error names its field."""
    try:
        record = FSLARecord.model_validate(document)
    except ValidationError as error:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"]) or "record", "reason": e["msg"]}
            for e in error.errors()
        ]
        raise InvalidPolicy(f"{errors[0]['field']}: {errors[0]['reason']}", errors=errors) from None
    _check_path(jurisdiction, record)
    return record


def _check_path(jurisdiction: str, record: FSLARecord) -> None:
    if record.jurisdiction != jurisdiction.upper():
        raise InvalidPolicy(
            f"jurisdiction: the record says {record.jurisdiction!r} but the URL "
            f"names {jurisdiction.upper()!r}",
            errors=[{"field": "jurisdiction", "reason": "does not match the URL"}],
        )


def update(
    session: Session,
    jurisdiction: str,
    record: FSLARecord,
    actor: str,
    expected_version: int | None = None,
) -> tuple[PolicyVersion, bool]:
    """Save ``record`` as a new version; an unchanged record makes no version.

    Returns the current row and whether a version was created.
    """
    _check_path(jurisdiction, record)
    previous = repository.latest(session, record.jurisdiction)
    previous_number = previous.version if previous else 0
    if expected_version is not None and expected_version != previous_number:
        raise VersionMismatch(
            f"{record.jurisdiction} is at version {previous_number}, not "
            f"{expected_version}: read it again and reapply your change"
        )
    document = record.model_dump(mode="json")
    if previous is not None and previous.document == document:
        return previous, False
    row = PolicyVersion(
        jurisdiction=record.jurisdiction,
        version=previous_number + 1,
        document=document,
        created_by=actor,
    )
    changed = sorted(
        k for k in document if previous is None or previous.document.get(k) != document[k]
    )
    try:
        repository.add(session, row)
        audit.record(
            session,
            actor,
            "policy.updated",
            record.jurisdiction,
            {
                "version": row.version,
                "changed_fields": changed,
                "record_sha256": sha256_of(document),
            },
        )
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(
            f"{record.jurisdiction} was changed by someone else at the same time: "
            "read it again and retry"
        ) from None
    return row, True


def seed(session: Session, records: list[FSLARecord]) -> list[str]:
    """Store version 1 of every seed record whose jurisdiction has none yet (first start)."""
    created = []
    for record in records:
        if repository.latest(session, record.jurisdiction) is not None:
            continue
        document = record.model_dump(mode="json")
        repository.add(
            session,
            PolicyVersion(
                jurisdiction=record.jurisdiction, version=1, document=document, created_by="seed"
            ),
        )
        audit.record(
            session,
            "seed",
            "policy.seeded",
            record.jurisdiction,
            {"version": 1, "record_sha256": sha256_of(document)},
        )
        created.append(record.jurisdiction)
    session.commit()
    return created

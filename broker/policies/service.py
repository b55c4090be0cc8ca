"""F-SLA records: read, version on every change, check drafts, load the seed files (a draft
replayed over past transfers reads transfers too: :func:`broker.flows.replay_policy`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.errors import (
    Conflict,
    InvalidPolicy,
    NotFound,
    PreconditionRequired,
    VersionMismatch,
)
from broker.fsla import lint
from broker.fsla.changes import Change, changes, merge_patch
from broker.fsla.lint import PolicyWarning
from broker.fsla.models import FSLARecord
from broker.policies import repository
from broker.policies.models import PolicyVersion
from broker.wire.canonical import sha256_of
from broker.wire.problem_model import field_errors


def current(session: Session, jurisdiction: str) -> PolicyVersion:
    row = repository.latest(session, jurisdiction.upper())
    if row is None:
        raise NotFound(f"No F-SLA record for jurisdiction {jurisdiction!r}")
    return row


def record_of(row: PolicyVersion) -> FSLARecord:
    return FSLARecord.model_validate(row.document)


def list_current(session: Session) -> list[PolicyVersion]:
    return repository.latest_of_each(session)


def version(session: Session, jurisdiction: str, number: int) -> PolicyVersion:
    row = repository.version(session, jurisdiction.upper(), number)
    if row is None:
        current(session, jurisdiction)  # 404 names the jurisdiction when it is unknown
        raise NotFound(f"F-SLA record {jurisdiction.upper()} has no version {number}")
    return row


def check_draft(jurisdiction: str, document: Any) -> FSLARecord:
    """Validate a record given as JSON (a patched one); every error names its field.

    The same model and the same :func:`field_errors` as the router's checks of PUT and /check
    bodies, so one mistake gets one problem type (``invalid-policy``) and one wording from all
    three.
    """
    if not isinstance(document, dict):
        raise InvalidPolicy(
            "record: an F-SLA record is a JSON object",
            errors=[{"field": "record", "reason": "must be a JSON object"}],
        )
    try:
        record = FSLARecord.model_validate(document)
    except ValidationError as error:
        errors = field_errors(error.errors(), drop=(), model=FSLARecord)
        raise InvalidPolicy(f"{errors[0]['field']}: {errors[0]['reason']}", errors=errors) from None
    check_path(jurisdiction, record)
    return record


def check_path(jurisdiction: str, record: FSLARecord) -> None:
    if record.jurisdiction != jurisdiction.upper():
        raise InvalidPolicy(
            f"jurisdiction: the record says {record.jurisdiction!r} but the URL "
            f"names {jurisdiction.upper()!r}",
            errors=[{"field": "jurisdiction", "reason": "does not match the URL"}],
        )


def etag(version: int) -> str:
    """The entity tag of a version (RFC 9110, section 8.8.3): its number, quoted."""
    return f'"{version}"'


def _require_match(jurisdiction: str, previous: PolicyVersion | None, if_match: str | None) -> None:
    """Refuse a change not based on the current version (RFC 9110, section 13.1.1).

    Without ``If-Match`` only a new jurisdiction may be created (nothing can be overwritten);
    ``*`` matches any current version; entity tags compare strongly, so a weak ``W/"3"`` never
    matches.
    """
    code = jurisdiction.upper()
    if if_match is None or not if_match.strip():
        if previous is None:
            return
        # The current version is not named here: copying it without reading the record would
        # defeat the check. GET gives it, with the record it belongs to.
        raise PreconditionRequired(
            f"Send If-Match with the ETag that GET /v1/policies/{code} gave for the version you "
            'edited (e.g. If-Match: "3"), so that a save cannot overwrite someone else\'s'
        )
    tags = {tag.strip() for tag in if_match.split(",")}
    if previous is None:
        raise VersionMismatch(
            f"{code} has no F-SLA record yet, so If-Match: {if_match} matches nothing: "
            "send the first version without If-Match"
        )
    if "*" in tags or etag(previous.version) in tags or str(previous.version) in tags:
        return
    raise VersionMismatch(
        f"{code} is at version {previous.version} (ETag {etag(previous.version)}), not "
        f"{if_match}: read it again and reapply your change"
    )


def normalized(row: PolicyVersion) -> dict[str, Any]:
    """A stored version as the record model writes it today (defaults of newer fields filled)."""
    return record_of(row).model_dump(mode="json")


def update(
    session: Session,
    jurisdiction: str,
    record: FSLARecord,
    actor: str,
    if_match: str | None = None,
) -> tuple[PolicyVersion, bool]:
    """Save ``record`` as a new version, in the caller's transaction
    (:func:`broker.flows.update_policy` reviews the agreements it concerns and commits); an
    unchanged record makes no version. Returns the current row and whether a version was
    created."""
    check_path(jurisdiction, record)
    previous = repository.latest(session, record.jurisdiction)
    _require_match(jurisdiction, previous, if_match)
    return _save(session, previous, record, actor)


def patch(
    session: Session,
    jurisdiction: str,
    merge_patch_document: Any,
    actor: str,
    if_match: str | None,
) -> tuple[PolicyVersion, bool]:
    """Apply a JSON merge patch (RFC 7396) to the current version and save the result as
    :func:`update` does: validated the same way, a new version only if something changed."""
    previous = current(session, jurisdiction)
    _require_match(jurisdiction, previous, if_match)
    document = merge_patch(normalized(previous), merge_patch_document)
    record = check_draft(jurisdiction, document)
    return _save(session, previous, record, actor)


def _save(
    session: Session, previous: PolicyVersion | None, record: FSLARecord, actor: str
) -> tuple[PolicyVersion, bool]:
    document = record.model_dump(mode="json")
    if previous is not None and normalized(previous) == document:
        return previous, False
    previous_number = previous.version if previous else 0
    row = PolicyVersion(
        jurisdiction=record.jurisdiction,
        version=previous_number + 1,
        document=document,
        created_by=actor,
    )
    found = changes(normalized(previous) if previous else {}, document)
    try:
        repository.add(session, row)
        audit.record(
            session,
            actor,
            "policy.updated",
            record.jurisdiction,
            {
                "version": row.version,
                "changed_fields": sorted({c.field for c in found}),
                "record_sha256": sha256_of(document),
            }
            | ({"changes": [str(c) for c in found]} if previous is not None else {}),
        )
    except IntegrityError:
        session.rollback()
        raise Conflict(
            f"{record.jurisdiction} was changed by someone else at the same time: "
            "read it again and retry"
        ) from None
    return row, True


@dataclass(frozen=True)
class DraftCheck:
    record: FSLARecord
    current_version: int | None
    changes: list[Change]
    warnings: list[PolicyWarning]


def check(session: Session, jurisdiction: str, record: FSLARecord) -> DraftCheck:
    """What a valid draft changes against the current version, and what to look at twice;
    nothing is saved."""
    check_path(jurisdiction, record)
    previous = repository.latest(session, record.jurisdiction)
    others = [record_of(row) for row in repository.latest_of_each(session)]
    return DraftCheck(
        record=record,
        current_version=previous.version if previous else None,
        changes=changes(normalized(previous) if previous else {}, record.model_dump(mode="json")),
        warnings=lint.warnings(record, others),
    )


def diff(session: Session, jurisdiction: str, old: int, new: int) -> list[Change]:
    """What changed from version ``old`` to version ``new`` (either may be the later one)."""
    before = version(session, jurisdiction, old)
    after = version(session, jurisdiction, new)
    return changes(normalized(before), normalized(after))


def versions_page(
    session: Session, jurisdiction: str, after: int, limit: int
) -> tuple[list[PolicyVersion], int | None]:
    """Up to ``limit`` versions numbered above ``after``, oldest first, and the ``after`` of the
    next page (None on the last)."""
    current(session, jurisdiction)  # 404 names an unknown jurisdiction
    rows = repository.versions(session, jurisdiction.upper(), after, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].version if more else None)


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

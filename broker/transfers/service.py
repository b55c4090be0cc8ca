"""One use case: a member asks to send a dataset to another member; the broker decides.

Parse the upload into its canonical table, measure it, evaluate the source's export rules and the
destination's import rules, and record the decision, its outbox row (approved transfers only) and
its audit entry in one transaction. A malformed dataset is an error and stores nothing; a policy
that says no is a normal, recorded decision.

What leaves is written by the broker from the table it measured (or its anonymized version), in
the format that came in, rows shuffled, the person key removed: never the bytes it received.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

import pandas as pd
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.canonical import sha256_of
from broker.config import Settings
from broker.datasets import Dataset
from broker.delivery.models import Delivery
from broker.deps import Caller
from broker.engines.pandas import PandasEngine
from broker.errors import IdempotencyKeyReused, NotFound
from broker.fsla.decide import (
    Measured,
    Outcome,
    Parties,
    Party,
    TransferRequest,
    decide,
    measure,
)
from broker.members import repository as members
from broker.members.models import Member
from broker.policies import service as policies
from broker.roles import Roles
from broker.transfers import repository
from broker.transfers.models import Transfer
from broker.uploads import Upload, declare_roles, read_upload
from broker.wire.statuses import DeliveryStatus, TransferStatus

_EXTENSIONS = {"csv": ".csv", "json": ".json", "parquet": ".parquet"}


def fingerprint(request: TransferRequest, dataset_sha256: str) -> str:
    body = {
        "destination": request.destination,
        "purpose": request.purpose,
        "quasi_identifiers": list(request.quasi_identifiers),
        "sensitive": list(request.sensitive),
        "anonymize": request.anonymize,
        "person_key": request.person_key,
        "dataset_sha256": dataset_sha256,
    }
    return sha256_of(body)


def submit(
    session: Session, caller: Caller, upload: Upload, request: TransferRequest, settings: Settings
) -> tuple[Transfer, bool]:
    """Decide a transfer; returns it and whether it replays an earlier identical request."""
    dataset_sha256 = upload.sha256
    request_fingerprint = fingerprint(request, dataset_sha256)
    if request.idempotency_key and not request.dry_run:
        earlier = repository.by_idempotency_key(session, caller.member_id, request.idempotency_key)
        if earlier is not None:
            return _replay(earlier, request_fingerprint), True
    # Short reads, CPU work outside any transaction, one short write: on SQLite a transaction
    # holds the write lock, and measuring or anonymizing a large upload takes seconds.
    session.rollback()
    uploaded = read_upload(upload, settings)
    roles = declare_roles(
        uploaded, request.quasi_identifiers, request.sensitive, request.person_key
    )
    frame = _measured_table(uploaded, roles)
    key = uploaded.frame[roles.person_key] if roles.person_key else None
    engine = PandasEngine(frame, person_key=key)  # one coding for the people and the report
    people = engine.people
    report, quasi_identifiers, inferred = measure(engine, roles.quasi_identifiers, roles.sensitive)
    parties = _read_parties(session, caller.member_id, request.destination)
    session.rollback()
    outcome = decide(
        parties,
        request,
        Roles(quasi_identifiers, roles.sensitive, roles.person_key),
        Measured(frame, report, people),
        settings.anonymize_max_suppression,
        settings.remedy_seconds,
    )
    source = parties.source
    transfer_id = str(uuid.uuid4())
    leaving = frame if outcome.anonymized is None else outcome.anonymized
    delivering = outcome.status == TransferStatus.APPROVED and not request.dry_run
    payload = PandasEngine(leaving).write(uploaded, shuffle=True) if delivering else None
    dataset = {
        "sha256": dataset_sha256,
        "size_bytes": upload.size,
        "rows": len(frame),
        "columns": len(uploaded.frame.columns),
        "filename": upload.filename,
        "format": uploaded.format,
        "notes": list(uploaded.notes),
        "anonymized": outcome.anonymized is not None,
        "delivered_filename": _delivered_name(transfer_id, uploaded, outcome),
        "delivered_sha256": payload and hashlib.sha256(payload).hexdigest(),
        "delivered_rows": len(leaving),
        "delivered_columns": len(leaving.columns),
    }
    transfer = Transfer(
        id=transfer_id,
        source_id=source.id,
        destination_id=request.destination,
        purpose=_policy_spelling(request.purpose, parties),
        status=outcome.status,
        anonymize=request.anonymize,
        quasi_identifiers=list(quasi_identifiers),
        quasi_identifiers_inferred=inferred,
        sensitive=list(request.sensitive),
        report=outcome.report.as_dict(),
        rules=[r.as_dict() for r in outcome.rules],
        remedy=outcome.remedy,
        policy_versions=outcome.versions,
        dataset=dataset,
        idempotency_key=None if request.dry_run else request.idempotency_key,
        request_fingerprint=request_fingerprint,
        created_at=datetime.now(UTC),
    )
    if request.dry_run:
        return transfer, False

    delivery = None
    if outcome.status == TransferStatus.APPROVED:
        delivery = Delivery(
            transfer_id=transfer.id,
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=transfer.created_at,
            payload=payload,
            payload_type=uploaded.media_type,  # what the broker wrote, never the sender's say-so
        )
    try:
        repository.add(session, transfer, delivery)
        audit.record(
            session,
            source.id,
            "transfer.decided",
            transfer.id,
            {
                "status": outcome.status,
                "source": source.id,
                "destination": request.destination,
                "purpose": request.purpose,
                "policy_versions": outcome.versions,
                "dataset_sha256": dataset_sha256,
                "anonymized": dataset["anonymized"],
                "failed_rules": [
                    f"{r.rule}:{r.attribute}" if r.attribute else r.rule
                    for r in outcome.rules
                    if not r.passed
                ],
            },
        )
        session.commit()
    except IntegrityError:
        # The same idempotency key raced us: answer as the winner did.
        session.rollback()
        earlier = repository.by_idempotency_key(session, source.id, request.idempotency_key or "")
        if earlier is None:
            raise
        return _replay(earlier, request_fingerprint), True
    session.refresh(transfer)
    return transfer, False


def _policy_spelling(purpose: str, parties: Parties) -> str:
    """The purpose as the source's F-SLA record spells it: its letter case would be a channel."""
    record = parties.policies[parties.source.jurisdiction][0]
    wanted = purpose.strip().casefold()
    return next((p for p in record.allowed_purposes if p.casefold() == wanted), purpose)


def _measured_table(uploaded: Dataset, roles: Roles) -> pd.DataFrame:
    """The table that is measured and may leave: every column but the person key."""
    if roles.person_key is None:
        return uploaded.frame
    return uploaded.frame.drop(columns=[roles.person_key])


def _delivered_name(transfer_id: str, uploaded: Dataset, outcome: Outcome) -> str:
    """The broker's own name for the delivered file: the sender's file name is free text that
    would cross the border unmeasured."""
    suffix = ".anonymized" if outcome.anonymized is not None else ""
    return f"transfer-{transfer_id}{suffix}{_EXTENSIONS[uploaded.format]}"


def _replay(earlier: Transfer, request_fingerprint: str) -> Transfer:
    if earlier.request_fingerprint != request_fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency key {earlier.idempotency_key!r} was used for another request "
            f"(transfer {earlier.id}); use a new key for a new request"
        )
    return earlier


def _read_parties(session: Session, source_id: str, destination_id: str) -> Parties:
    def party(member: Member | None) -> Party | None:
        return member and Party(member.id, member.jurisdiction, member.status)

    source = party(members.get(session, source_id))
    destination = party(members.get(session, destination_id))
    found = {}
    for member in filter(None, (source, destination)):
        row = policies.current(session, member.jurisdiction)
        found[row.jurisdiction] = (policies.record_of(row), row.version)
    return Parties(source, destination, found)


def get_visible(session: Session, caller: Caller, transfer_id: str) -> Transfer:
    """The transfer, if the caller sent it, is an admin, or received it approved; else 404.

    A destination sees only what was approved for it (a refused transfer, its column names or
    the sender's file name would cross the border without being measured), and a member
    registered after a transfer was addressed to its id (then unknown) does not see it.
    """
    transfer = repository.get(session, transfer_id)
    if transfer is None or not (caller.is_admin or _concerns(session, caller, transfer)):
        raise NotFound(f"No transfer {transfer_id!r}")
    return transfer


def _concerns(session: Session, caller: Caller, transfer: Transfer) -> bool:
    if transfer.source_id == caller.member_id:
        return True
    if transfer.destination_id != caller.member_id or transfer.status != TransferStatus.APPROVED:
        return False
    member = members.get(session, caller.member_id)
    return member is not None and member.created_at <= transfer.created_at


def list_visible(
    session: Session, caller: Caller, status: str | None, offset: int, limit: int
) -> tuple[list[Transfer], int]:
    if caller.is_admin:
        return repository.page(session, None, None, status, offset, limit)
    member = members.get(session, caller.member_id)
    return repository.page(session, member.id, member.created_at, status, offset, limit)

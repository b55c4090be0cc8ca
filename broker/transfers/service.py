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
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.config import Settings
from broker.datasets import Dataset, write_dataset
from broker.deps import Caller
from broker.errors import IdempotencyKeyReused, NotFound
from broker.fsla.evaluate import (
    ANONYMIZATION_REQUIRED,
    APPROVED,
    REJECTED,
    RuleResult,
    TransferContext,
    evaluate,
)
from broker.fsla.models import FSLARecord
from broker.fsla.remedy import find_remedy
from broker.members import repository as members
from broker.members.models import ACTIVE, Member
from broker.metrics.mmaq import QUASI_IDENTIFIER
from broker.metrics.report import AnalysisReport, People, analyze, attribute_classes
from broker.policies import service as policies
from broker.roles import Roles
from broker.transfers import repository
from broker.transfers.models import Delivery, Transfer
from broker.uploads import Upload, declare_roles, read_upload

FEDERATION = "federation"
PENDING = "pending"
_EXTENSIONS = {"csv": ".csv", "json": ".json", "parquet": ".parquet"}


@dataclass(frozen=True)
class TransferRequest:
    destination: str
    purpose: str
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    anonymize: str = "none"
    dry_run: bool = False
    idempotency_key: str | None = None
    person_key: str | None = None


def measure(
    frame: pd.DataFrame,
    declared: tuple[str, ...],
    sensitive: tuple[str, ...],
    people: People | None = None,
) -> tuple[AnalysisReport, tuple[str, ...], bool]:
    """The report, the quasi-identifiers it used, and whether the broker added any.

    The sender's declaration can widen the check, never narrow it: the broker adds every
    non-sensitive attribute whose Mmaq class is ``quasi_identifier``. Identifiers are judged by
    their own rule and anonymous attributes separate no one, so nothing escapes the k, l and t
    rules by being left undeclared.
    """
    added = tuple(
        name
        for name, attribute_class in attribute_classes(frame).items()
        if attribute_class == QUASI_IDENTIFIER and name not in sensitive and name not in declared
    )
    quasi_identifiers = declared + added
    report = analyze(frame, quasi_identifiers, sensitive, people=people)
    return report, quasi_identifiers, bool(added)


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
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def submit(
    session: Session, caller: Caller, upload: Upload, request: TransferRequest, settings: Settings
) -> tuple[Transfer, bool]:
    """Decide a transfer; returns it and whether it replays an earlier identical request."""
    dataset_sha256 = hashlib.sha256(upload.data).hexdigest()
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
    people = People.of(frame, key)
    report, quasi_identifiers, inferred = measure(
        frame, roles.quasi_identifiers, roles.sensitive, people
    )
    parties = _read_parties(session, caller.member_id, request.destination)
    session.rollback()
    outcome = _decide(
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
    delivering = outcome.status == APPROVED and not request.dry_run
    payload = _payload(leaving, uploaded) if delivering else None
    dataset = {
        "sha256": dataset_sha256,
        "size_bytes": len(upload.data),
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
    if outcome.status == APPROVED:
        delivery = Delivery(
            transfer_id=transfer.id,
            status=PENDING,
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


def _payload(table: pd.DataFrame, uploaded: Dataset) -> bytes:
    """The bytes delivered: ``table`` written fresh in the format that came in, rows shuffled.

    Shuffled so that two releases of one table cannot be lined up by position (20-30 in one and
    25-40 in the other would give 25-30), whatever each release looks like on its own.
    """
    shuffled = table.sample(frac=1, random_state=np.random.default_rng())
    return write_dataset(shuffled.reset_index(drop=True), uploaded)


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


@dataclass(frozen=True, eq=False)
class Outcome:
    """A decision with everything the answer and the delivery need."""

    status: str
    rules: list[RuleResult]
    remedy: dict | None
    versions: dict[str, int]
    report: AnalysisReport
    anonymized: pd.DataFrame | None = None


@dataclass(frozen=True)
class Party:
    id: str
    jurisdiction: str
    status: str


@dataclass(frozen=True)
class Parties:
    """The members and the policy versions a decision uses, read in one short transaction."""

    source: Party
    destination: Party | None
    policies: dict[str, tuple[FSLARecord, int]]


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


@dataclass(frozen=True, eq=False)
class Measured:
    """The table as measured, its report, and who its rows are."""

    frame: pd.DataFrame
    report: AnalysisReport
    people: People


def _decide(
    parties: Parties,
    request: TransferRequest,
    roles: Roles,
    measured: Measured,
    max_suppression: float,
    budget_seconds: float | None = None,
) -> Outcome:
    frame, report = measured.frame, measured.report
    source, destination = parties.source, parties.destination
    source_policy, source_version = parties.policies[source.jurisdiction]
    versions = {source.jurisdiction: source_version}
    federation_rules = _federation_rules(source, destination, request)
    if any(not rule.passed for rule in federation_rules):
        return Outcome(REJECTED, federation_rules, None, versions, report)

    destination_policy, destination_version = parties.policies[destination.jurisdiction]
    versions[destination.jurisdiction] = destination_version
    context = TransferContext(
        source.jurisdiction,
        destination.jurisdiction,
        request.purpose,
        roles.quasi_identifiers,
        roles.sensitive,
        roles.person_key,
    )
    decision = evaluate(report, context, source_policy, destination_policy)
    rules = federation_rules + list(decision.rules)
    if decision.status != ANONYMIZATION_REQUIRED:
        return Outcome(decision.status, rules, None, versions, report)

    found = find_remedy(
        frame,
        report,
        decision,
        context,
        source_policy,
        destination_policy,
        max_suppression,
        measured.people,
        budget_seconds,
    )
    if not found.verified:
        rules.append(
            RuleResult(
                "remedy_found",
                FEDERATION,
                source.jurisdiction,
                False,
                found.reason or "no remedy",
                fixable=False,
            )
        )
        return Outcome(REJECTED, rules, found.as_dict(), versions, report)
    remedy = found.as_dict()
    if request.anonymize != "auto":
        remedy["note"] = _join(
            "Send again with anonymize=auto to have the broker apply these steps, or apply "
            "them yourself",
            remedy["note"],
        )
        return Outcome(ANONYMIZATION_REQUIRED, rules, remedy, versions, report)
    if not decision.requirements.auto_anonymize:
        remedy["note"] = _join(
            f"anonymize=auto was asked but the rules of {' and '.join(sorted(versions))} do not "
            "all allow the broker to anonymize: apply the steps yourself",
            remedy["note"],
        )
        return Outcome(ANONYMIZATION_REQUIRED, rules, remedy, versions, report)
    remedy.update(
        applied=True,
        before={"report": report.as_dict(), "rules": [r.as_dict() for r in rules]},
    )
    after_rules = federation_rules + list(found.decision.rules)
    return Outcome(APPROVED, after_rules, remedy, versions, found.report, found.remedy.frame)


def _join(*parts: str | None) -> str:
    return "; ".join(p for p in parts if p)


def _federation_rules(
    source: Party, destination: Party | None, request: TransferRequest
) -> list[RuleResult]:
    known = destination is not None
    rules = [
        RuleResult(
            "destination_known",
            FEDERATION,
            source.jurisdiction,
            known,
            f"member cloud {request.destination!r} is "
            + ("registered" if known else "not registered in the federation"),
            measured=request.destination,
            fixable=False,
        )
    ]
    if known:
        active = destination.status == ACTIVE
        rules.append(
            RuleResult(
                "destination_active",
                FEDERATION,
                destination.jurisdiction,
                active,
                f"member cloud {destination.id!r} is {destination.status}",
                measured=destination.status,
                threshold=ACTIVE,
                fixable=False,
            )
        )
        distinct = destination.id != source.id
        rules.append(
            RuleResult(
                "destination_not_source",
                FEDERATION,
                source.jurisdiction,
                distinct,
                "the destination is another member"
                if distinct
                else "a member cannot send a transfer to itself",
                fixable=False,
            )
        )
    return rules


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
    if transfer.destination_id != caller.member_id or transfer.status != APPROVED:
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


def delivery_view(transfer: Transfer) -> dict[str, Any]:
    delivery = transfer.delivery
    if delivery is None:
        return {"status": "not_applicable", "attempts": 0}
    return {
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_error": delivery.last_error,
        "delivered_at": delivery.delivered_at,
    }

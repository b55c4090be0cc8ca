"""The decision of a microdata transfer: the rows of a dataset, measured and judged.

Read the upload (or the files a reference pinned) into its canonical table, measure it, read the
parties, what the earlier transfers to the same destination released (the linkage rule) and the
agreement it names, decide (:func:`broker.fsla.decide.decide`), and write what leaves: by the
broker, from the table it measured (or its anonymized version), in the format that came in, rows
shuffled, the person key removed, never the bytes it received. Nothing is written to the database
here but by :func:`record`, which the intake (:mod:`broker.transfers.service`) or a job calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from broker.background import Deadline
from broker.columns.roles import Roles
from broker.config import Settings
from broker.delivery.models import Delivery
from broker.engines.base import Engine
from broker.errors import Conflict, Forbidden, storage_faults
from broker.fsla.decide import (
    Agreed,
    Case,
    Effort,
    Measured,
    Onward,
    Outcome,
    Parties,
    TransferRequest,
    lookback_days,
    measure,
)
from broker.fsla.decide import (
    decide as decide_transfer,
)
from broker.fsla.linkage import History, released_classes
from broker.fsla.offers import Terms
from broker.intake.hierarchies import resolved
from broker.intake.references import REFERENCE, Reference, open_reference
from broker.intake.tables import counting_limits, open_upload
from broker.intake.uploads import Upload
from broker.negotiations.agreements import usable
from broker.storage.db import each_statement_on_its_own
from broker.transfers import dry_runs, recording, repository
from broker.transfers.facts import DatasetFacts
from broker.transfers.models import ReleasedClasses, Transfer
from broker.transfers.parties import policy_spelling, read_parties_and_health
from broker.wire.statuses import TransferStatus

EXTENSIONS = {"csv": ".csv", "json": ".json", "parquet": ".parquet", REFERENCE: ".reference.json"}

Progress = Callable[[str, float], None]


def no_progress(stage: str, fraction: float) -> None:
    """Synchronous decisions report no progress: the answer is the decision."""


@dataclass(frozen=True, eq=False)
class Decided:
    """A decision ready to be recorded: the transfer, its outbox row, its audit details, and
    (approved) the classes it released, with the earlier transfers it was joined with."""

    transfer: Transfer
    delivery: Delivery | None
    audit: dict[str, Any]
    released: ReleasedClasses | None = None
    history: History | None = None  # what earlier transfers released, joined with


@storage_faults("its working files (data measured out of core spills to disk)")
def decide(
    session: Session,
    source_id: str,
    transfer_id: str,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
    request_fingerprint: str,
    progress: Progress = no_progress,
    deadline: Deadline | None = None,
) -> Decided:
    """Read, measure and decide; nothing is written (see :func:`record`). A full disk is
    :class:`~broker.errors.InsufficientStorage` (a job fails with it: send again).

    Short reads, CPU work outside any transaction: on SQLite a transaction holds the write lock,
    and measuring or anonymizing a large upload takes seconds. ``deadline`` (a job's) is also
    checked by the cluster before each file it reads for a transfer by reference.
    """
    session.rollback()
    progress("reading", 0.05)
    roles_asked = (request.quasi_identifiers, request.sensitive, request.person_key)
    if isinstance(upload, Reference):
        table = open_reference(upload, source_id, *roles_asked, settings, deadline)
    else:
        table = open_upload(upload, settings, *roles_asked)
    roles = table.roles
    if request.hierarchies:  # each file held to a column of the table and its values
        engine = table.engine
        request = replace(
            request, hierarchies=resolved(request.hierarchies, engine.columns, engine.dictionary)
        )
    progress("measuring", 0.2)
    with counting_limits():
        report, quasi_identifiers, inferred = measure(
            table.engine, roles.quasi_identifiers, roles.sensitive
        )
    each_statement_on_its_own(session)  # short reads, each its own snapshot: no transaction
    parties, destination_health = read_parties_and_health(session, source_id, request.destination)
    history = _history(session, parties, request)
    agreement = None
    if request.agreement_id is not None:
        agreement = agreement_of(session, source_id, request.agreement_id)
    onward = None
    received = repository.received_under_no_onward(session, source_id, upload.sha256)
    if received is not None:
        onward = Onward(received.transfer_id, received.agreement_id)
    session.commit()  # end the reads (they wrote nothing) before the CPU work
    progress("deciding", 0.5)
    with counting_limits():
        case = Case(
            parties,
            request,
            Roles(quasi_identifiers, roles.sensitive, roles.person_key),
            Measured(table.engine, report),
            history,
            agreement,
            onward,
        )
        effort = Effort(settings.anonymize_max_suppression, settings.remedy_seconds)
        outcome = decide_transfer(case, effort)
    source = parties.source
    leaving = table.engine if outcome.anonymized is None else outcome.anonymized
    delivering = outcome.status == TransferStatus.APPROVED and not request.dry_run
    delivered_name = _delivered_name(transfer_id, table.format, outcome)
    written = counted = None
    if delivering:
        # What it releases, counted before the write, which lets go of the counts kept so far.
        quasi = [q for q in quasi_identifiers if q in leaving.columns]
        counted = quasi, released_classes(leaving, quasi, settings.linkage_max_classes)
        progress("writing", 0.85)
        written = table.write(leaving, delivered_name, settings)
    preview = None
    if request.dry_run:  # what would leave, kept a while for its source to fetch
        suffix = EXTENSIONS[table.format]
        preview = dry_runs.preview(table, outcome, transfer_id, source.id, suffix, settings)
    dataset = DatasetFacts(
        sha256=upload.sha256,
        size_bytes=upload.size,
        rows=table.engine.rows,
        columns=table.columns,
        filename=getattr(upload, "filename", None),
        location=getattr(upload, "location", None),
        format=table.format,
        notes=list(table.notes),
        anonymized=outcome.anonymized is not None,
        delivered_filename=delivered_name,
        delivered_sha256=written and written.sha256,
        delivered_rows=leaving.rows,
        delivered_columns=len(leaving.columns),
        preview=preview,
    )
    transfer = Transfer(
        id=transfer_id,
        source_id=source.id,
        destination_id=request.destination,
        purpose=policy_spelling(request.purpose, parties),
        status=outcome.status,
        anonymize=request.anonymize,
        quasi_identifiers=list(quasi_identifiers),
        quasi_identifiers_inferred=inferred,
        sensitive=list(request.sensitive),
        report=outcome.report.stored(),
        rules=[r.stored() for r in outcome.rules],
        remedy=outcome.remedy and outcome.remedy.stored(),
        policy_versions=outcome.versions,
        dataset=dataset.stored(),
        idempotency_key=None if request.dry_run else request.idempotency_key,
        request_fingerprint=request_fingerprint,
        created_at=datetime.now(UTC),
        agreement_id=request.agreement_id,
        delivered_sha256=written and written.sha256,
    )
    if written is not None and outcome.retention_days is not None:
        transfer.retain_until = transfer.created_at + timedelta(days=outcome.retention_days)
    delivery = None
    if written is not None:
        # For the answer: a delivery held while its destination is down (the transfer is
        # inserted as a row and never loaded: its health is the one read with the parties).
        set_committed_value(transfer, "destination_health", destination_health)
        delivery = recording.outbox_row(
            transfer,
            table.media_type,
            payload=written.data,
            payload_file=written.path and str(written.path),
        )
    released = None
    if written is not None:
        released = released_classes_of(transfer, leaving, roles.sensitive, counted)
    audit_details = {
        "status": outcome.status,
        "source": source.id,
        "destination": request.destination,
        "purpose": request.purpose,
        "policy_versions": outcome.versions,
        "dataset_sha256": upload.sha256,
        "anonymized": dataset.anonymized,
        "failed_rules": [
            f"{r.rule}:{r.attribute}" if r.attribute else r.rule
            for r in outcome.rules
            if not r.passed
        ],
    }
    return Decided(transfer, delivery, audit_details, released, history)


def agreement_of(session: Session, source_id: str, agreement_id: str) -> Agreed:
    """The agreement a transfer names, if its source may make transfers under it now."""
    found = usable(session, agreement_id)
    if found.provider_id != source_id:
        raise Forbidden(
            f"Agreement {agreement_id} is {found.provider_id!r}'s: only its provider sends "
            "data under it"
        )
    return Agreed(found.id, found.provider_id, found.consumer_id, Terms.of(found.terms))


def _joined_with_every_earlier_transfer(session: Session, decided: Decided) -> None:
    transfer, history = decided.transfer, decided.history
    seen = {r.transfer_id for r in history.releases} | {transfer.id}
    recorded = repository.released_classes_since(
        session, transfer.source_id, transfer.destination_id, history.since
    )
    meanwhile = [r.transfer_id for r in recorded if r.transfer_id not in seen]
    if meanwhile:
        raise Conflict(
            f"Transfer {meanwhile[0]} to {transfer.destination_id!r} was approved while this "
            "one was decided, which did not join them: send it again"
        )


def _history(session: Session, parties: Parties, request: TransferRequest) -> History | None:
    """What the earlier transfers to the same destination released, within the window the
    transfer's rules look back on."""
    days = lookback_days(parties, request)
    if days is None:
        return None
    now = datetime.now(UTC)
    since = now - timedelta(days=days)
    earlier = repository.released_classes_since(
        session, parties.source.id, request.destination, since
    )
    return History(now, tuple(earlier), since)


def released_classes_of(
    transfer: Transfer,
    leaving: Engine,
    sensitive: tuple[str, ...],
    counted: tuple[list[str], tuple[list | None, int]],
) -> ReleasedClasses:
    """What an approved transfer releases, remembered for the linkage rule: the classes of the
    quasi-identifiers as they leave (``counted``: those columns, and their classes and number
    by :func:`broker.fsla.linkage.released_classes`, counted before the write), never the
    data."""
    quasi, (classes, count) = counted
    return ReleasedClasses(
        transfer_id=transfer.id,
        source_id=transfer.source_id,
        destination_id=transfer.destination_id,
        released_at=transfer.created_at,
        quasi_identifiers=quasi,
        sensitive=[s for s in sensitive if s in leaving.columns],
        classes=None if classes is None else [[list(labels), n] for labels, n in classes],
        class_count=count,
    )


def drop_payload_file(decided: Decided) -> None:
    """A decision that was not recorded leaves no file behind."""
    if decided.delivery is not None and decided.delivery.payload_file is not None:
        Path(decided.delivery.payload_file).unlink(missing_ok=True)


def record(session: Session, decided: Decided) -> None:
    """The decision with what it released (:func:`broker.transfers.recording.record`), in the
    caller's transaction.

    A transfer joined with earlier ones is recorded only if no other transfer to the same
    destination was approved while it was decided (it was not joined with that one): 409, send
    again. The source's row is locked first, so two such recordings take turns.
    """
    checked = decided.released is not None and decided.history is not None
    if checked:
        repository.lock_member(session, decided.transfer.source_id)
    rows = [] if decided.released is None else [decided.released]
    recording.record(session, decided.transfer, decided.delivery, decided.audit, rows)
    if checked:
        _joined_with_every_earlier_transfer(session, decided)


def _delivered_name(transfer_id: str, data_format: str, outcome: Outcome) -> str:
    """The broker's own name for the delivered file: the sender's file name is free text that
    would cross the border unmeasured."""
    suffix = ".anonymized" if outcome.anonymized is not None else ""
    return f"transfer-{transfer_id}{suffix}{EXTENSIONS[data_format]}"

"""The decision of an aggregate release (a transfer of kind ``aggregate``).

The same transfer as any other (parties, federation rules, F-SLA versions, idempotency keys,
dry runs, the decision record, its audit entry, the signed outbox delivery to the
destination's inbox; :mod:`broker.transfers.service` takes it in), with statistics under
differential privacy instead of rows:

1. read: parse the queries, the epsilon and the delta (:mod:`broker.privacy`), open the upload,
   check the queries against its columns (and the person key, and key columns that identify
   people); every mistake is a 422 that spends nothing;
2. identify the dataset (:func:`identify`: the rows, sketched, against the sketches of the
   source's earlier releases) and decide (:func:`broker.fsla.aggregate.decide_release`) against
   what earlier releases of it spent;
3. compute the answers through OpenDP, only when approved, outside any transaction;
4. record, in ONE transaction under the ledger's lock on the (source, destination) pair: identify
   the dataset and read what was spent again, decide again (a release recorded meanwhile
   counts), then write the decision, its outbox row, its spend, its sketch and its audit entry
   (:func:`broker.transfers.recording.record`).
   A release the budget no longer holds is recorded as refused, its answers thrown away unseen,
   nothing spent.

A dry run decides and shows each query's cost and accuracy, never an answer: answers that
spend nothing would be a way around the budget.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy.orm import Session

from broker.columns.roles import listed_columns
from broker.config import Settings
from broker.engines.base import Engine
from broker.engines.pandas import PandasEngine
from broker.errors import InvalidDataset, InvalidQuery, UnknownColumn, Unprocessable
from broker.fsla.aggregate import ReleaseDecision, decide_release, lookback
from broker.fsla.decide import Parties, TransferRequest
from broker.intake.references import Reference
from broker.intake.tables import Table, counting_limits, open_upload
from broker.intake.uploads import Upload
from broker.members.health import Health
from broker.privacy.budget import (
    Asked,
    BudgetError,
    Spend,
    delta_amount,
    positive_epsilon,
    show,
    stored,
)
from broker.privacy.identity import Sketch, same_dataset, similarity, sketch_of
from broker.privacy.queries import QueryError, UnknownQueryColumn, parse_queries
from broker.privacy.release import Plan, ReleaseError, compute, plan, validate
from broker.transfers import ledger, recording
from broker.transfers.facts import DatasetFacts
from broker.transfers.models import DatasetSketch, PrivacySpend, Transfer
from broker.transfers.parties import policy_spelling, read_parties_and_health
from broker.transfers.release import StoredRelease
from broker.wire.statuses import TransferKind

MEDIA_TYPE = "application/json"
FORMAT = "aggregate"


@dataclass(frozen=True, eq=False)
class Decided:
    """A release decided, not yet recorded: what it reads, asks and was told, and (once
    :func:`answer` ran, approved) its answers."""

    transfer_id: str
    parties: Parties
    request: TransferRequest
    upload: Upload
    table: Table
    rows: Rows
    planned: Plan
    decision: ReleaseDecision
    dataset_key: str
    answers: list[dict[str, Any]] | None = None
    destination_health: Health | None = None  # read with the parties, for the answer


def decide(
    session: Session,
    source_id: str,
    upload: Upload | Reference,
    request: TransferRequest,
    settings: Settings,
) -> Decided:
    """Read, check and decide (steps 1 and 2); nothing is written, nothing computed."""
    if isinstance(upload, Reference):
        raise Unprocessable(
            "An aggregate release is computed from an uploaded file (`file`), not from data "
            "named by `location`"
        )
    person = request.person_key
    planned = _plan(request, settings.aggregate_contributions if person else 1)
    # The person key stays a column: each query counts (person, its columns), bounded per person.
    table = open_upload(upload, settings, (), (), None)
    with counting_limits():
        _validate(table.engine, planned, person, request.quasi_identifiers)
        rows = Rows(sketch_of(table.engine, table.engine.columns), content_key(table, upload))
    parties, health = read_parties_and_health(session, source_id, request.destination)
    identity = identify(session, parties.source.id, rows)
    asked = Asked(identity.key, planned.epsilon, planned.delta)
    decision = decide_release(
        parties, request, asked, _spends(session, parties, request, identity), datetime.now(UTC)
    )
    session.rollback()
    return Decided(
        str(uuid.uuid4()),
        parties,
        request,
        upload,
        table,
        rows,
        planned,
        decision,
        identity.key,
        destination_health=health,
    )


def dry_run(decided: Decided, request_fingerprint: str) -> Transfer:
    """What a dry run answers: the decision, each query's cost and accuracy, never an answer."""
    transfer = _transfer(decided, decided.decision, None, decided.dataset_key)
    transfer.idempotency_key = None
    transfer.request_fingerprint = request_fingerprint
    return transfer


def answer(decided: Decided) -> Decided:
    """Step 3: the answers of an approved release, outside any transaction."""
    if not decided.decision.approved:
        return decided
    with counting_limits():
        answers = compute(
            decided.table.engine,
            decided.planned,
            decided.request.person_key,
            quasi=decided.request.quasi_identifiers,
        )
    return replace(decided, answers=answers)


def record(session: Session, decided: Decided, request_fingerprint: str) -> Transfer:
    """Step 4, under the pair's lock: identify the dataset and decide again on what is spent
    now, then record the decision with its spend and sketch (the caller commits)."""
    parties, request = decided.parties, decided.request
    planned, rows = decided.planned, decided.rows
    if parties.destination is not None:
        ledger.lock_pair(session, parties.source.id, parties.destination.id)
    now = datetime.now(UTC)
    identity = identify(session, parties.source.id, rows)
    asked = Asked(identity.key, planned.epsilon, planned.delta)
    spends = _spends(session, parties, request, identity)
    decision = decide_release(parties, request, asked, spends, now)
    answers = decided.answers if decision.approved else None
    # (answers computed before a release recorded meanwhile took the budget are dropped unseen)
    transfer = _transfer(decided, decision, answers, asked.dataset_key)
    transfer.created_at = now
    transfer.request_fingerprint = request_fingerprint
    delivery = None
    spent: list[Any] = []
    if answers is not None:
        release = StoredRelease.of(transfer.aggregate)
        payload = payload_of(transfer, planned, release, bool(request.person_key))
        digest = hashlib.sha256(payload).hexdigest()
        facts = DatasetFacts.of(transfer.dataset)
        transfer.dataset = facts.model_copy(update={"delivered_sha256": digest}).stored()
        delivery = recording.outbox_row(transfer, MEDIA_TYPE, payload=payload, due=now)
        spent = [
            PrivacySpend(
                transfer_id=transfer.id,
                source_id=transfer.source_id,
                destination_id=transfer.destination_id,
                dataset_key=asked.dataset_key,
                epsilon=stored(asked.epsilon),
                delta=stored(asked.delta),
                spent_at=now,
            ),
            DatasetSketch(
                transfer_id=transfer.id,
                source_id=transfer.source_id,
                dataset_key=asked.dataset_key,
                distinct_rows=rows.sketch.distinct,
                sketch=rows.sketch.to_bytes(),
                created_at=now,
            ),
        ]
    audit_details = {
        "status": transfer.status,
        "kind": TransferKind.AGGREGATE,
        "source": transfer.source_id,
        "destination": request.destination,
        "purpose": request.purpose,
        "policy_versions": decision.versions,
        "dataset_sha256": decided.upload.sha256,
        "dataset_key": asked.dataset_key,
        "queries": [part.query.as_dict() for part in planned.parts],
        "epsilon_spent": stored(asked.epsilon) if answers is not None else "0",
        "delta_spent": stored(asked.delta) if answers is not None else "0",
        "failed_rules": [f"{r.rule}:{r.jurisdiction}" for r in decision.rules if not r.passed],
    }
    recording.record(session, transfer, delivery, audit_details, spent)
    return transfer


def _plan(request: TransferRequest, contributions: int) -> Plan:
    if not (request.epsilon or "").strip():
        raise InvalidQuery(
            "An aggregate release needs `epsilon`: the privacy it may spend (e.g. 0.5), which "
            "the rule sets cap per release and per dataset and destination"
        )
    try:
        queries = parse_queries(request.queries or "")
        epsilon = positive_epsilon(request.epsilon)
        delta = delta_amount(request.delta)
        return plan(queries, epsilon, delta, contributions)
    except (QueryError, BudgetError) as error:
        raise InvalidQuery(str(error)) from None


def _validate(engine: Engine, planned: Plan, person: str | None, quasi=()) -> None:
    if person is not None and person not in engine.columns:
        raise UnknownColumn(
            f"Person key {person!r} is not a column of the dataset; its {len(engine.columns):,} "
            f"columns: {listed_columns(engine.columns)}"
        )
    try:
        validate(engine, planned, person, quasi)
    except UnknownQueryColumn as error:
        raise UnknownColumn(
            f"{error}; its {len(engine.columns):,} columns: {listed_columns(engine.columns)}"
        ) from None
    except ReleaseError as error:
        if engine.rows == 0:
            raise InvalidDataset(str(error)) from None
        raise InvalidQuery(str(error)) from None


@dataclass(frozen=True)
class Rows:
    """What identifies the table of a release: the sketch of its rows, and its content key as
    the ledger knew datasets before sketches (the first key of a dataset, still)."""

    sketch: Sketch
    content_key: str


@dataclass(frozen=True)
class Identity:
    """The dataset a release reads, for the budget: ``key`` is the ledger's key for it, and
    ``aliases`` every key whose spends are this dataset's (each earlier dataset its rows match,
    and its content key)."""

    key: str
    aliases: frozenset[str]


def content_key(table, upload: Upload) -> str:
    """The key the ledger gave a dataset before sketches, kept as the key of a dataset no
    earlier release matches (so that spends recorded before still count): a hash of the rows
    (pandas' ``hash_pandas_object``, columns in the order of their names, rows sorted) with the
    sorted names; out of core, the upload's SHA-256."""
    engine = table.engine
    if not isinstance(engine, PandasEngine):
        return upload.sha256
    names = sorted(engine.columns)
    frame = engine.frame[names].astype(str)
    rows = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    rows.sort()
    digest = hashlib.sha256(json.dumps(names).encode())
    digest.update(rows.tobytes())
    return digest.hexdigest()


def identify(session: Session, source_id: str, rows: Rows) -> Identity:
    """The dataset ``rows`` are, among the source's earlier releases: every stored sketch that
    is the same dataset (:func:`broker.privacy.identity.same_dataset`) makes its key an alias,
    and the most similar one names it; none: the content key does, a new dataset."""
    matched = [
        (similarity(rows.sketch, sketch), key)
        for key, sketch in ledger.sketches_near(session, source_id, rows.sketch.distinct)
        if same_dataset(rows.sketch, sketch)
    ]
    key = max(matched)[1] if matched else rows.content_key
    return Identity(key, frozenset({rows.content_key, *(k for _, k in matched)}))


def _spends(
    session: Session, parties: Parties, request: TransferRequest, identity: Identity
) -> list[Spend]:
    """The pair's spends in the longest window, those of this dataset under its one key."""
    if parties.destination is None:
        return []
    days = lookback(parties, request)
    if days == 0:
        return []
    since = None if days is None else datetime.now(UTC) - timedelta(days=days)
    return [
        replace(spend, dataset_key=identity.key) if spend.dataset_key in identity.aliases else spend
        for spend in ledger.spends(session, parties.source.id, parties.destination.id, since)
    ]


def _transfer(
    decided: Decided,
    decision: ReleaseDecision,
    answers: list[dict[str, Any]] | None,
    dataset_key: str,
) -> Transfer:
    approved = answers is not None
    parties, request, planned = decided.parties, decided.request, decided.planned
    upload, table, transfer_id = decided.upload, decided.table, decided.transfer_id
    name = f"transfer-{transfer_id}.aggregate.json"
    return Transfer(
        id=transfer_id,
        source_id=parties.source.id,
        destination_id=request.destination,
        purpose=policy_spelling(request.purpose, parties),
        status=decision.status,
        anonymize="none",
        quasi_identifiers=[],
        quasi_identifiers_inferred=False,
        sensitive=[],
        report=None,
        rules=[r.stored() for r in decision.rules],
        remedy=None,
        policy_versions=decision.versions,
        dataset=DatasetFacts(
            sha256=upload.sha256,
            size_bytes=upload.size,
            rows=table.engine.rows,
            columns=table.columns,
            filename=upload.filename,
            format=table.format,
            notes=list(table.notes),
            delivered_filename=name if approved else None,
        ).stored(),
        idempotency_key=None if request.dry_run else request.idempotency_key,
        request_fingerprint="",
        created_at=datetime.now(UTC),
        kind=TransferKind.AGGREGATE,
        aggregate=release_document(planned, answers, dataset_key).stored(),
    )


def release_document(
    planned: Plan, answers: list[dict[str, Any]] | None, dataset_key: str
) -> StoredRelease:
    """The stored release of ``planned``: its queries, and ``answers``' results when released
    (``answers``: :func:`broker.privacy.release.compute`'s, None when not released)."""
    approved = answers is not None
    return StoredRelease(
        epsilon=show(planned.epsilon),
        epsilon_exact=stored(planned.epsilon),
        delta=show(planned.delta),
        delta_exact=stored(planned.delta),
        spent=approved,
        dataset_key=dataset_key,
        queries=planned.as_dict(),
        answers=[answer["result"] for answer in answers] if approved else None,
        released=approved,
    )


def payload_of(
    transfer: Transfer, planned: Plan, release: StoredRelease, person_key: bool
) -> bytes:
    """What the destination receives: the answers with their mechanism, epsilon and
    accuracy, as the stored release holds them; never the dataset's key, size or name."""
    document = {
        "kind": TransferKind.AGGREGATE,
        "transfer_id": transfer.id,
        "source": transfer.source_id,
        "purpose": transfer.purpose,
        "released_at": transfer.created_at.isoformat(),
        "epsilon": show(planned.epsilon),
        "delta": show(planned.delta),
        "guarantee": _guarantee(planned, person_key),
        "answers": release.delivered_answers(),
    }
    return json.dumps(document, indent=1, allow_nan=False).encode()


def _guarantee(planned: Plan, person_key: bool) -> str:
    """The guarantee in words: what one person is, as the release bounded it."""
    rows = sorted({part.contributions for part in planned.parts})
    most = rows[-1]
    if person_key:
        who = (
            f"each person (a person key named whose each row is) counted in at most {most} "
            f"row{'s' if most > 1 else ''} of each query"
        )
    elif most == 1:
        who = (
            "each row taken to be one person (no person key was declared: a person with r rows "
            "is protected at r times epsilon)"
        )
    else:
        who = f"each person taken to hold at most {most} rows of a query (the sender's word)"
    return (
        "each answer is differentially private (OpenDP); together the answers spend epsilon "
        f"{show(planned.epsilon)} and delta {show(planned.delta)} for {who}"
    )

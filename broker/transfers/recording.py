"""Recording a decision, of either kind, in one place.

A decision is written as one transaction (the caller commits): the transfer row, its outbox row
when it was approved (:func:`outbox_row`, what :mod:`broker.delivery` sends), the rows of its
kind, and the audit entry ``transfer.decided``. The rows of a kind: what a microdata transfer
released, for the linkage rule (:class:`~broker.transfers.models.ReleasedClasses`); an aggregate
release's spend and sketch in the privacy budget ledger
(:class:`~broker.transfers.models.PrivacySpend`, :class:`~broker.transfers.models.DatasetSketch`).
The decision of each kind (:mod:`broker.transfers.microdata`, :mod:`broker.transfers.aggregate`)
takes its own lock and checks around this.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.delivery.models import Delivery
from broker.storage.db import Base
from broker.storage.rows import insert_objects
from broker.transfers import repository
from broker.transfers.facts import DatasetFacts
from broker.transfers.models import Transfer
from broker.wire import headers as h
from broker.wire.signing import content_digest
from broker.wire.statuses import DeliveryStatus

DECIDED = "transfer.decided"


def outbox_row(
    transfer: Transfer,
    payload_type: str,
    *,
    payload: bytes | None = None,
    payload_file: str | None = None,
    due: datetime | None = None,
) -> Delivery:
    """The outbox row of an approved transfer, due at once: what leaves (bytes, or the file the
    broker wrote) and its media type, as the broker wrote it (never the sender's say-so), and
    all a delivery needs besides: the parties and the headers (:func:`delivery_headers`)."""
    return Delivery(
        transfer_id=transfer.id,
        source_id=transfer.source_id,
        destination_id=transfer.destination_id,
        headers=delivery_headers(transfer, payload_type),
        status=DeliveryStatus.PENDING,
        attempts=0,
        next_attempt_at=due or transfer.created_at,
        payload=payload,
        payload_file=payload_file,
        payload_type=payload_type,
    )


def delivery_headers(transfer: Transfer, payload_type: str) -> dict[str, str]:
    """The headers a delivery of ``transfer`` carries (:mod:`broker.wire.headers`), but
    ``Content-Length`` and the signature, which each attempt adds. The digest is of what was
    written, hashed when it was (``dataset.delivered_sha256``): the member checks it against
    what arrives, so data altered since is refused, never delivered as approved."""
    dataset = DatasetFacts.of(transfer.dataset)
    # The broker's own name for what it wrote: the sender's file name is free text that would
    # cross the border unmeasured, so it is never a fallback.
    filename = dataset.delivered_filename or ""
    return {
        h.CONTENT_TYPE: payload_type,
        h.CONTENT_DIGEST: content_digest(dataset.delivered_sha256),
        h.IDEMPOTENCY_KEY: transfer.id,
        h.RECIPIENT: transfer.destination_id,
        h.TRANSFER: transfer.id,
        h.SOURCE: transfer.source_id,
        # Percent-encoded: header values are ASCII, purposes and file names need not be.
        h.PURPOSE: quote(transfer.purpose, safe=""),
        h.DECISION: transfer.status,
        h.FILENAME: quote(filename, safe=""),
        h.ANONYMIZED: "true" if dataset.anonymized else "false",
        h.AGREEMENT: transfer.agreement_id or "",
        h.RETAIN_UNTIL: h.retain_until(transfer.retain_until),
    }


def record(
    session: Session,
    transfer: Transfer,
    delivery: Delivery | None,
    audit_details: dict[str, Any],
    rows: Iterable[Base] = (),
) -> None:
    """Write the decision: the transfer with its outbox row (or none), the rows of its kind
    (after the transfer, which they refer to), and its audit entry; not committed."""
    repository.add(session, transfer, delivery)
    insert_objects(session, *rows)
    audit.record(session, transfer.source_id, DECIDED, transfer.id, audit_details)

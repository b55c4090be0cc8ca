"""Work that spans domains, named here so that no service imports another domain's service.

Each function is one use case that needs two domains; it calls their services (or their
repositories) in order, as Netflix's dispatch does in ``case/flows.py``. A service of one domain
never imports the service of another: when a use case needs that, it lives here.

- :func:`redeliver`: a transfer's source (or an admin) asks for its failed delivery again:
  the transfer says who may ask, the outbox requeues it.
- :func:`record_health_check`: a health check's finding is the member's health; a member seen
  up again after being down has its held deliveries made due now, whatever backoff they were
  waiting out (they were held for its being down, and it is up).
- :func:`update_policy`: a jurisdiction's F-SLA record gets a new version (PUT or a merge
  patch); the agreements its members made that the record no longer allows are suspended (and
  those it allows again restored), in the same transaction.
- :func:`replay_policy`: a draft F-SLA record replayed over a jurisdiction's past transfers,
  each with the other party's record at the version its decision used; nothing is saved.
- :func:`withdraw_dataset`: a dataset leaves the catalog and the negotiations about it that are
  not over end, in one transaction (agreements already made stay in force).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from broker.callers import Caller
from broker.catalog import service as catalog
from broker.delivery import repository as outbox
from broker.delivery import service as delivery
from broker.fsla import replay as replay_
from broker.fsla.models import FSLARecord
from broker.members import service as members
from broker.members.health import Health, changed
from broker.negotiations import agreements
from broker.negotiations import service as negotiations
from broker.policies import repository as policies_repository
from broker.policies import service as policies
from broker.policies.models import PolicyVersion
from broker.transfers import repository as transfers_repository
from broker.transfers import service as transfers
from broker.transfers.models import Transfer
from broker.wire.statuses import HealthState


def redeliver(session: Session, caller: Caller, transfer_id: str) -> None:
    """Queue a transfer's failed delivery again (its source or an admin; 404 for anyone else,
    409 when there is nothing to redeliver); audited."""
    transfers.get_sent(session, caller, transfer_id)
    delivery.redeliver(session, caller.name, transfer_id)


def record_health_check(
    factory: sessionmaker[Session], member_id: str, ok: bool, reason: str | None, down_after: int
) -> tuple[Health, Health]:
    """Record what a health check of ``member_id`` found; returns its health before and after.
    Seen up after being down: its held deliveries are due now."""
    now = datetime.now(UTC)
    with factory() as session:
        before, after = members.record_check(session, member_id, ok, reason, down_after, now)
        if changed(before, after) and before.state == HealthState.DOWN:
            outbox.make_due(session, member_id, now)
        session.commit()
    return before, after


def withdraw_dataset(session: Session, caller: Caller, dataset_id: str) -> None:
    """Take a dataset out of the catalog for good (its provider or an admin), ending the
    negotiations about it that are not over; nothing when it was withdrawn already."""
    withdrawn = catalog.withdraw(session, caller, dataset_id)
    if withdrawn is not None:
        reason = f"dataset {withdrawn} was withdrawn"
        negotiations.end_for_dataset(session, withdrawn, reason)
    session.commit()


def update_policy(
    session: Session,
    jurisdiction: str,
    actor: str,
    if_match: str | None,
    record: FSLARecord | None = None,
    merge_patch: Any = None,
) -> tuple[PolicyVersion, bool]:
    """Save a jurisdiction's F-SLA record (``record``, or ``merge_patch`` applied to the
    current one) as a new version, and review the agreements of its members when it replaced
    one; returns the current row and whether a version was created."""
    if record is not None:
        row, created = policies.update(session, jurisdiction, record, actor, if_match)
    else:
        row, created = policies.patch(session, jurisdiction, merge_patch, actor, if_match)
    if created and row.version > 1:  # agreements its members made may no longer hold
        agreements.review(session, row.jurisdiction, actor)
    session.commit()
    return row, created


@dataclass(frozen=True)
class ReplayPage:
    """Each transfer examined with its replay, newest first."""

    replays: list[tuple[Transfer, replay_.Replay]]
    next_before: datetime | None


def replay_policy(
    session: Session,
    jurisdiction: str,
    draft: FSLARecord,
    limit: int,
    since: datetime | None = None,
    before: datetime | None = None,
) -> ReplayPage:
    """Replay ``draft`` over the last ``limit`` transfers from or to ``jurisdiction`` (created
    at or after ``since``, before ``before``), newest first; nothing is saved.

    Each is judged from its stored report by :func:`broker.fsla.replay.replay`, with the other
    party's record at the version the decision used."""
    policies.check_path(jurisdiction, draft)
    code = jurisdiction.upper()
    rows = transfers_repository.involving(session, code, since, before, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    records: dict[tuple[str, int], FSLARecord | None] = {}

    def used(where: str | None, versions: dict[str, int]) -> FSLARecord | None:
        if where is None or where not in versions:
            return None
        key = (where, versions[where])
        if key not in records:
            row = policies_repository.version(session, *key)
            records[key] = policies.record_of(row) if row is not None else None
        return records[key]

    replays = []
    for transfer, source_jurisdiction, destination_jurisdiction in rows:
        past = replay_.PastDecision(
            transfer_id=transfer.id,
            status=transfer.status,
            source_jurisdiction=source_jurisdiction,
            destination_jurisdiction=destination_jurisdiction,
            purpose=transfer.purpose,
            quasi_identifiers=tuple(transfer.quasi_identifiers),
            sensitive=tuple(transfer.sensitive),
            report=transfer.report,
            rules=transfer.rules,
            remedy=transfer.remedy,
            source_policy=used(source_jurisdiction, transfer.policy_versions),
            destination_policy=used(destination_jurisdiction, transfer.policy_versions),
            kind=transfer.kind or "microdata",
        )
        replays.append((transfer, replay_.replay(past, code, draft)))
    next_before = rows[-1][0].created_at if more and rows else None
    return ReplayPage(replays, next_before)

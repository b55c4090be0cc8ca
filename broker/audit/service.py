"""The append-only, hash-chained audit log.

Each entry's hash is SHA-256 over the previous entry's hash (64 hex digits) followed by the
entry's own canonical JSON (id, UTC timestamp, actor, action, subject, details). Changing,
deleting or reordering any row breaks every hash after it, which :func:`verify` finds. Entries
are written by the service that makes the change, inside its transaction, so a decision and its
audit entry commit together.

The canonical JSON is named by each entry's ``hash_rule`` (:data:`RULES`). New entries use
``rfc8785``: RFC 8785 JSON (any language rebuilds it), with the rule itself among the hashed
members, so that the column cannot be changed without breaking the hash. Entries written before
are ``sorted-json`` (Python's sorted JSON, :func:`broker.wire.canonical.sorted_json`) and are
verified by it: the table refuses UPDATE, so a chain is never rewritten, and a head exported
earlier (``fedbroker audit head``) stays valid. A chain moves to a newer rule once and never
back: an older rule after a newer one is reported as a break.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from broker.audit import repository
from broker.audit.models import AuditEntry
from broker.wire.canonical import canonical_json, sha256_of

GENESIS = "0" * 64
LEGACY_RULE = "sorted-json"
RULE = "rfc8785"
RULES = (LEGACY_RULE, RULE)  # oldest first


def _timestamp(moment: datetime) -> str:
    if moment.tzinfo is None:  # SQLite gives back naive datetimes; they were written in UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_hash(
    previous_hash: str,
    entry_id: int,
    created_at: datetime,
    actor: str,
    action: str,
    subject: str,
    details: dict[str, Any],
    rule: str = RULE,
) -> str:
    """The hash of an entry by ``rule`` (``ValueError`` for a rule not in :data:`RULES`)."""
    body = {
        "id": entry_id,
        "created_at": _timestamp(created_at),
        "actor": actor,
        "action": action,
        "subject": subject,
        "details": details,
    }
    if rule == RULE:
        body["hash_rule"] = RULE
        return hashlib.sha256(previous_hash.encode() + canonical_json(body)).hexdigest()
    if rule == LEGACY_RULE:
        return sha256_of(body, prefix=previous_hash)
    raise ValueError(f"unknown hash rule {rule!r}")


def record(
    session: Session, actor: str, action: str, subject: str, details: dict[str, Any]
) -> AuditEntry:
    """Append an entry in the caller's transaction (the caller commits)."""
    repository.lock_for_append(session)
    previous = repository.last(session)
    entry_id = previous.id + 1 if previous else 1
    previous_hash = previous.hash if previous else GENESIS
    now = datetime.now(UTC)
    details = json.loads(json.dumps(details))  # exactly what the JSON column will give back
    entry = AuditEntry(
        id=entry_id,
        created_at=now,
        actor=actor,
        action=action,
        subject=subject,
        details=details,
        previous_hash=previous_hash,
        hash=entry_hash(previous_hash, entry_id, now, actor, action, subject, details),
        hash_rule=RULE,
    )
    repository.add(session, entry)
    return entry


@dataclass(frozen=True)
class Verification:
    """``head_id``/``head_hash``: the last entry checked. A chain cannot show that entries were
    removed from its end, so keep the head somewhere else and compare it later."""

    valid: bool
    entries_checked: int
    first_invalid_id: int | None = None
    reason: str | None = None
    head_id: int | None = None
    head_hash: str | None = None


def verify(session: Session) -> Verification:
    """Walk the chain from the first entry and report the first one that does not fit."""
    expected_previous, expected_id, checked, newest_rule = GENESIS, 1, 0, 0
    for entry in repository.stream(session):
        if entry.id != expected_id:
            return Verification(
                False, checked, entry.id, f"entry {expected_id} is missing before entry {entry.id}"
            )
        if entry.previous_hash != expected_previous:
            return Verification(
                False, checked, entry.id, "its previous_hash does not match the entry before it"
            )
        if entry.hash_rule not in RULES:
            return Verification(False, checked, entry.id, f"unknown hash rule {entry.hash_rule!r}")
        if RULES.index(entry.hash_rule) < newest_rule:
            return Verification(
                False,
                checked,
                entry.id,
                f"hash rule {entry.hash_rule!r} after {RULES[newest_rule]!r}: a chain never "
                "goes back to an older rule",
            )
        newest_rule = RULES.index(entry.hash_rule)
        recomputed = entry_hash(
            entry.previous_hash,
            entry.id,
            entry.created_at,
            entry.actor,
            entry.action,
            entry.subject,
            entry.details,
            entry.hash_rule,
        )
        if recomputed != entry.hash:
            return Verification(
                False, checked, entry.id, "its content does not match its hash: the row was altered"
            )
        expected_previous, expected_id, checked = entry.hash, entry.id + 1, checked + 1
    head = (expected_id - 1, expected_previous) if checked else (None, None)
    return Verification(True, checked, head_id=head[0], head_hash=head[1])


def check_anchor(session: Session, anchor_id: int, anchor_hash: str) -> Verification:
    """Verify the chain, then that it still holds the head exported earlier (an *anchor*).

    The chain alone cannot show entries cut from its end; a head kept elsewhere can: the chain
    must reach ``anchor_id``, and that entry must still have ``anchor_hash``.
    """
    verification = verify(session)
    if not verification.valid:
        return verification
    head = verification.head_id or 0
    if head < anchor_id:
        return Verification(
            False,
            verification.entries_checked,
            head + 1,
            f"the chain ends at entry {head}, before the anchored entry {anchor_id}: entries "
            "were cut from its end",
        )
    anchored = repository.get(session, anchor_id)
    if anchored is None or anchored.hash != anchor_hash:
        return Verification(
            False,
            verification.entries_checked,
            anchor_id,
            f"entry {anchor_id} no longer has the anchored hash: the chain was rewritten",
        )
    return verification


def entries(session: Session, after_id: int, limit: int) -> list[AuditEntry]:
    return repository.page(session, after_id, limit)

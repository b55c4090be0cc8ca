"""The two members of a transfer and their jurisdictions' F-SLA records, as a decision of any
kind reads them."""

from __future__ import annotations

from sqlalchemy.orm import Session

from broker.errors import NotFound
from broker.fsla.decide import Parties, Party
from broker.fsla.models import FSLARecord
from broker.members import repository as members
from broker.members.health import Health


def read_parties(session: Session, source_id: str, destination_id: str) -> Parties:
    """The two members and their jurisdictions' current F-SLA versions, in one query."""
    return read_parties_and_health(session, source_id, destination_id)[0]


def read_parties_and_health(
    session: Session, source_id: str, destination_id: str
) -> tuple[Parties, Health | None]:
    """:func:`read_parties`, and the destination's health as the broker last checked it (None
    when never checked, or no such member), in the same query."""
    rows = {row.id: row for row in members.parties(session, (source_id, destination_id))}
    parties = _parties_of(rows, source_id, destination_id)
    row = rows.get(destination_id)
    if row is None or row.health_state is None:
        return parties, None
    return parties, Health(
        row.health_state, row.health_since, row.health_checked_at, row.health_reason
    )


def _parties_of(rows: dict, source_id: str, destination_id: str) -> Parties:
    found = {}
    for row in filter(None, (rows.get(source_id), rows.get(destination_id))):
        if row.version is None:
            raise NotFound(f"No F-SLA record for jurisdiction {row.jurisdiction!r}")
        found[row.jurisdiction] = (FSLARecord.model_validate(row.document), row.version)

    def party(member_id: str) -> Party | None:
        row = rows.get(member_id)
        return row and Party(row.id, row.jurisdiction, row.status)

    return Parties(party(source_id), party(destination_id), found)


def policy_spelling(purpose: str, parties: Parties) -> str:
    """The purpose as the source's F-SLA record spells it: its letter case would be a channel."""
    record = parties.policies[parties.source.jurisdiction][0]
    wanted = purpose.strip().casefold()
    return next((p for p in record.allowed_purposes if p.casefold() == wanted), purpose)

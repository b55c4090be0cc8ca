"""Agreements: what a finished negotiation leaves, and what other use cases ask of it.

The broker draws an agreement up from the offered terms, signs it with the delivery keys over
canonical JSON (RFC 8785) and records it (:func:`draw_up`); a transfer made under it must find it
in force (:func:`usable`); after an F-SLA record changes, each agreement the records no longer
allow is suspended and restored once they allow it again, both parties told
(:func:`review`). Whether the records allow some terms now is one question for the negotiation
and for its agreement (:func:`not_allowed`). The messages that lead to an agreement are
:mod:`broker.negotiations.service`'s.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from broker.audit import service as audit
from broker.callers import Caller
from broker.catalog import entries as catalog
from broker.delivery.keyring import KeyRing
from broker.errors import Conflict, NotFound
from broker.fsla import offers as offers_
from broker.fsla.offers import Terms
from broker.negotiations import repository
from broker.negotiations.models import Agreement, Negotiation, Notification
from broker.wire.statuses import AgreementState, NegotiationState

BROKER = "broker"  # the broker's name as an actor, in events and the audit log


def get(session: Session, caller: Caller, agreement_id: str) -> Agreement:
    """An agreement its parties and the admins may read; anyone else gets a 404."""
    found = repository.agreement(session, agreement_id)
    if found is None or not (
        caller.is_admin or caller.member_id in (found.provider_id, found.consumer_id)
    ):
        raise NotFound(f"No agreement {agreement_id!r}")
    return found


def page(session: Session, caller: Caller, offset: int, limit: int) -> tuple[list[Agreement], int]:
    return repository.agreements_page(session, caller.member_id, offset, limit)


def usable(session: Session, agreement_id: str) -> Agreement:
    """The agreement a transfer names, if transfers may be made under it now: in force
    (FINALIZED) and not suspended; a problem otherwise."""
    found = repository.agreement(session, agreement_id)
    if found is None:
        raise NotFound(f"No agreement {agreement_id!r}")
    negotiation = repository.get(session, found.negotiation_id)
    if negotiation.state != NegotiationState.FINALIZED:
        raise Conflict(
            f"Agreement {agreement_id} is not in force yet: its negotiation is "
            f"{negotiation.state} (the consumer must verify it first)"
        )
    if found.state == AgreementState.SUSPENDED:
        raise Conflict(f"Agreement {agreement_id} is suspended: {found.reason}")
    return found


def offer_now(
    session: Session,
    about: Negotiation | Agreement,
    purpose: str,
    columns: list[str] | None,
    retention_days: int | None = None,
) -> offers_.Offer:
    """The broker's offer of the dataset a negotiation or an agreement is about, by the F-SLA
    records and the members' statuses as they are now."""
    entry = catalog.entry_at(session, about.dataset_id, about.dataset_version)
    parties = catalog.party_map(session, [about.provider_id, about.consumer_id])
    return offers_.offer(
        entry.listing(),
        parties[about.provider_id],
        parties[about.consumer_id],
        purpose,
        columns,
        retention_days,
    )


def not_allowed(session: Session, about: Negotiation | Agreement, terms: Terms) -> list[str]:
    """Why the records as they are now do not allow ``terms`` (empty: they do)."""
    now = offer_now(session, about, terms.purpose, list(terms.columns))
    return list(now.reasons) if now.terms is None else terms.weaker_than(now.terms)


def draw_up(
    session: Session, negotiation: Negotiation, terms: Terms, keyring: KeyRing
) -> Agreement:
    """The agreement of ``negotiation`` on ``terms`` (checked by the caller), signed and
    recorded in the caller's transaction."""
    now = datetime.now(UTC)
    agreement_id = str(uuid.uuid4())
    entry = catalog.entry_at(session, negotiation.dataset_id, negotiation.dataset_version)
    parties = catalog.party_map(session, [negotiation.provider_id, negotiation.consumer_id])
    versions = {
        party.jurisdiction: party.record_version
        for party in parties.values()
        if party.record_version is not None
    }
    document = {
        "id": agreement_id,
        "negotiation": negotiation.id,
        "dataset": {
            "id": negotiation.dataset_id,
            "version": negotiation.dataset_version,
            "title": entry.version.description["title"],
        },
        "provider": negotiation.provider_id,
        "consumer": negotiation.consumer_id,
        "terms": terms.as_dict(),
        "policy_versions": versions,
        "signed_at": now.isoformat(),
    }
    agreement = Agreement(
        id=agreement_id,
        negotiation_id=negotiation.id,
        dataset_id=negotiation.dataset_id,
        dataset_version=negotiation.dataset_version,
        provider_id=negotiation.provider_id,
        consumer_id=negotiation.consumer_id,
        terms=terms.as_dict(),
        document=document,
        signature=keyring.sign_document(document),
        state=AgreementState.ACTIVE,
        created_at=now,
        updated_at=now,
    )
    repository.add_agreement(session, agreement)
    return agreement


def audit_signed(session: Session, agreement: Agreement) -> None:
    """The audit entry of a signed agreement (after the negotiation's own AGREE entry)."""
    audit.record(
        session,
        BROKER,
        "agreement.signed",
        agreement.id,
        {
            "negotiation": agreement.negotiation_id,
            "provider": agreement.provider_id,
            "consumer": agreement.consumer_id,
            "dataset": agreement.dataset_id,
            "terms": agreement.terms,
        },
    )


def review(session: Session, jurisdiction: str, actor: str) -> None:
    """After ``jurisdiction``'s record changed (in the caller's transaction, before its commit):
    suspend each agreement of its members whose terms the records no longer allow, restore
    each suspended one they allow again, and tell both parties."""
    for found in repository.agreements_of_jurisdiction(session, jurisdiction):
        problems = not_allowed(session, found, Terms.of(found.terms))
        if problems and found.state == AgreementState.ACTIVE:
            found.state, found.reason = AgreementState.SUSPENDED, "; ".join(problems)
            what, action = f"suspended: {found.reason}", "agreement.suspended"
        elif not problems and found.state == AgreementState.SUSPENDED:
            found.state, found.reason = AgreementState.ACTIVE, None
            what, action = "in force again: the F-SLA records allow its terms", "agreement.restored"
        else:
            continue
        found.updated_at = datetime.now(UTC)
        detail = f"Agreement {found.id} is {what} (after {jurisdiction}'s F-SLA record changed)"
        for member_id in (found.provider_id, found.consumer_id):
            notify(session, member_id, action, found.id, detail)
        audit.record(
            session, actor, action, found.id, {"jurisdiction": jurisdiction, "detail": detail}
        )


def notify(session: Session, member_id: str, kind: str, subject: str, detail: str) -> None:
    """A notification for ``member_id`` (``/v1/notifications``)."""
    repository.add_notification(
        session,
        Notification(
            member_id=member_id,
            kind=kind,
            subject=subject,
            detail=detail,
            created_at=datetime.now(UTC),
        ),
    )

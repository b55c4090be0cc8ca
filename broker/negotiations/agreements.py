"""Whether a transfer may be made under an agreement now: what the transfer's decision asks of
the negotiations domain (read only; the agreements are made and reviewed by
:mod:`broker.negotiations.service`)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from broker.errors import Conflict, NotFound
from broker.negotiations import repository
from broker.negotiations.models import Agreement
from broker.wire.statuses import AgreementState, NegotiationState


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

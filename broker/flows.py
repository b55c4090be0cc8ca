"""Work that spans domains, named here so that no service imports another domain's service.

Each function is one use case that needs two domains; it calls their services (or their
repositories) in order, as Netflix's dispatch does in ``case/flows.py``. A service of one domain
never imports the service of another: when a use case needs that, it lives here.

- :func:`redeliver`: a transfer's source (or an admin) asks for its failed delivery again:
  the transfer says who may ask, the outbox requeues it.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from broker.callers import Caller
from broker.delivery import service as delivery
from broker.transfers import service as transfers


def redeliver(session: Session, caller: Caller, transfer_id: str) -> None:
    """Queue a transfer's failed delivery again (its source or an admin; 404 for anyone else,
    409 when there is nothing to redeliver); audited."""
    transfers.get_sent(session, caller, transfer_id)
    delivery.redeliver(session, caller.name, transfer_id)

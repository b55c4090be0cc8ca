"""Ending the negotiations that waited too long for their next message: a chore the job
runner's supervisor runs every ``BROKER_NEGOTIATION_SWEEP_SECONDS``
(:class:`broker.transfers.jobs.Chore`)."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session, sessionmaker

from broker.negotiations import service

log = logging.getLogger("broker.negotiations")


def expire_waiting(factory: sessionmaker[Session], timeout_seconds: float) -> int:
    """End each negotiation that waited longer than ``timeout_seconds``; returns how many."""
    with factory() as session:
        ended = service.expire(session, timeout_seconds)
    if ended:
        log.info("ended %d negotiation(s) that waited too long", ended)
    return ended

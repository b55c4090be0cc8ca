"""The job runner: a thread in the broker process that decides transfers accepted with 202.

One job at a time per process (a decision is CPU-bound); several processes share the queue
through leases (:func:`broker.transfers.service.claim_job`). A job survives a restart: its row is
in the database and its upload in the spool folder, and once its lease runs out any process
takes it over.

Between jobs it also keeps house: it removes the spool files a dead process left, and ends the
contract negotiations that waited too long for their next message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from broker.background import Poller, owner_name
from broker.config import Settings
from broker.monitoring import Monitoring
from broker.negotiations import service as negotiations
from broker.transfers import repository, service
from broker.wire.statuses import JobState, TransferStatus

log = logging.getLogger("broker.jobs")


class JobRunner:
    def __init__(
        self,
        factory: sessionmaker[Session],
        settings: Settings,
        monitoring: Monitoring,
        on_approved: Callable[[], None] = lambda: None,
    ):
        self.factory = factory
        self.settings = settings
        self.monitoring = monitoring
        self.on_approved = on_approved
        self.owner = owner_name()
        self._swept_at = 0.0
        self._expired_at = 0.0
        self._poller = Poller("transfer-jobs", self.run_once, settings.job_poll_seconds, log)
        self.start, self.wake, self.stop = self._poller.start, self._poller.wake, self._poller.stop

    def run_once(self) -> int:
        """Decide one job if there is one; returns how many were run (0 or 1)."""
        now = time.time()
        if now - self._swept_at >= self.settings.spool_sweep_seconds:
            self._swept_at = now
            for orphan in service.sweep_spool(self.factory, self.settings, now):
                log.warning("removed %s: no request, job or delivery used it", orphan)
        if now - self._expired_at >= self.settings.negotiation_sweep_seconds:
            self._expired_at = now
            with self.factory() as session:
                ended = negotiations.expire(session, self.settings.negotiation_timeout_seconds)
            if ended:
                log.info("ended %d negotiation(s) that waited too long", ended)
        job_id = service.claim_job(self.factory, self.owner, self.settings)
        if job_id is None:
            return 0
        try:
            state = service.run_job(self.factory, job_id, self.owner, self.settings)
        except Exception:
            log.exception("job %s failed unexpectedly; it goes back to the queue", job_id)
            service.requeue_job(self.factory, job_id, self.owner)
            return 1
        log.info("job %s: %s", job_id, state)
        if state == JobState.DONE:
            with self.factory() as session:
                transfer = repository.get(session, job_id)
                self.monitoring.count_decision(transfer.status, transfer.rules)
                if transfer.status == TransferStatus.APPROVED:
                    self.on_approved()  # it waits in the outbox
        return 1

"""The delivery worker: a thread in the broker process that drains the outbox.

Several broker processes may run workers on one database; leases keep each row with one of them.
"""

from __future__ import annotations

import logging

import httpx
from sqlalchemy.orm import Session, sessionmaker

from broker.background import Poller, owner_name
from broker.config import Settings
from broker.delivery import service
from broker.delivery.keyring import KeyRing
from broker.monitoring import Monitoring
from broker.wire.statuses import DeliveryStatus

log = logging.getLogger("broker.delivery")
_OUTCOMES = {
    DeliveryStatus.DELIVERED: "delivered",
    DeliveryStatus.PENDING: "retrying",
    DeliveryStatus.FAILED: "failed",
}


class DeliveryWorker:
    def __init__(
        self,
        factory: sessionmaker[Session],
        client: httpx.Client,
        settings: Settings,
        keyring: KeyRing,
        monitoring: Monitoring | None = None,
    ):
        self.factory = factory
        self.client = client
        self.settings = settings
        self.keyring = keyring
        self.monitoring = monitoring
        self.owner = owner_name()
        self._poller = Poller("delivery-worker", self.run_once, settings.delivery_poll_seconds, log)
        self.start, self.wake, self.stop = self._poller.start, self._poller.wake, self._poller.stop

    def run_once(self) -> int:
        """Claim and attempt every due delivery once; returns how many were attempted."""
        service.forget_old_failures(self.factory, self.settings)
        claimed = service.claim(self.factory, self.owner, self.settings)
        for transfer_id in claimed:
            if self._poller.stopping:
                break
            status = service.deliver(
                self.factory, self.client, self.owner, self.settings, self.keyring, transfer_id
            )
            log.info("delivery %s: %s", transfer_id, status)
            if self.monitoring is not None and status in _OUTCOMES:
                self.monitoring.deliveries.labels(_OUTCOMES[status]).inc()
        return len(claimed)

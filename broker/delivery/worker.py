"""The delivery worker: a thread in the broker process that drains the outbox.

Several broker processes may run workers on one database; leases keep each row with one of them.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid

import httpx
from sqlalchemy.orm import Session, sessionmaker

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
        self.owner = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delivery-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look at the outbox now instead of at the next poll (after a new approval)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def run_once(self) -> int:
        """Claim and attempt every due delivery once; returns how many were attempted."""
        service.forget_old_failures(self.factory, self.settings)
        claimed = service.claim(self.factory, self.owner, self.settings)
        for transfer_id in claimed:
            if self._stop.is_set():
                break
            status = service.deliver(
                self.factory, self.client, self.owner, self.settings, self.keyring, transfer_id
            )
            log.info("delivery %s: %s", transfer_id, status)
            if self.monitoring is not None and status in _OUTCOMES:
                self.monitoring.deliveries.labels(_OUTCOMES[status]).inc()
        return len(claimed)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.run_once()
            except Exception:  # a database hiccup must not kill the worker
                log.exception("delivery worker iteration failed; retrying")
                busy = 0
            if not busy:
                self._wake.wait(self.settings.delivery_poll_seconds)
                self._wake.clear()

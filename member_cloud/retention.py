"""Keeping the retention a delivery came with: delete the data when it ends, tell the broker.

The broker says in each delivery until when the data may be kept (``X-Fedbroker-Retain-Until``,
signed, from the F-SLA records and the agreement it was sent under). A thread of the member
cloud looks at the inbox every ``MEMBER_RETENTION_SWEEP_SECONDS``: the data of each delivery
whose time is up is deleted (its metadata stays, saying when), then the broker is told
(``POST /v1/transfers/{id}/erasure``), which records and audits it. A broker that does not
answer is told at the next pass: the deletion itself never waits for it.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from fedbroker.client import BrokerClientError, Client
from member_cloud.storage import Inbox

log = logging.getLogger("member_cloud")


class RetentionKeeper:
    def __init__(self, inbox: Inbox, broker: Client, every_seconds: float):
        self.inbox = inbox
        self.broker = broker
        self.every_seconds = every_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="retention", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def run_once(self, now: datetime | None = None) -> list[str]:
        """Delete what is due and tell the broker; returns the transfer ids deleted now or
        reported now."""
        done = []
        for meta in self.inbox.expired(now or datetime.now(UTC)):
            transfer_id = meta["transfer_id"]
            if not meta.get("erased_at"):
                self.inbox.erase(transfer_id)
                log.info("deleted transfer %s: its retention ended", transfer_id)
            try:
                self.broker.erase_transfer(transfer_id)
            except BrokerClientError as error:
                log.warning(
                    "the broker was not told of deleted transfer %s: %s", transfer_id, error
                )
                continue
            self.inbox.reported(transfer_id)
            done.append(transfer_id)
        return done

    def _run(self) -> None:
        while not self._stop.wait(self.every_seconds):
            try:
                self.run_once()
            except Exception:  # a full disk, say: try again at the next pass
                log.exception("the retention pass failed; trying again later")

"""The delivery worker: a thread in the broker process that drains the outbox.

Several broker processes may run workers on one database; leases keep each row with one of them.
One worker has up to ``delivery_concurrency`` deliveries under way at once, each in a thread of
its own pool: a slow or failing destination holds one of them, never the others, and a pass
claims only as many rows as there are free places, so nothing it leased waits behind a slow
POST. A database error in one delivery (reading it, or recording what its POST gave) stops that
one only: the worker keeps what it knows and tries again at its next pass, within its lease,
instead of leaving it to wait the lease out. Exactly once still holds: a row is leased by one
worker at a time, an outcome is recorded only while its lease is held, and a member stores a
transfer once whatever the number of POSTs that brought it.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from typing import Protocol

import httpx
from sqlalchemy.orm import Session, sessionmaker

from broker.background import IDLE_POLL_SECONDS, Poller, owner_name
from broker.config import Settings
from broker.delivery import service
from broker.delivery.handoff import Lease
from broker.delivery.keyring import KeyRing
from broker.wire.statuses import DeliveryStatus

log = logging.getLogger("broker.delivery")
_FORGET_EVERY_SECONDS = 60.0  # expired failed payloads: dropped this often
_OUTCOMES = {
    DeliveryStatus.DELIVERED: "delivered",
    DeliveryStatus.PENDING: "retrying",
    DeliveryStatus.FAILED: "failed",
}


class Counts(Protocol):
    """Where the worker counts the outcome of each attempt: the app passes its
    :class:`broker.web.monitoring.Monitoring` (the web layer; delivery does not import it)."""

    def count_delivery(self, outcome: str) -> None: ...


class DeliveryWorker:
    def __init__(
        self,
        factory: sessionmaker[Session],
        client: httpx.Client,
        settings: Settings,
        keyring: KeyRing,
        monitoring: Counts | None = None,
    ):
        self.factory = factory
        self.client = client
        self.settings = settings
        self.keyring = keyring
        self.monitoring = monitoring
        self.owner = owner_name()
        self._lock = threading.Lock()
        self._under_way: set[str] = set()
        self._reserved = 0  # places reserved by decisions not yet recorded (Handoff)
        self._futures: set[Future] = set()
        self._forgot_at = float("-inf")
        # Deliveries a database error interrupted, with what their attempt gave (None: not
        # attempted) and until when our lease holds them (monotonic seconds).
        self._interrupted: dict[str, tuple[service.Tried | None, float]] = {}
        self._pool = (
            ThreadPoolExecutor(settings.delivery_concurrency, thread_name_prefix="delivery")
            if settings.delivery_concurrency > 1
            else None  # one at a time, in the worker's own thread
        )
        self._poller = Poller(
            "delivery-worker",
            self._pass,
            settings.delivery_poll_seconds,
            log,
            idle_seconds=IDLE_POLL_SECONDS,
        )
        # The last pass filled every free place: more may be due, so a place freed is a reason
        # to look again (else new work wakes the worker itself, or the next poll finds it).
        self._full = False
        self.start, self.wake = self._poller.start, self._poller.wake

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming; wait up to ``timeout`` for the deliveries under way (one cut short
        keeps its lease, and is delivered again once it expires: the member stores it once)."""
        self._poller.stop(timeout)
        if self._pool is not None:
            with self._lock:
                running = list(self._futures)
            wait(running, timeout=timeout)
            self._pool.shutdown(wait=False, cancel_futures=True)

    def run_once(self) -> int:
        """One pass, returning once every delivery it started is settled: how many it claimed.
        It drops expired failed payloads every time (the thread's passes: once a minute)."""
        started, claimed = self._start_due(forget=True)
        wait(started)
        return claimed

    def _pass(self) -> int:
        """The thread's pass: start what is due, without waiting (a delivery that ends wakes
        the thread if the pass left due rows behind). Deliveries tried again do not count as
        work, or a database that stays down would be asked again at once, over and over."""
        forget = time.monotonic() - self._forgot_at >= _FORGET_EVERY_SECONDS
        return self._start_due(forget)[1]

    def _start_due(self, forget: bool) -> tuple[list[Future], int]:
        """Try again what a database error interrupted, then claim due deliveries for the free
        places, and start them all; drop expired failed payloads if ``forget``."""
        now = time.monotonic()
        with self._lock:
            for transfer_id, (_, until) in list(self._interrupted.items()):
                if until < now:  # our lease ran out: the row is due for whoever claims it
                    del self._interrupted[transfer_id]
            free = self.settings.delivery_concurrency - len(self._under_way) - self._reserved
            waiting = [t for t in self._interrupted if t not in self._under_way][: max(free, 0)]
            again = [(t, *self._interrupted.pop(t)) for t in waiting]
        claimed = []
        wanted = free - len(again)
        if wanted > 0:  # read as their attempts read them, in the claim's transaction
            claimed = service.claim(self.factory, self.owner, self.settings, wanted)
        self._full = wanted <= 0 or len(claimed) == wanted
        until = now + self.settings.delivery_lease_seconds
        started = [self._start(*interrupted) for interrupted in again]
        started += [self._start(one.transfer_id, None, until, one.found) for one in claimed]
        if forget:
            self._forgot_at = now
            service.forget_old_failures(self.factory, self.settings)
        return started, len(claimed)

    def reserve(self) -> Lease | None:
        """A free place for a delivery a decision of this process is about to record, the row
        written already leased to this worker (:mod:`broker.delivery.handoff`); None when every
        place is taken, or when the worker does not run in threads of its own (its deliveries
        would run in the deciding request's thread)."""
        if self._pool is None or self._poller.stopping or not self._poller.alive:
            return None
        with self._lock:
            if self.settings.delivery_concurrency - len(self._under_way) - self._reserved <= 0:
                return None
            self._reserved += 1
        seconds = self.settings.delivery_lease_seconds
        expires_at = datetime.now(UTC) + timedelta(seconds=seconds)
        return Lease(self.owner, expires_at, time.monotonic() + seconds)

    def hand(self, lease: Lease, transfer_id: str) -> None:
        """Start the delivery of a row recorded under ``lease`` (its attempt reads the row,
        and finds it ours). Stopping, it is left to its lease running out, as a claimed row
        cut short is."""
        with self._lock:
            self._reserved -= 1
            if self._poller.stopping:
                return
            self._under_way.add(transfer_id)  # with the reservation's release: no pass between
        try:
            self._start(transfer_id, None, lease.until)
        except RuntimeError:  # the pool shut down meanwhile (stopping): the lease runs out
            with self._lock:
                self._under_way.discard(transfer_id)

    def cancel(self, lease: Lease) -> None:
        with self._lock:
            self._reserved -= 1

    def _start(
        self, transfer_id: str, tried: service.Tried | None, until: float, found=None
    ) -> Future:
        with self._lock:
            self._under_way.add(transfer_id)
        if self._pool is None:
            done: Future = Future()
            done.set_result(self._deliver(transfer_id, tried, until, found))
            return done
        future = self._pool.submit(self._deliver, transfer_id, tried, until, found)
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: Future) -> None:
        with self._lock:
            self._futures.discard(future)

    def _deliver(
        self, transfer_id: str, tried: service.Tried | None, until: float, found=None
    ) -> str | None:
        """Attempt (unless ``tried`` already holds what the attempt gave; ``found``: what the
        claim read of it) and settle one delivery; None when stopping or interrupted by an
        error."""
        status = None
        try:
            if self._poller.stopping:
                return None
            if tried is None:
                attempted = service.attempt(
                    self.factory,
                    self.client,
                    self.owner,
                    self.settings,
                    self.keyring,
                    transfer_id,
                    found=found,
                )
                if isinstance(attempted, str):  # nothing attempted: lease lost, or held
                    status = attempted
                    return status
                tried = attempted
            status = service.settle(self.factory, self.owner, self.settings, tried)
            return status
        except Exception as error:  # a database error: this delivery only, tried again soon
            log.warning(
                "delivery of %s: %s interrupted by %s: %s; trying again at the next pass",
                transfer_id,
                "the attempt" if tried is None else "recording what the attempt gave",
                type(error).__name__,
                error,
            )
            with self._lock:
                self._interrupted[transfer_id] = (tried, until)
            self._poller.wake_in(self.settings.delivery_poll_seconds)  # at the next poll
            return None
        finally:
            with self._lock:
                self._under_way.discard(transfer_id)
            if status is not None:
                log.info("delivery %s: %s", transfer_id, status)
                if self.monitoring is not None and status in _OUTCOMES:
                    self.monitoring.count_delivery(_OUTCOMES[status])
                if status == DeliveryStatus.PENDING and tried is not None:  # to retry later
                    outcome = tried.outcome
                    self._poller.wake_in(
                        service.backoff(self.settings, tried.attempts, outcome.retry_after)
                    )
                if self._pool is not None and self._full:
                    self.wake()  # a place is free (not after an error: the next poll retries)

"""The job runner: threads in the broker process that decide transfers accepted with 202.

``BROKER_JOB_SLOTS`` jobs at a time per process, each in a slot thread of its own; several
processes share the queue through leases (:func:`broker.transfers.job_queue.claim_job`), which
gives the next job to the member with the fewest running and never more than
``BROKER_JOB_SLOTS_PER_MEMBER`` to one member. A job survives a restart: its row is in the
database and its upload in the spool folder, and once its lease runs out any process takes it
over.

A supervisor thread watches the slots. It extends the lease of every job still being worked on
(a stage may take longer than a lease), and fails a job past its wall-clock deadline
(``BROKER_JOB_DEADLINE_SECONDS``) at once, whatever it is doing: its member gets the answer,
and the old thread, once its call returns, finds the job settled and records nothing. The slot
gets a fresh thread only once the old one has ended: a thread stuck in a call that does not
return (a reader that blocks) keeps its slot, so the process never runs more job threads than
``BROKER_JOB_SLOTS``, however many jobs get stuck (the others wait in the queue, or go to
another process). The job itself checks the deadline between stages (and the cluster before
each file it reads), so that work past it stops soon and gives its slot back.

Between passes the supervisor also keeps house: it removes the spool files a dead process left,
and runs the chores of other domains it was given (``broker.main`` gives it the end of the
contract negotiations that waited too long for their next message).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from broker.background import IDLE_POLL_SECONDS, Deadline, Poller, owner_name
from broker.config import Settings
from broker.transfers import job_queue, repository
from broker.wire.statuses import JobState, TransferStatus

log = logging.getLogger("broker.jobs")


@dataclass(eq=False)
class Chore:
    """Housekeeping of another domain, run between passes every ``every_seconds`` (the runner
    is the process's one supervisor thread; ``broker.main`` gives it its chores)."""

    every_seconds: float
    run: Callable[[], None]


@dataclass(eq=False)
class _Slot:
    """One job at a time, in a thread of its own; what the supervisor knows of it."""

    number: int
    poller: Poller | None = None
    job_id: str | None = None
    deadline: Deadline | None = None
    renewed_at: float = 0.0  # time.monotonic() of its last lease extension
    replaced: bool = False  # past its deadline: a fresh thread once this one has ended


class Counts(Protocol):
    """Where the runner counts each decision: the app passes its
    :class:`broker.web.monitoring.Monitoring` (the web layer; transfers do not import it)."""

    def count_decision(self, status: str, rules: list[dict]) -> None: ...


class JobRunner:
    def __init__(
        self,
        factory: sessionmaker[Session],
        settings: Settings,
        monitoring: Counts,
        on_approved: Callable[[], None] = lambda: None,
        chores: Sequence[Chore] = (),
    ):
        self.factory = factory
        self.settings = settings
        self.monitoring = monitoring
        self.on_approved = on_approved
        self.chores = chores
        self._chores_at = [0.0] * len(chores)
        self.owner = owner_name()
        self._swept_at = 0.0
        self._lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._numbered = 0
        self._supervisor = Poller("transfer-jobs", self._supervise, settings.job_poll_seconds, log)

    def start(self) -> None:
        for _ in range(self.settings.job_slots):
            self._open_slot()
        self._supervisor.start()

    def wake(self) -> None:
        """Look for jobs now instead of at the next poll."""
        with self._lock:
            slots = list(self._slots)
        for slot in slots:
            slot.poller.wake()

    def stop(self, timeout: float = 10.0) -> None:
        self._supervisor.stop_soon()
        with self._lock:
            slots = list(self._slots)
        for slot in slots:
            slot.poller.stop_soon()
        end = time.monotonic() + timeout
        self._supervisor.join(max(0.0, end - time.monotonic()))
        for slot in slots:
            slot.poller.join(max(0.0, end - time.monotonic()))

    def run_once(self) -> int:
        """Keep house, then decide one job in the calling thread if there is one; returns how
        many were run (0 or 1). What each slot does, and what tests call."""
        self._keep_house()
        return self._decide_one(None)

    # --- the slots ------------------------------------------------------------------------------

    def _open_slot(self) -> None:
        with self._lock:
            self._numbered += 1
            slot = _Slot(self._numbered)
            slot.poller = Poller(
                f"transfer-jobs-{slot.number}",
                lambda: self._slot_pass(slot),
                self.settings.job_poll_seconds,
                log,
                idle_seconds=IDLE_POLL_SECONDS,
            )
            self._slots.append(slot)
        slot.poller.start()

    def _slot_pass(self, slot: _Slot) -> int:
        if slot.replaced:
            slot.poller.stop_soon()
            return 0
        return self._decide_one(slot)

    def _decide_one(self, slot: _Slot | None) -> int:
        job_id = job_queue.claim_job(self.factory, self.owner, self.settings)
        if job_id is None:
            return 0
        deadline = Deadline.after(self.settings.job_deadline_seconds)
        if slot is not None:
            with self._lock:
                slot.job_id, slot.deadline, slot.renewed_at = job_id, deadline, time.monotonic()
        try:
            state = job_queue.run_job(self.factory, job_id, self.owner, self.settings, deadline)
        except Exception:
            if job_queue.requeue_job(self.factory, job_id, self.owner):
                log.exception("job %s failed unexpectedly; it goes back to the queue", job_id)
            else:
                log.info("job %s, settled meanwhile, ended with an error", job_id, exc_info=True)
            return 1
        finally:
            if slot is not None:
                with self._lock:
                    slot.job_id = slot.deadline = None
        log.info("job %s: %s", job_id, state)
        if state == JobState.DONE:
            with self.factory() as session:
                transfer = repository.get(session, job_id)
                self.monitoring.count_decision(transfer.status, transfer.rules)
                if transfer.status == TransferStatus.APPROVED:
                    self.on_approved()  # it waits in the outbox
        return 1

    # --- the supervisor -------------------------------------------------------------------------

    def _supervise(self) -> int:
        self._keep_house()
        self._reopen_ended_slots()
        now = time.monotonic()
        renew_every = self.settings.job_lease_seconds / 3
        with self._lock:
            busy = [(s, s.job_id, s.deadline) for s in self._slots if s.job_id is not None]
        for slot, job_id, deadline in busy:
            if deadline.passed:
                self._replace(slot, job_id, deadline)
            elif now - slot.renewed_at >= renew_every:
                job_queue.extend_lease(self.factory, job_id, self.owner, self.settings)
                slot.renewed_at = now
        return 0  # it polls at its period

    def _replace(self, slot: _Slot, job_id: str, deadline: Deadline) -> None:
        """Fail the job past its deadline and stop its thread; the slot gets a fresh thread
        once that one has ended (:meth:`_reopen_ended_slots`), never before."""
        failed = job_queue.fail_job(
            self.factory, job_id, self.owner, self.settings, deadline.error()
        )
        with self._lock:
            if slot.job_id != job_id or slot.replaced:  # it just ended by itself
                return
            slot.replaced = True
        slot.poller.stop_soon()
        log.warning(
            "job %s ran past its deadline (%s s)%s; its slot gets a fresh thread once this one "
            "has stopped",
            job_id,
            self.settings.job_deadline_seconds,
            ": failed" if failed else "",
        )
        self._reopen_ended_slots()

    def _reopen_ended_slots(self) -> None:
        """A fresh thread for each slot whose stopped thread has ended: the live job threads
        never outnumber ``job_slots``."""
        with self._lock:
            ended = [s for s in self._slots if s.replaced and not s.poller.alive]
            for slot in ended:
                self._slots.remove(slot)
        for _ in ended:
            if not self._supervisor.stopping:
                self._open_slot()

    def _keep_house(self) -> None:
        now = time.time()
        if now - self._swept_at >= self.settings.spool_sweep_seconds:
            self._swept_at = now
            for orphan in job_queue.sweep_spool(self.factory, self.settings, now):
                log.warning("removed %s: no request, job or delivery used it", orphan)
        for number, chore in enumerate(self.chores):
            if now - self._chores_at[number] >= chore.every_seconds:
                self._chores_at[number] = now
                chore.run()

"""A thread in the broker process that does one kind of queued work: the outbox, the jobs.

Each pass claims what is due (leases in the database keep every row with one process, so several
broker processes may run the same thread on one database) and works on it; when a pass finds
nothing, the thread sleeps until the next poll or until :meth:`Poller.wake` is called. A job's
wall-clock bound is a :class:`Deadline`.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from broker.errors import PayloadTooLarge


class PastDeadline(PayloadTooLarge):
    """A job ran past its wall-clock deadline: too costly for this broker, as data over one of
    its other bounds is (413)."""


@dataclass(frozen=True)
class Deadline:
    """When a job must be over (``time.time()``), and the bound it came from, for the message.

    Checked between the stages of a job and before each file a cluster reads for it (it is sent
    to the workers with the work), so that work past it stops at the next check.
    """

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.time() + seconds, seconds)

    @property
    def passed(self) -> bool:
        return time.time() > self.at

    def check(self) -> None:
        if self.passed:
            raise self.error()

    def error(self) -> PastDeadline:
        return PastDeadline(
            f"The broker stopped deciding this transfer after {self.seconds:,.0f} s, the most "
            "one background job may take (BROKER_JOB_DEADLINE_SECONDS): nothing was stored; "
            "send less data (fewer rows or columns), or ask the federation's admins"
        )


# The longest a quiet poller waits between two looks for work (see :class:`Poller`): what another
# process queued, or a lease another process let run out, is found within it.
IDLE_POLL_SECONDS = 5.0


def owner_name() -> str:
    """This process's name on its leases: the host and a random suffix."""
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


class Poller:
    """Runs ``run_once`` (it returns how much work it found) in a thread: again at once while it
    finds work; when it finds none, after ``poll_seconds``, then after twice as long at each
    idle pass up to ``idle_seconds`` (a quiet process stops asking its database twice a
    second), and at once when :meth:`wake` is called, which starts the count again."""

    def __init__(
        self,
        name: str,
        run_once: Callable[[], int],
        poll_seconds: float,
        log: logging.Logger,
        idle_seconds: float | None = None,
    ):
        self._run_once = run_once
        self._poll_seconds = poll_seconds
        self._idle_seconds = max(poll_seconds, idle_seconds or poll_seconds)
        self._log = log
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._due_at = float("inf")  # a wake asked for later (monotonic seconds)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def alive(self) -> bool:
        """Whether its thread still runs (asked to stop or not): a thread stuck in a call that
        does not return is alive, and still holds what it holds."""
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look for work now instead of at the next poll."""
        self._wake.set()

    def wake_in(self, seconds: float) -> None:
        """Look for work in ``seconds`` at the latest (work this process knows comes due then:
        a retry), however long the idle polls have grown."""
        with self._lock:
            self._due_at = min(self._due_at, time.monotonic() + seconds)

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_soon()
        self.join(timeout)

    def stop_soon(self) -> None:
        """End the thread after its current pass, without waiting for it (it may be the
        calling thread, or stuck in a call that does not return)."""
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        idle = self._poll_seconds
        while not self._stop.is_set():
            try:
                busy = self._run_once()
            except Exception:  # a database hiccup must not kill the thread
                self._log.exception("%s iteration failed; retrying", self._thread.name)
                busy = 0
            if busy:
                idle = self._poll_seconds
                continue
            with self._lock:
                wait = min(idle, max(0.0, self._due_at - time.monotonic()))
            if self._wake.wait(wait):
                idle = self._poll_seconds
            else:
                idle = min(idle * 2, self._idle_seconds)
            self._wake.clear()
            with self._lock:
                if self._due_at <= time.monotonic():
                    self._due_at = float("inf")

"""A thread in the broker process that does one kind of queued work: the outbox, the jobs.

Each pass claims what is due (leases in the database keep every row with one process, so several
broker processes may run the same thread on one database) and works on it; when a pass finds
nothing, the thread sleeps until the next poll or until :meth:`Poller.wake` is called.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from collections.abc import Callable


def owner_name() -> str:
    """This process's name on its leases: the host and a random suffix."""
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


class Poller:
    def __init__(
        self, name: str, run_once: Callable[[], int], poll_seconds: float, log: logging.Logger
    ):
        self._run_once = run_once
        self._poll_seconds = poll_seconds
        self._log = log
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look for work now instead of at the next poll."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self._run_once()
            except Exception:  # a database hiccup must not kill the thread
                self._log.exception("%s iteration failed; retrying", self._thread.name)
                busy = 0
            if not busy:
                self._wake.wait(self._poll_seconds)
                self._wake.clear()

"""PostgreSQL connections that give up on a server that sends no answer.

PostgreSQL times its own statements out (``statement_timeout``), but a server that is frozen
(stopped, swapping, cut off behind a firewall that drops packets) cannot: the kernel still
accepts the broker's bytes, and the broker would wait for the answer forever. psycopg sends
every exchange with the server through :meth:`psycopg.Connection.wait`, which takes a timeout;
:class:`DeadlineConnection` gives it one, a little longer than the statement timeout so that a
server that answers says so itself first. A connection whose answer did not come in time is
closed: its state is unknown, and SQLAlchemy drops a closed connection from its pool. See
``docs/operations-faults.md``.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

# Seconds the broker waits past the statement timeout before it gives a connection up: the
# server's own cancellation, when the server runs, arrives well within it.
ANSWER_MARGIN = 2.0


class DeadlineConnection(psycopg.Connection):
    """A psycopg connection whose every wait for the server ends after ``answer_timeout``
    seconds (None: waits as long as it takes) with an ``OperationalError``."""

    answer_timeout: float | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        limit = self.answer_timeout if timeout is None else None
        if limit is None:
            return super().wait(gen, interval=interval, timeout=timeout)
        started = time.monotonic()
        try:
            return super().wait(gen, interval=interval, timeout=limit)
        except psycopg.OperationalError:
            if time.monotonic() - started < limit:
                raise  # the server answered with an error, or closed the connection
            self.pgconn.finish()  # mid-exchange: nothing more can be sent on it
            raise psycopg.OperationalError(
                f"the database sent no answer within {limit:g} s: the connection was given up"
            ) from None


def connect(answer_timeout: float | None, *args: Any, **kwargs: Any) -> DeadlineConnection:
    """``psycopg.connect(*args, **kwargs)``, every later wait limited to ``answer_timeout``."""
    connection = DeadlineConnection.connect(*args, **kwargs)
    connection.answer_timeout = answer_timeout
    return connection

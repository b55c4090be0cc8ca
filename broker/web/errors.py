"""The broker's errors answered over HTTP: every :class:`~broker.errors.ProblemError`, the
framework's own errors and the database's faults, as RFC 9457 problems
(:func:`install_handlers`, called by :func:`broker.main.create_app`).

The error classes themselves live in :mod:`broker.errors` and :mod:`broker.wire.problem_model`,
which import no web framework: services raise them without loading this layer.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from broker.errors import DATABASE_RETRY_AFTER
from broker.wire import problems


def install_handlers(app: FastAPI) -> None:
    """Answer every error, ours or the framework's, in the one problem+json shape."""
    problems.install(app, "the broker", "Bearer")

    def database_unavailable(request: Request, error: Exception) -> JSONResponse:
        """The database did not answer in time, refused, or has no connection free: a fault
        to wait out. A change may or may not have been recorded when the answer to its commit
        was lost, so the client repeats it (with its ``Idempotency-Key``, where it has one)."""
        reason = getattr(error, "orig", None) or error
        if monitoring := getattr(request.app.state, "monitoring", None):
            monitoring.database_errors.inc()
        if _database_disk_full(reason):
            problems.log.warning("database out of space on %s: %s", request.url.path, reason)
            return problems.insufficient_storage(
                request.url.path,
                "The broker's database ran out of disk space; nothing was recorded. Send the "
                f"request again in {problems.STORAGE_RETRY_AFTER} s; if it persists, tell the "
                "federation's administrators",
            )
        problems.log.warning("database unavailable on %s: %s", request.url.path, reason)
        return problems.problem(
            request.url.path,
            503,
            "database-unavailable",
            "Database unavailable",
            "The broker's database is busy or does not answer. Send the request again in "
            f"{DATABASE_RETRY_AFTER} s (a transfer with the same Idempotency-Key: it is "
            "recorded once, however often it is sent)",
            headers={"Retry-After": str(DATABASE_RETRY_AFTER)},
        )

    @app.exception_handler(InterfaceError)
    def connection_lost(request: Request, error: InterfaceError) -> JSONResponse:
        """A connection found closed is a fault; any other misuse of the driver is a bug."""
        if error.connection_invalidated or "closed" in str(error.orig):
            return database_unavailable(request, error)
        return problems.internal_error(request, error, "the broker")

    for fault in (OperationalError, PoolTimeout):
        app.add_exception_handler(fault, database_unavailable)


def _database_disk_full(reason: BaseException) -> bool:
    """PostgreSQL's ``disk_full`` (SQLSTATE 53100) or SQLite's ``SQLITE_FULL`` (13)."""
    return (
        getattr(reason, "sqlstate", None) == "53100"
        or getattr(reason, "sqlite_errorcode", None) == 13
    )

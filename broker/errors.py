"""Errors of the broker, all answered as RFC 9457 ``application/problem+json``.

Exception tree (each class carries its problem type, title and HTTP status)::

    BrokerError                    500 internal-error
    ├── BadRequest                 400 bad-request
    ├── NotAuthenticated           401 not-authenticated
    ├── Forbidden                  403 forbidden
    ├── NotFound                   404 not-found
    ├── Conflict                   409 conflict
    │   ├── IdempotencyKeyReused   409 idempotency-key-reused
    │   └── InvalidTransition      409 invalid-transition (a negotiation's state refuses it)
    ├── VersionMismatch            412 version-mismatch (If-Match names another version)
    ├── PayloadTooLarge            413 payload-too-large
    ├── UnsupportedMediaType       415 unsupported-media-type
    ├── PreconditionRequired       428 precondition-required (If-Match missing)
    ├── TooManyRequests            429 too-many-requests (with Retry-After)
    ├── Unprocessable              422 unprocessable
    │   ├── InvalidDataset         422 invalid-dataset
    │   ├── UnknownColumn          422 unknown-column
    │   ├── InvalidPolicy          422 invalid-policy
    │   └── InvalidQuery           422 invalid-query (an aggregate release's queries)
    ├── NotImplementedHere         501 not-implemented (an optional extra is not installed)
    └── NotReady                   503 not-ready

Also answered as problems: malformed JSON (422 malformed-json, naming line and column), invalid
fields of a request (422 validation-error), an unreachable or locked database (503
database-unavailable, with Retry-After) and any unexpected error (500 internal-error, logged).

A policy that says no is not an error: it is a 200 answer carrying a decision.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError

from broker.wire import problems
from broker.wire.problems import PROBLEM_MEDIA_TYPE, Problem, example, responses

__all__ = [
    "MAX_INT32",
    "MAX_INT64",
    "PROBLEM_MEDIA_TYPE",
    "Problem",
    "example",
    "install_handlers",
    "responses",
]
# Upper bounds for integer parameters, so no value can overflow a database integer (a 422, not
# a driver error).
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1


class BrokerError(Exception):
    type = "internal-error"
    title = "Internal error"
    status = 500

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = errors

    def as_problem(self) -> dict[str, Any]:
        """The RFC 9457 body of this error, kept where a job records why it failed."""
        body = {
            "type": f"urn:fedbroker:problem:{self.type}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        return body | ({"errors": self.errors} if self.errors else {})


class BadRequest(BrokerError):
    type, title, status = "bad-request", "Bad request", 400


class NotAuthenticated(BrokerError):
    type, title, status = "not-authenticated", "Not authenticated", 401


class Forbidden(BrokerError):
    type, title, status = "forbidden", "Forbidden", 403


class NotFound(BrokerError):
    type, title, status = "not-found", "Not found", 404


class Conflict(BrokerError):
    type, title, status = "conflict", "Conflict", 409


class IdempotencyKeyReused(Conflict):
    type, title = "idempotency-key-reused", "Idempotency key reused with another request"


class InvalidTransition(Conflict):
    """A negotiation message its current state does not accept (or not from this party); the
    detail names the state and what it accepts."""

    type, title = "invalid-transition", "Not allowed in the negotiation's current state"


class VersionMismatch(BrokerError):
    """``If-Match`` names a version that is not the current one (RFC 9110, section 13.1.1)."""

    type, title, status = "version-mismatch", "The record changed since you read it", 412


class PreconditionRequired(BrokerError):
    """A change was sent without ``If-Match`` (RFC 6585, section 3)."""

    type, title, status = "precondition-required", "If-Match required", 428


class PayloadTooLarge(BrokerError):
    type, title, status = "payload-too-large", "Payload too large", 413


class UnsupportedMediaType(BrokerError):
    type, title, status = "unsupported-media-type", "Unsupported media type", 415

    def __init__(self, detail: str, accept_patch: str | None = None):
        super().__init__(detail)
        self.headers = {"Accept-Patch": accept_patch} if accept_patch else {}


class TooManyRequests(BrokerError):
    type, title, status = "too-many-requests", "Too many requests", 429

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.headers = {"Retry-After": str(retry_after)}


class Unprocessable(BrokerError):
    type, title, status = "unprocessable", "Unprocessable request", 422


class InvalidDataset(Unprocessable):
    type, title = "invalid-dataset", "Invalid dataset"


class UnknownColumn(Unprocessable):
    type, title = "unknown-column", "Unknown column"


class InvalidPolicy(Unprocessable):
    type, title = "invalid-policy", "Invalid F-SLA record"


class InvalidQuery(Unprocessable):
    """An aggregate release that cannot be answered as asked (nothing is spent)."""

    type, title = "invalid-query", "Invalid aggregate query"


class NotImplementedHere(BrokerError):
    """This installation lacks an optional part (such as the ``reports`` extra)."""

    type, title, status = "not-implemented", "Not implemented by this installation", 501


class NotReady(BrokerError):
    type, title, status = "not-ready", "Not ready", 503


def install_handlers(app: FastAPI) -> None:
    """Answer every error, ours or the framework's, in the one problem+json shape."""
    problems.install(app, BrokerError, "the broker", "Bearer")

    @app.exception_handler(OperationalError)
    def database_unavailable(request: Request, error: OperationalError) -> JSONResponse:
        problems.log.warning("database unavailable on %s: %s", request.url.path, error.orig)
        if monitoring := getattr(request.app.state, "monitoring", None):
            monitoring.database_errors.inc()
        return problems.problem(
            request.url.path,
            503,
            "database-unavailable",
            "Database unavailable",
            "The broker's database is busy or unreachable; nothing was changed. Try again shortly.",
            headers={"Retry-After": "5"},
        )

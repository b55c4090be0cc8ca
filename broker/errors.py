"""Errors of the broker, all answered as RFC 9457 ``application/problem+json``.

Exception tree (each class carries its problem type, title and HTTP status; the base and the
classes every HTTP service has live in :mod:`broker.wire.problems`, shared with the member
clouds)::

    ProblemError                   500 internal-error
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
    │   ├── InvalidHierarchy       422 invalid-hierarchy (a transfer's hierarchy file)
    │   └── InvalidQuery           422 invalid-query (an aggregate release's queries)
    ├── NotImplementedHere         501 not-implemented (an optional extra is not installed)
    ├── NotReady                   503 not-ready
    └── InsufficientStorage        507 insufficient-storage (the disk is full; with Retry-After)

Also answered as problems: malformed JSON (422 malformed-json, naming line and column), invalid
fields of a request (422 validation-error), a database that is unreachable, frozen, locked or out
of connections (503 database-unavailable, with Retry-After), a full disk met anywhere else, the
database's included (507 insufficient-storage, with Retry-After), and any unexpected error (500
internal-error, logged with its traceback; the connection stays open). What each fault answers,
and the timeouts behind them: ``docs/operations/faults.md``.

A policy that says no is not an error: it is a 200 answer carrying a decision.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from broker.wire import problem_model as problems
from broker.wire.problem_model import (
    PROBLEM_MEDIA_TYPE,
    BadRequest,
    Conflict,
    Forbidden,
    NotAuthenticated,
    NotFound,
    NotReady,
    Problem,
    ProblemError,
    Unprocessable,
    example,
    responses,
)

__all__ = [
    "DATABASE_RETRY_AFTER",
    "FAULT_EXAMPLES",
    "MAX_INT32",
    "MAX_INT64",
    "PROBLEM_MEDIA_TYPE",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "NotAuthenticated",
    "NotFound",
    "NotReady",
    "Problem",
    "ProblemError",
    "Unprocessable",
    "example",
    "responses",
    "storage_faults",
]
log = logging.getLogger("broker.errors")
# Seconds a client waits before trying again when the database did not answer.
DATABASE_RETRY_AFTER = 5
# The OpenAPI examples of the faults a route that takes an upload may answer (with Retry-After).
FAULT_EXAMPLES = {
    503: example(
        503,
        "database-unavailable",
        "Database unavailable",
        "The broker's database is busy or does not answer. Send the request again in 5 s (a "
        "transfer with the same Idempotency-Key: it is recorded once, however often it is sent)",
    ),
    507: example(
        507,
        "insufficient-storage",
        "Insufficient storage",
        "The broker ran out of disk space writing the upload's copy in the spool folder; nothing "
        "was kept. Send the request again in 30 s; if it persists, tell the federation's "
        "administrators",
    ),
}
# Upper bounds for integer parameters, so no value can overflow a database integer (a 422, not
# a driver error).
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1


class IdempotencyKeyReused(Conflict):
    type, title = "idempotency-key-reused", "Idempotency key reused with another request"


class InvalidTransition(Conflict):
    """A negotiation message its current state does not accept (or not from this party); the
    detail names the state and what it accepts."""

    type, title = "invalid-transition", "Not allowed in the negotiation's current state"


class VersionMismatch(ProblemError):
    """``If-Match`` names a version that is not the current one (RFC 9110, section 13.1.1)."""

    type, title, status = "version-mismatch", "The record changed since you read it", 412


class PreconditionRequired(ProblemError):
    """A change was sent without ``If-Match`` (RFC 6585, section 3)."""

    type, title, status = "precondition-required", "If-Match required", 428


class PayloadTooLarge(ProblemError):
    type, title, status = "payload-too-large", "Payload too large", 413


class UnsupportedMediaType(ProblemError):
    type, title, status = "unsupported-media-type", "Unsupported media type", 415

    def __init__(self, detail: str, accept_patch: str | None = None):
        super().__init__(detail, headers={"Accept-Patch": accept_patch} if accept_patch else None)


class TooManyRequests(ProblemError):
    type, title, status = "too-many-requests", "Too many requests", 429

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail, headers={"Retry-After": str(retry_after)})


class InvalidDataset(Unprocessable):
    type, title = "invalid-dataset", "Invalid dataset"


class UnknownColumn(Unprocessable):
    type, title = "unknown-column", "Unknown column"


class InvalidPolicy(Unprocessable):
    type, title = "invalid-policy", "Invalid F-SLA record"


class InvalidHierarchy(Unprocessable):
    """A generalization hierarchy sent with a transfer that cannot be followed as sent."""

    type, title = "invalid-hierarchy", "Invalid generalization hierarchy"


class InvalidQuery(Unprocessable):
    """An aggregate release that cannot be answered as asked (nothing is spent)."""

    type, title = "invalid-query", "Invalid aggregate query"


class NotImplementedHere(ProblemError):
    """This installation lacks an optional part (such as the ``reports`` extra)."""

    type, title, status = "not-implemented", "Not implemented by this installation", 501


class InsufficientStorage(ProblemError):
    """The broker's disk is full (a fault, not the request's): nothing was kept; try again."""

    type, title, status = "insufficient-storage", "Insufficient storage", 507

    def __init__(self, detail: str):
        super().__init__(detail, headers={"Retry-After": str(problems.STORAGE_RETRY_AFTER)})


@contextmanager
def storage_faults(what: str) -> Iterator[None]:
    """Turn a full disk (``ENOSPC``, ``EDQUOT``, ``EFBIG``) met while writing ``what`` into
    :class:`InsufficientStorage`; the writer inside removes what it had half written."""
    try:
        yield
    except OSError as error:
        if not problems.is_disk_full(error):
            raise
        log.warning("out of disk space writing %s: %s", what, error)
        raise InsufficientStorage(
            f"The broker ran out of disk space writing {what}; nothing was kept. Send the "
            f"request again in {problems.STORAGE_RETRY_AFTER} s; if it persists, tell the "
            "federation's administrators"
        ) from None

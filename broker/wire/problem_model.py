"""What a problem is, without a web framework: the RFC 9457 document, the errors answered as one.

The broker's services raise these (:class:`ProblemError` and its subclasses, with their own in
:mod:`broker.errors`) and describe them in OpenAPI (:func:`responses`); pydantic's errors are put
in words a person reads here too (:func:`field_errors`). Nothing here imports FastAPI or
Starlette, so a service that raises a problem does not load the web layer;
:mod:`broker.wire.problems` answers them over HTTP.
"""

from __future__ import annotations

import difflib
import errno
import typing
from http import HTTPStatus
from typing import Any

from pydantic import BaseModel, Field

from broker.wire.headers import REQUEST_ID

PROBLEM_MEDIA_TYPE = "application/problem+json"
_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_HTTP_TYPES = {
    400: "bad-request",
    401: "not-authenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "unprocessable",
    429: "too-many-requests",
}
# What a write meets when the disk (or the process's share of it) is full.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# Seconds a client waits before trying again after a full disk: room comes back as other
# requests end and remove their copies, or once an operator frees some.
STORAGE_RETRY_AFTER = 30


class ProblemError(Exception):
    """An error answered as an RFC 9457 problem; its class carries the type, title and status.

    ``headers`` go out with the answer (``Retry-After``, a 401's own challenge); ``errors``
    lists the fields at fault.
    """

    type = "internal-error"
    title = "Internal error"
    status = 500

    def __init__(
        self,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ):
        super().__init__(detail)
        self.detail = detail
        self.headers = dict(headers or {})
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


class BadRequest(ProblemError):
    type, title, status = "bad-request", "Bad request", 400


class NotAuthenticated(ProblemError):
    type, title, status = "not-authenticated", "Not authenticated", 401


class Forbidden(ProblemError):
    type, title, status = "forbidden", "Forbidden", 403


class NotFound(ProblemError):
    type, title, status = "not-found", "Not found", 404


class Conflict(ProblemError):
    type, title, status = "conflict", "Conflict", 409


class Unprocessable(ProblemError):
    type, title, status = "unprocessable", "Unprocessable request", 422


class NotReady(ProblemError):
    type, title, status = "not-ready", "Not ready", 503


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(examples=["urn:fedbroker:problem:unknown-column"])
    title: str = Field(examples=["Unknown column"])
    status: int = Field(examples=[422])
    detail: str = Field(examples=["Quasi-identifier 'zip' is not a column of the uploaded dataset"])
    instance: str = Field(examples=["/v1/transfers"])
    errors: list[dict[str, Any]] | None = Field(
        None, description="Field-level errors, where the problem is about several fields"
    )
    request_id: str | None = Field(
        None, description=f"The {REQUEST_ID} of the request: quote it, the logs carry it too"
    )


# What each status documents when a route gives no example of its own: a problem a client of
# these services really meets, so /docs shows a different, plausible body for every status.
EXAMPLES: dict[int, tuple[str, str, str]] = {
    400: ("bad-request", "Bad request", "The request cannot be read"),
    401: ("not-authenticated", "Not authenticated", "Send 'Authorization: Bearer <token>'"),
    403: ("forbidden", "Forbidden", "This route is for the federation's administrators"),
    404: ("not-found", "Not found", "No such resource"),
    405: ("method-not-allowed", "Method Not Allowed", "Method Not Allowed"),
    409: ("conflict", "Conflict", "The resource was changed by someone else at the same time"),
    413: ("payload-too-large", "Payload too large", "The request body is larger than accepted"),
    415: (
        "unsupported-media-type",
        "Unsupported media type",
        "Send the body as application/json",
    ),
    422: (
        "validation-error",
        "Invalid request",
        "limit: Input should be less than or equal to 100",
    ),
    429: ("too-many-requests", "Too many requests", "Too many uploads: try again in 12 s"),
    503: ("not-ready", "Not ready", "The database does not answer"),
    507: (
        "insufficient-storage",
        "Insufficient storage",
        "The server's disk is full: nothing was kept. Try again in 30 s",
    ),
}


def example(status: int, type_: str, title: str, detail: str, instance: str = "") -> dict:
    """A problem body for the OpenAPI ``example`` of a response."""
    body: dict[str, Any] = {
        "type": f"urn:fedbroker:problem:{type_}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    return body | ({"instance": instance} if instance else {})


def responses(
    *statuses: int, examples: dict[int, dict[str, Any]] | None = None
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting the problem+json answers of a route.

    Each status shows its own example: ``examples[status]`` when given, else a generic one
    from :data:`EXAMPLES`.
    """
    examples = examples or {}
    entries: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        shown = examples.get(status)
        if shown is None:
            type_, title, detail = EXAMPLES.get(
                status, ("http-error", HTTPStatus(status).phrase, HTTPStatus(status).phrase)
            )
            shown = example(status, type_, title, detail)
        entries[status] = {  # only problem+json: no application/json twin with a sampled body
            "description": HTTPStatus(status).phrase,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": _PROBLEM_REF, "example": shown}},
        }
    return entries


def field_errors(
    errors: list[Any], *, drop: tuple[str, ...] = ("body",), model: type[BaseModel] | None = None
) -> list[dict[str, Any]]:
    """``[{"field", "reason"}]`` of pydantic's errors, in words a person reads.

    The field is the dotted location (list positions as ``[0]``) without the ``drop`` parts;
    pydantic's "Value error, " and "Assertion failed, " prefixes are cut off (the rest is our
    own message). Given the ``model`` that was validated, a field it does not have is answered
    with the one its writer probably meant (``min_kk``: "did you mean 'min_k'?").
    """
    out = []
    for error in errors:
        location = [part for part in error.get("loc", ()) if part not in drop]
        field = ""
        for part in location:
            field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else part)
        reason = str(error.get("msg", "invalid"))
        for prefix in _PYDANTIC_PREFIXES:
            if reason.startswith(prefix):
                reason = reason[len(prefix) :]
        if error.get("type") == "extra_forbidden" and model is not None and location:
            reason = _unknown_field(model, location)
        out.append({"field": field or "body", "reason": reason})
    return out


def _unknown_field(model: type[BaseModel], location: list[Any]) -> str:
    """Why a field is refused, with the nearest of the fields its place has."""
    place: Any = model
    for part in location[:-1]:  # down to the model that holds the unknown field
        fields = getattr(place, "model_fields", {})
        if isinstance(part, int) or part not in fields:
            continue  # a list position, or a mapping's key: the same model below
        place = _model_in(fields[part].annotation)
    known = list(getattr(place, "model_fields", {}))
    if not known:
        return "Extra inputs are not permitted"
    close = difflib.get_close_matches(str(location[-1]), known, n=1)
    if close:
        return f"not a field here (did you mean {close[0]!r}?)"
    return f"not a field here; the fields: {', '.join(known)}"


def _model_in(annotation: Any) -> Any:
    """The pydantic model inside an annotation such as ``RuleSet | None``, else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        if found := _model_in(argument):
            return found
    return None


_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def json_syntax_error(text: str | bytes, position: int, reason: str) -> str:
    """A sentence naming where a JSON text breaks: line and column count from 1."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    before = text[:position]
    line = before.count("\n") + 1
    column = position - (before.rfind("\n") + 1) + 1
    return f"The body is not valid JSON: {reason} at line {line}, column {column}"


def is_disk_full(error: BaseException | None) -> bool:
    """True for an ``OSError`` that says the disk, the quota or the largest file size is full."""
    return isinstance(error, OSError) and error.errno in DISK_FULL

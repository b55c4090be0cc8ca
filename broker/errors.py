"""Errors of the broker, all answered as RFC 9457 ``application/problem+json``.

Exception tree (each class carries its problem type, title and HTTP status)::

    BrokerError                    500 internal-error
    ├── BadRequest                 400 bad-request
    ├── NotAuthenticated           401 not-authenticated
    ├── Forbidden                  403 forbidden
    ├── NotFound                   404 not-found
    ├── Conflict                   409 conflict
    │   ├── IdempotencyKeyReused   409 idempotency-key-reused
    │   └── VersionMismatch        409 version-mismatch
    ├── PayloadTooLarge            413 payload-too-large
    ├── Unprocessable              422 unprocessable
    │   ├── InvalidDataset         422 invalid-dataset
    │   ├── UnknownColumn          422 unknown-column
    │   └── InvalidPolicy          422 invalid-policy
    └── NotReady                   503 not-ready

A policy that says no is not an error: it is a 200 answer carrying a decision.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

PROBLEM_MEDIA_TYPE = "application/problem+json"
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


class VersionMismatch(Conflict):
    type, title = "version-mismatch", "The record changed since you read it"


class PayloadTooLarge(BrokerError):
    type, title, status = "payload-too-large", "Payload too large", 413


class Unprocessable(BrokerError):
    type, title, status = "unprocessable", "Unprocessable request", 422


class InvalidDataset(Unprocessable):
    type, title = "invalid-dataset", "Invalid dataset"


class UnknownColumn(Unprocessable):
    type, title = "unknown-column", "Unknown column"


class InvalidPolicy(Unprocessable):
    type, title = "invalid-policy", "Invalid F-SLA record"


class NotReady(BrokerError):
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


def problem_response(
    request: Request,
    status: int,
    type_: str,
    title: str,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = {
        "type": f"urn:fedbroker:problem:{type_}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
    }
    if errors:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting the problem+json answers of a route."""
    return {
        status: {
            "model": Problem,
            "description": HTTPStatus(status).phrase,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


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
}


class DeclaredOversizeAsProblem:
    """Answer 413 problem+json at once when ``Content-Length`` already exceeds the limit.

    FastAPI's ``max_body_size`` guards streamed bodies (its 413 reaches our handlers), but when
    the declared length is over the limit Starlette swaps any response for a text/plain 413.
    This layer sits outside FastAPI's own middleware so that case keeps the problem shape too.
    """

    def __init__(self, app: ASGIApp, max_body_size: int):
        self.app = app
        self.max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = Headers(scope=scope).get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body_size:
                response = JSONResponse(
                    {
                        "type": "urn:fedbroker:problem:payload-too-large",
                        "title": "Payload too large",
                        "status": 413,
                        "detail": f"The request body ({int(declared):,} bytes) is larger than the "
                        f"{self.max_body_size:,} bytes the broker accepts",
                        "instance": scope.get("path", ""),
                    },
                    status_code=413,
                    media_type=PROBLEM_MEDIA_TYPE,
                    headers={"Connection": "close"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install_handlers(app: FastAPI) -> None:
    """Answer every error, ours or the framework's, in the one problem+json shape."""

    build_stack = app.build_middleware_stack
    # Outermost layer: wraps what FastAPI builds, including its own body limit.
    app.build_middleware_stack = lambda: DeclaredOversizeAsProblem(
        build_stack(), app.max_body_size or 2**62
    )

    @app.exception_handler(BrokerError)
    def broker_error(request: Request, error: BrokerError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return problem_response(
            request, error.status, error.type, error.title, error.detail, error.errors, headers
        )

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        status = error.status_code
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        detail = error.detail if isinstance(error.detail, str) else phrase
        if status == 413:
            detail = "The request body is larger than the broker accepts"
        return problem_response(
            request,
            status,
            _HTTP_TYPES.get(status, "http-error"),
            phrase,
            detail,
            headers=getattr(error, "headers", None),
        )

    @app.exception_handler(RequestValidationError)
    def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "field": ".".join(str(p) for p in e["loc"] if p != "body") or "body",
                "reason": e["msg"],
            }
            for e in error.errors()
        ]
        first = errors[0] if errors else {"field": "body", "reason": "invalid"}
        return problem_response(
            request,
            422,
            "validation-error",
            "Invalid request",
            f"{first['field']}: {first['reason']}",
            errors,
        )

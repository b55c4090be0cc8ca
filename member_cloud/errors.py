"""Errors of the member cloud, all answered as RFC 9457 ``application/problem+json``.

Exception tree (each class carries its problem type, title and HTTP status)::

    MemberError                  500 internal-error
    ├── BadRequest               400 bad-request
    │   └── ChecksumMismatch     400 checksum-mismatch
    ├── NotAuthenticated         401 not-authenticated
    ├── NotFound                 404 not-found
    ├── Conflict                 409 conflict
    ├── InvalidName              422 invalid-name
    └── BrokerUnreachable        502 broker-unreachable

A problem the broker answers (``POST /transfers``) is passed through as the broker wrote it.
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


class MemberError(Exception):
    type = "internal-error"
    title = "Internal error"
    status = 500

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


class BadRequest(MemberError):
    type, title, status = "bad-request", "Bad request", 400


class ChecksumMismatch(BadRequest):
    type, title = "checksum-mismatch", "The body does not match its checksum"


class NotAuthenticated(MemberError):
    type, title, status = "not-authenticated", "Not authenticated", 401


class NotFound(MemberError):
    type, title, status = "not-found", "Not found", 404


class Conflict(MemberError):
    type, title, status = "conflict", "Conflict", 409


class InvalidName(MemberError):
    type, title, status = "invalid-name", "Invalid name", 422


class BrokerUnreachable(MemberError):
    type, title, status = "broker-unreachable", "The broker does not answer", 502


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(examples=["urn:fedbroker:problem:not-found"])
    title: str = Field(examples=["Not found"])
    status: int = Field(examples=[404])
    detail: str = Field(examples=["No dataset named 'patients.csv'"])
    instance: str = Field(examples=["/datasets/patients.csv"])
    errors: list[dict[str, Any]] | None = None


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


def problem(
    path: str,
    status: int,
    type_: str,
    title: str,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": f"urn:fedbroker:problem:{type_}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": path,
    }
    if errors:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


_HTTP_TYPES = {
    400: "bad-request",
    401: "not-authenticated",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "unprocessable",
}


class DeclaredOversizeAsProblem:
    """Answer 413 problem+json at once when ``Content-Length`` already exceeds the limit
    (Starlette would otherwise answer a text/plain 413)."""

    def __init__(self, app: ASGIApp, max_body_size: int):
        self.app = app
        self.max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = Headers(scope=scope).get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body_size:
                response = problem(
                    scope.get("path", ""),
                    413,
                    "payload-too-large",
                    "Payload too large",
                    f"The request body ({int(declared):,} bytes) is larger than the "
                    f"{self.max_body_size:,} bytes this member cloud accepts",
                    headers={"Connection": "close"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install_handlers(app: FastAPI) -> None:
    """Answer every error, ours or the framework's, in the one problem+json shape."""

    @app.exception_handler(MemberError)
    def member_error(request: Request, error: MemberError) -> JSONResponse:
        headers = {"WWW-Authenticate": 'FedbrokerSignature realm="inbox"'}
        return problem(
            request.url.path,
            error.status,
            error.type,
            error.title,
            error.detail,
            headers=headers if error.status == 401 else None,
        )

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        status = error.status_code
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        detail = error.detail if isinstance(error.detail, str) else phrase
        if status == 413:
            detail = "The request body is larger than this member cloud accepts"
        return problem(
            request.url.path,
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
        return problem(
            request.url.path,
            422,
            "validation-error",
            "Invalid request",
            f"{first['field']}: {first['reason']}",
            errors,
        )

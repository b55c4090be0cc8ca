"""RFC 9457 ``application/problem+json`` for a FastAPI service: one shape for every error.

Shared by the broker and the member clouds (it knows nothing of either): the errors are
:mod:`broker.wire.problem_model`'s (one base, ``ProblemError``, whose classes carry ``type``,
``title``, ``status`` and ``detail``, with the errors every HTTP service has), free of any web
framework; each service adds its own subclasses and calls :func:`install` here. The
framework's own errors (404, 405, validation, body size) are answered in the same shape. Every
body names its request (``request_id``, from :mod:`broker.wire.request_id`).

Faults are answered as what they are, not as bugs: a full disk is a 507 with ``Retry-After``
(:func:`insufficient_storage`), and an unexpected error is a 500 that leaves the connection open
for the client's next request (:class:`AnsweredErrorsEndHere`). See ``docs/operations/faults.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from broker.wire import json_limits
from broker.wire.problem_model import (
    _HTTP_TYPES,
    PROBLEM_MEDIA_TYPE,
    STORAGE_RETRY_AFTER,
    Problem,
    ProblemError,
    field_errors,
    is_disk_full,
    json_syntax_error,
)
from broker.wire.request_id import RequestIdMiddleware
from broker.wire.request_id import current as current_request_id

log = logging.getLogger("fedbroker.problems")


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
    if request_id := current_request_id.get():
        body["request_id"] = request_id
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def insufficient_storage(path: str, detail: str) -> JSONResponse:
    """507 Insufficient Storage (RFC 4918, section 11.5) with ``Retry-After``: the request was
    fine, the server had no room to keep what it needed; nothing was kept."""
    return problem(
        path,
        507,
        "insufficient-storage",
        "Insufficient storage",
        detail,
        headers={"Retry-After": str(STORAGE_RETRY_AFTER)},
    )


def internal_error(request: Request, error: BaseException, service: str) -> JSONResponse:
    """500 for an error nobody foresaw: logged with its traceback, nothing of it answered."""
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=error)
    return problem(
        request.url.path,
        500,
        "internal-error",
        "Internal error",
        f"{service[0].upper()}{service[1:]} failed on this request; the error is in its log",
    )


class AnsweredErrorsEndHere:
    """Keep the connection open after an unexpected error has been answered.

    Starlette's outermost layer answers an unexpected error with the service's 500 handler (which
    logs it with its traceback) and then raises it again for the server; uvicorn then closes the
    connection, and a client that keeps connections alive gets no answer to its next request on
    it. Once the answer is complete, the error ends here. An error in the middle of an answer (a
    stream cut short) still reaches the server, which must close the connection.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if not answered:
                raise


class DeclaredOversizeAsProblem:
    """Answer 413 problem+json at once when ``Content-Length`` already exceeds the limit.

    FastAPI's ``max_body_size`` guards streamed bodies (its 413 reaches the handlers below), but
    when the declared length is over the limit Starlette swaps any response for a text/plain 413.
    This layer sits outside FastAPI's own middleware so that case keeps the problem shape too.
    """

    def __init__(self, app: ASGIApp, max_body_size: int, service: str):
        self.app = app
        self.max_body_size = max_body_size
        self.service = service

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
                    f"{self.max_body_size:,} bytes {self.service} accepts",
                    headers={"Connection": "close"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install(
    app: FastAPI,
    service: str,
    authenticate_header: str,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
) -> None:
    """Answer every :class:`ProblemError` and the framework's errors as problems.

    ``service`` names the service in messages ("the broker"); ``authenticate_header`` is the
    ``WWW-Authenticate`` value of 401 answers; ``wrap`` adds an outermost layer of the service's
    own around the body-size one. JSON bodies nested too deeply or holding a number too long
    to parse are 422 problems (:mod:`broker.wire.json_limits`).
    """
    build_stack = app.build_middleware_stack
    limit = app.max_body_size or 2**62

    def outermost() -> ASGIApp:
        stack = DeclaredOversizeAsProblem(
            AnsweredErrorsEndHere(JsonBodyLimits(build_stack())), limit, service
        )
        return RequestIdMiddleware(wrap(stack) if wrap else stack)

    app.build_middleware_stack = outermost  # wraps what FastAPI builds, its body limit included
    build_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI's schema, with the ``Problem`` schema that :func:`responses` refers to."""
        if app.openapi_schema is None:
            schemas = build_openapi().setdefault("components", {}).setdefault("schemas", {})
            schemas.setdefault("Problem", Problem.model_json_schema())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(ProblemError)
    def service_error(request: Request, error: ProblemError) -> JSONResponse:
        headers = dict(error.headers)
        if error.status == 401:  # the error's own challenge, else the service's
            headers.setdefault("WWW-Authenticate", authenticate_header)
        return problem(
            request.url.path,
            error.status,
            error.type,
            error.title,
            error.detail,
            error.errors,
            headers,
        )

    def disk_full(request: Request, error: OSError) -> JSONResponse:
        log.warning("out of disk space on %s %s: %s", request.method, request.url.path, error)
        return insufficient_storage(
            request.url.path,
            f"{service[0].upper()}{service[1:]} ran out of disk space while it kept this "
            f"request; nothing was kept. Send it again in {STORAGE_RETRY_AFTER} s; if it "
            "persists, tell its operators",
        )

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        status = error.status_code
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        detail = error.detail if isinstance(error.detail, str) else phrase
        if status == 400 and is_disk_full(error.__cause__):  # the body's parts spooled to disk
            return disk_full(request, error.__cause__)
        if status == 413:
            detail = f"The request body is larger than {service} accepts"
        return problem(
            request.url.path,
            status,
            _HTTP_TYPES.get(status, "http-error"),
            phrase,
            detail,
            headers=getattr(error, "headers", None),
        )

    @app.exception_handler(Exception)
    def unexpected_error(request: Request, error: Exception) -> JSONResponse:
        return internal_error(request, error, service)

    @app.exception_handler(OSError)
    def os_error(request: Request, error: OSError) -> JSONResponse:
        """A full disk is a fault to wait out (507); any other OSError is unexpected."""
        if is_disk_full(error):
            return disk_full(request, error)
        return unexpected_error(request, error)

    @app.exception_handler(RequestValidationError)
    def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        raw = list(error.errors())
        if raw and raw[0].get("type") == "json_invalid":  # the body could not be parsed at all
            position = next((p for p in raw[0].get("loc", ()) if isinstance(p, int)), 0)
            reason = (raw[0].get("ctx") or {}).get("error", "syntax error")
            detail = json_syntax_error(error.body or "", position, reason)
            return problem(
                request.url.path,
                422,
                "malformed-json",
                "Malformed JSON",
                detail,
                [{"field": "body", "reason": detail}],
            )
        errors = field_errors(raw)
        first = errors[0] if errors else {"field": "body", "reason": "invalid"}
        return problem(
            request.url.path,
            422,
            "validation-error",
            "Invalid request",
            f"{first['field']}: {first['reason']}",
            errors,
        )


def _is_json(headers: Headers) -> bool:
    """Whether the framework parses this request's body as JSON (its media type)."""
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


class JsonBodyLimits:
    """ASGI layer: a JSON request body over the bounds is answered 422 when the route reads
    it. The body is checked as its last chunk arrives (the route's read of it raises an
    ``HTTPException`` the problem handlers answer), so the framework's body-size limit still
    applies first, and a request that never reads its body is not slowed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(Headers(scope=scope)):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def checked() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    body = b"".join(chunks)
                    chunks.clear()
                    try:
                        json_limits.check(body)
                    except json_limits.JsonTooComplex as error:
                        raise StarletteHTTPException(
                            422, f"The request body cannot be read: {error}"
                        ) from None
            return message

        await self.app(scope, checked, send)

"""Request ids and structured logs: every log line and every problem answer names its request.

``X-Request-ID`` comes in (kept when it is 1-128 characters of letters, digits, ``._-``) or is
made (32 hex digits), is set on the answer, and is added as ``request_id`` to every log record
written while the request is served and to every problem+json body. Logs are JSON lines
(``python-json-logger``): ``time``, ``level``, ``logger``, ``message``, ``request_id`` and the
record's extra fields. Shared by the broker and the member clouds.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

from pythonjsonlogger.json import JsonFormatter
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "X-Request-ID"
_ACCEPTED = re.compile(r"[A-Za-z0-9._-]{1,128}")
current: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


class RequestIdMiddleware:
    """Pure ASGI middleware (no buffering): sets the request id for the request's lifetime."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = Headers(scope=scope).get(HEADER, "")
        request_id = offered if _ACCEPTED.fullmatch(offered) else uuid.uuid4().hex
        token = current.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(token)


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current.get()
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """JSON lines on stderr for every logger (uvicorn's included), each with its request id."""
    handler = logging.StreamHandler()
    handler.addFilter(_RequestIdFilter())
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}{request_id}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True

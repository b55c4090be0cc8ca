"""Request ids: every answer, problem and log line of a request names it.

``X-Request-ID`` comes in (kept when it is 1-128 characters of letters, digits, ``._-``) or is
made (32 hex digits), is set on the answer, and is :data:`current` while the request is served:
problem+json bodies (:mod:`broker.wire.problems`) and the broker's log lines
(:mod:`broker.web.requests_log`) read it from there.
"""

from __future__ import annotations

import contextvars
import re
import uuid

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from broker.wire.headers import REQUEST_ID

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
        offered = Headers(scope=scope).get(REQUEST_ID, "")
        request_id = offered if _ACCEPTED.fullmatch(offered) else uuid.uuid4().hex
        token = current.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[REQUEST_ID] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(token)

"""Who may use the member cloud's own API: whoever holds ``MEMBER_LOCAL_TOKEN``.

The datasets, the transfers this member asks for, and what arrived in its inbox may be personal
data, and ``POST /transfers`` spends this member's broker key. With a token set, every request
needs ``Authorization: Bearer <token>``, except:

- ``GET /livez`` and ``GET /readyz`` (health checks: the broker checks ``/readyz``),
- the docs page, ``/openapi.json`` and the docs' static assets (reading them reveals no data),
- ``POST /inbox``: the broker's deliveries, which carry the broker's signature instead
  (``member_cloud.delivery``).

The check is an ASGI layer in front of the routes (:class:`LocalTokenGuard`), so it runs before a
request body is read, and a route added later is protected unless it is listed here. The routes
also declare the ``HTTPBearer`` scheme (:data:`bearer`) so that ``/docs`` offers *Authorize*.

Without a token the member cloud starts only on a loopback address (``member_cloud.config``),
and runs open.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from broker.wire.problems import problem

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="LocalToken",
    description="This member cloud's MEMBER_LOCAL_TOKEN",
)


def declare_bearer(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
) -> None:
    """Declares the scheme in the OpenAPI document; :class:`LocalTokenGuard` does the check."""


def _route_path(scope: Scope) -> str:
    """The path the router matches (without a ``root_path`` prefix), as Starlette computes it."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and (path == root or path[len(root)] == "/"):
        return path[len(root) :]
    return path


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


class LocalTokenGuard:
    """Answer 401 problem+json to a request without the local token, unless it is public.

    ``public`` maps a path to the methods that need no token; ``public_prefixes`` are folders
    (the docs' static assets) whose ``GET`` and ``HEAD`` need none. A browser (``Accept:
    text/html``) asking for ``/`` without a token is sent to ``docs`` (``GET /`` is the
    member's identity, for API clients with the token).
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        public: dict[str, frozenset[str]],
        public_prefixes: tuple[str, ...] = (),
        docs: str | None = None,
    ):
        self.app = app
        self.docs = docs
        self._token_digest = _digest(token.encode())
        self.public = public
        self.public_prefixes = tuple(prefix.rstrip("/") + "/" for prefix in public_prefixes)

    def is_public(self, method: str, path: str) -> bool:
        if method in self.public.get(path, ()):
            return True
        return method in ("GET", "HEAD") and path.startswith(self.public_prefixes)

    def presented(self, scope: Scope) -> bytes | None:
        """The bearer token of the request, as bytes; None without one."""
        values = [value for name, value in scope["headers"] if name == b"authorization"]
        if len(values) != 1:
            return None
        scheme, _, token = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return None
        return token.strip()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # none is served; refuse without looking further
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http" or self.is_public(scope["method"], _route_path(scope)):
            await self.app(scope, receive, send)
            return
        token = self.presented(scope)
        if token is None and self.docs and _browser_at_root(scope):
            await RedirectResponse(self.docs)(scope, receive, send)
            return
        # compare digests: equal lengths, and the time taken says nothing about the token
        if token is not None and hmac.compare_digest(_digest(token), self._token_digest):
            await self.app(scope, receive, send)
            return
        if token is None:
            detail = (
                "Send 'Authorization: Bearer <token>' with this member cloud's local token "
                "(MEMBER_LOCAL_TOKEN)"
            )
            challenge = "Bearer"
        else:
            detail = "The bearer token is not this member cloud's local token"
            challenge = 'Bearer error="invalid_token"'
        response = problem(
            scope["path"],
            401,
            "not-authenticated",
            "Not authenticated",
            detail,
            headers={"WWW-Authenticate": challenge},
        )
        await response(scope, receive, send)


def _browser_at_root(scope: Scope) -> bool:
    if scope["method"] != "GET" or _route_path(scope) != "/":
        return False
    accept = b",".join(value for name, value in scope["headers"] if name == b"accept")
    return b"text/html" in accept

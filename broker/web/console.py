"""The console's request side: who is signed in (the session cookie, checked against the
API's own rule at every page), CSRF tokens, the security headers and the rendering of pages
(the pages themselves are in :mod:`broker.console.router`).

Errors raised by the services are shown as pages with the API's status: a missing or ended
session sends the browser to the sign-in page; what the caller may not see is the API's 404.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

import jinja2
from fastapi import Depends, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute

from broker.callers import Caller
from broker.config import Settings
from broker.console import sessions
from broker.errors import Forbidden, NotAuthenticated
from broker.web.deps import Credential, SessionDep, SettingsDep, caller_of

PREFIX = "/console"
COOKIE = "fedbroker_console"
# The sign-in form's CSRF token, before there is a session: a cookie the form must echo.
SIGN_IN_COOKIE = "fedbroker_console_sign_in"
SIGN_IN = f"{PREFIX}/sign-in"
# No script at all, styles from our own stylesheet only, forms posted only to us, never framed.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_templates = jinja2.Environment(
    loader=jinja2.PackageLoader("broker.console", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


class SignInRequired(NotAuthenticated):
    """No live session: the browser is sent to the sign-in page."""


@dataclass(frozen=True)
class SignedIn:
    caller: Caller
    csrf_token: str


def lifetimes(settings: Settings) -> sessions.Lifetimes:
    return sessions.Lifetimes(
        idle=timedelta(minutes=settings.console_idle_minutes),
        lifetime=timedelta(hours=settings.console_session_hours),
    )


def signed_in(request: Request, session: SessionDep, settings: SettingsDep) -> SignedIn:
    """The person behind the session cookie, as the API's rule finds the token or key they
    signed in with now; a session whose credential no longer works is closed."""
    cookie = request.cookies.get(COOKIE)
    row = sessions.resume(session, cookie, lifetimes(settings))
    if row is None:
        raise SignInRequired("Sign in first")
    credential = Credential(row.credential_kind, row.credential_hash)
    csrf_token = row.csrf_token
    try:
        caller = caller_of(session, settings, credential)
    except (NotAuthenticated, Forbidden):
        sessions.close(session, cookie)
        raise SignInRequired("The token or key of this session no longer works") from None
    person = SignedIn(caller, csrf_token)
    request.state.console_person = person  # an error page still shows who is signed in
    return person


Person = Annotated[SignedIn, Depends(signed_in)]


def check_csrf(person: SignedIn, sent: str | None) -> None:
    """Every form a signed-in person posts carries their session's CSRF token."""
    if not sessions.same_token(person.csrf_token, sent):
        raise Forbidden(
            "This form is out of date or was not sent from the console: open the page again "
            "and resend it"
        )


def render(
    template: str,
    person: SignedIn | None = None,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    page = _templates.get_template(template).render(
        prefix=PREFIX,
        person=person,
        caller=person.caller if person else None,
        **context,
    )
    return HTMLResponse(page, status_code=status_code, headers=HEADERS)


def secure(request: Request) -> bool:
    """Cookies are ``Secure`` when the console is served over https."""
    return request.url.scheme == "https"


def set_cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=secure(request),
    )


def forget_cookie(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(
        name, path=PREFIX, httponly=True, samesite="strict", secure=secure(request)
    )


def redirect(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=HEADERS)


class ConsoleRoute(APIRoute):
    """Errors as pages: no session goes to sign-in; anything else is answered by the handler the
    API would use (a problem: its status, title and words, ``Retry-After`` kept, a traceback
    logged and never shown) and shown as a page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handle(request)
            except SignInRequired:
                return redirect(SIGN_IN)
            except Exception as error:
                answer = await _problem_for(request, error)
                problem = json.loads(answer.body)
                page = render(
                    "error.html",
                    getattr(request.state, "console_person", None),
                    status_code=answer.status_code,
                    title=problem.get("title", "Error"),
                    detail=problem.get("detail", ""),
                )
                if "retry-after" in answer.headers:
                    page.headers["Retry-After"] = answer.headers["retry-after"]
                return page

        return route


async def _problem_for(request: Request, error: Exception) -> Response:
    """The API's answer to ``error``: the app's handler for its nearest class."""
    handlers = request.app.exception_handlers
    handler = next(handlers[kind] for kind in type(error).__mro__ if kind in handlers)
    answer = handler(request, error)
    return await answer if inspect.isawaitable(answer) else answer

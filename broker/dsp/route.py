"""Errors in the protocol's own shape: every error of a protocol route is a 4xx (or 5xx) whose
body is the binding's error document, never an RFC 9457 problem.

:class:`ProtocolRoute` is FastAPI's documented way to wrap a route's handling (a custom
``APIRoute``): the caller's authentication, the message's validation and the service's errors all
happen inside it, so each is answered as a ``CatalogError``, ``ContractNegotiationError`` or
``TransferError``; so is a database that does not answer (503, with ``Retry-After``). The
binding asks for 400 on a message the negotiation's state does not accept (the ``/v1`` API says
409) and 404 where the caller may not see a negotiation (``/v1`` says 403 for some); a message
the market refuses (``/v1``'s 422) is a 400 too.

A negotiation's or a transfer process's error document names the pids the request named (the
path's providerPid, the message's consumerPid). The schema asks for both; where the request
names only one (an initial request has no providerPid yet, a GET no consumerPid), the document
carries the one it has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException

from broker.dsp.documents import MEDIA_TYPE, ProtocolError, error
from broker.errors import DATABASE_RETRY_AFTER, InvalidTransition
from broker.wire.problem_model import Forbidden, ProblemError, field_errors

log = logging.getLogger("fedbroker.dsp")
CATALOG_ERROR = "CatalogError"
NEGOTIATION_ERROR = "ContractNegotiationError"
TRANSFER_ERROR = "TransferError"
PROCESS_ERRORS = (NEGOTIATION_ERROR, TRANSFER_ERROR)  # errors that name the pids


def protocol_route(kind: str) -> type[APIRoute]:
    """The route class whose errors are ``kind`` documents."""

    class ProtocolRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handle = super().get_route_handler()

            async def handled(request: Request) -> Response:
                try:
                    return await handle(request)
                except ProtocolError as found:
                    pids = {**await _pids_of(request, kind), **found.pids}
                    return _answer(kind, found.status, found.reason, pids)
                except RequestValidationError as found:
                    first = (field_errors(list(found.errors())) or [{}])[0]
                    where = first.get("field", "body")
                    reason = f"{where}: {first.get('reason', 'invalid')}"
                    return _answer(kind, 400, reason, await _pids_of(request, kind))
                except HTTPException as found:  # a body that is not even text, or too deep
                    reason = found.detail if isinstance(found.detail, str) else "Bad request"
                    pids = await _pids_of(request, kind, body_read=False)
                    return _answer(kind, found.status_code, reason, pids)
                except ProblemError as found:
                    status = found.status
                    if isinstance(found, InvalidTransition) or status == 422:
                        status = 400  # the binding's answer to a message it cannot take
                    elif isinstance(found, Forbidden) and kind in PROCESS_ERRORS:
                        status = 404
                    headers = dict(found.headers) if status == found.status else {}
                    if status == 401:
                        headers.setdefault("WWW-Authenticate", "Bearer")
                    pids = await _pids_of(request, kind)
                    return _answer(kind, status, found.detail, pids, headers)
                except (OperationalError, PoolTimeout) as fault:
                    return _unavailable(request, kind, fault, await _pids_of(request, kind))

            return handled

    return ProtocolRoute


async def _pids_of(request: Request, kind: str, body_read: bool = True) -> dict[str, str]:
    """The pids the request itself names (the path's providerPid, the message's consumerPid),
    for a negotiation's or a transfer process's error document: never read from the process,
    which the caller may not be allowed to see. The body is looked at only once the route has
    read it (``body_read``): a body whose reading failed (a JSON over the bounds) is not read
    again, which would wait for a stream already consumed."""
    if kind not in PROCESS_ERRORS:
        return {}
    pids = {}
    if isinstance(found := request.path_params.get("provider_pid"), str):
        pids["providerPid"] = found
    try:
        body = await request.json() if request.method == "POST" and body_read else None
    except ValueError:  # not JSON: nothing named
        body = None
    if isinstance(body, dict) and isinstance(body.get("consumerPid"), str):
        pids["consumerPid"] = body["consumerPid"][:500]
    return pids


def _unavailable(request: Request, kind: str, fault: Exception, pids: dict[str, str]) -> Response:
    """The database did not answer: a fault to wait out, as every route answers it (503 with
    ``Retry-After``), in the protocol's error document. A message sent again is answered as
    the first one was (a request by its consumerPid, a move by the state it finds)."""
    if monitoring := getattr(request.app.state, "monitoring", None):
        monitoring.database_errors.inc()
    log.warning("database unavailable on %s: %s", request.url.path, getattr(fault, "orig", fault))
    reason = (
        "The broker's database is busy or does not answer: send the message again in "
        f"{DATABASE_RETRY_AFTER} s"
    )
    headers = {"Retry-After": str(DATABASE_RETRY_AFTER)}
    return _answer(kind, 503, reason, pids, headers)


def _answer(
    kind: str,
    status: int,
    reason: str,
    pids: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        error(kind, status, reason, pids), status, headers=headers, media_type=MEDIA_TYPE
    )


def documented(kind: str, success: int, *errors: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` of a protocol route: its document on ``success`` and the error
    document on each of ``errors`` and on 422 (a JSON body over the bounds of every route: too
    deep, a number too long). A body over the size limit is a 413 problem when its declared
    length says so, answered before any route."""
    from broker.wire.problem_model import responses

    error_schema = {
        "type": "object",
        "required": ["@context", "@type", "code", "reason"],
        "properties": {
            "@context": {"type": "array", "items": {"type": "string"}},
            "@type": {"type": "string", "const": kind},
            "providerPid": {"type": "string"},
            "consumerPid": {"type": "string"},
            "code": {"type": "string"},
            "reason": {"type": "array", "items": {"type": "string"}},
        },
    }
    found: dict[int | str, dict[str, Any]] = {
        success: {
            "description": "The protocol's document",
            "content": {MEDIA_TYPE: {"schema": {"type": "object"}}},
        }
    }
    for status in (*errors, 422):
        found[status] = {
            "description": f"A {kind}",
            "content": {MEDIA_TYPE: {"schema": error_schema}},
        }
    return found | responses(413)

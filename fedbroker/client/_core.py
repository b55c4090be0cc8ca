"""What the sync and the async client share: the request each operation makes and the rules
every exchange follows, written once without I/O.

:func:`exchange` is a generator: it yields :class:`Send` (make this request) and :class:`Sleep`
(wait this long) and receives each answer, so ``Client`` drives it with ``httpx.Client`` and
``time.sleep``, ``AsyncClient`` with ``httpx.AsyncClient`` and ``asyncio.sleep``. The rules:

- 429 and 503 are tried again after the ``Retry-After`` the broker asked for, at most
  ``retries`` times and only for a wait up to ``max_retry_wait`` seconds; then the error is
  raised, carrying ``retry_after``. Every try sends the same ``Idempotency-Key``, so a retried
  transfer or negotiation message is never made twice;
- ``202 Accepted`` with a ``Location`` (a transfer decided in the background) is polled at the
  pace ``Retry-After`` sets until the job is done (its transfer is the answer) or failed (its
  problem is raised); a ``Location`` on another origin than the broker's is refused, so the
  member's key is never sent elsewhere;
- an error status becomes the exception of its class (:mod:`fedbroker.client.errors`).
"""

from __future__ import annotations

import email.utils
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from broker.wire.headers import IDEMPOTENCY_KEY
from fedbroker.client.errors import BrokerAnsweredError, BrokerUnavailable, problem_error
from fedbroker.client.models import TransferJobRead

RETRIED_STATUSES = (429, 503)


@dataclass
class Call:
    """One operation's request, and what its answer is read as.

    ``answer``: a type the JSON body is validated into, ``bytes`` or ``str`` for a body that is
    not JSON, ``None`` for no body (204).
    """

    method: str
    path: str
    answer: Any
    params: dict[str, Any] | None = None
    json: Any = None
    data: dict[str, str] | None = None
    # field name -> (file name, content, media type); a list of (field name, file) pairs where
    # one field repeats (a transfer's hierarchy files)
    files: dict[str, tuple[str, Any, str]] | list[tuple[str, tuple[str, Any, str]]] | None = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    follow_job: bool = False

    def request(self) -> Send:
        """The request to send now; a file object is read again from its start on a retry."""
        parts = self.files.values() if isinstance(self.files, dict) else self.files or ()
        for _, content, _ in (part if isinstance(self.files, dict) else part[1] for part in parts):
            if hasattr(content, "seek") and content.seekable():
                content.seek(0)
        arguments: dict[str, Any] = {"headers": self.headers}
        for name in ("params", "json", "data", "files", "content"):
            if (value := getattr(self, name)) is not None:
                arguments[name] = value
        return Send(self.method, self.path, arguments)


@dataclass(frozen=True)
class Send:
    method: str
    url: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Rules:
    """The client's settings the exchange follows."""

    base_url: str
    retries: int = 3
    max_retry_wait: float = 30.0
    decision_timeout: float = 3600.0


Step = Send | Sleep
Exchange = Generator[Step, httpx.Response | None, Any]


def exchange(call: Call, rules: Rules) -> Exchange:
    """Make ``call`` under the rules of the module docstring; returns its answer, read."""
    response = yield from _answered(call.request, rules)
    if call.follow_job and response.status_code == 202:
        return (yield from _follow_job(response, rules))
    return read(call.answer, response, call.method, call.path)


def _answered(request: Any, rules: Rules) -> Exchange:
    """Send ``request()`` until it is not a 429 or 503 to retry; raise an error status."""
    for attempt in range(rules.retries + 1):
        response = yield request()
        assert response is not None
        if not response.is_error:
            return response
        wait = retry_after(response)
        retry = response.status_code in RETRIED_STATUSES and attempt < rules.retries
        if not (retry and wait is not None and wait <= rules.max_retry_wait):
            raise problem_error(response.status_code, problem_of(response), wait)
        yield Sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _follow_job(accepted: httpx.Response, rules: Rules) -> Exchange:
    location = same_origin(accepted.headers.get("Location", ""), rules.base_url)
    poll = Send("GET", location, {})
    deadline = time.monotonic() + rules.decision_timeout
    response = accepted
    while True:
        yield Sleep(poll_delay(response))
        response = yield from _answered(lambda: poll, rules)
        job = read(TransferJobRead, response, "GET", location)
        if job.state == "done" and job.transfer is not None:
            return job.transfer
        if job.state == "failed":
            problem = job.problem or {"title": "Job failed", "status": 500}
            raise problem_error(int(problem.get("status", 500)), problem)
        if time.monotonic() > deadline:
            raise BrokerUnavailable(
                rules.base_url,
                f"the transfer {job.id} was not decided within {rules.decision_timeout:g} s "
                f"(it is {job.stage}, {job.progress:.0%}); poll {location}",
                timed_out=True,
            )


def read(answer: Any, response: httpx.Response, method: str, path: str) -> Any:
    """The body of a successful answer, as ``answer`` says."""
    if answer is None:
        return None
    if answer is bytes:
        return response.content
    if answer is str:
        return response.text
    try:
        body = response.json()
    except ValueError as error:
        raise _unreadable(f"{response.status_code} but no JSON body", method, path) from error
    try:
        return _adapter(answer).validate_python(body)
    except ValidationError as error:  # a broker of another version, or not a broker
        what = f"{response.status_code} and a body that is not its schema's: {error}"
        raise _unreadable(what, method, path) from error


def _unreadable(what: str, method: str, path: str) -> BrokerAnsweredError:
    return BrokerAnsweredError(
        502,
        {
            "type": "about:blank",
            "title": "Unreadable answer",
            "status": 502,
            "detail": f"the broker answered {method} {path} with {what}",
        },
    )


_ADAPTERS: dict[Any, TypeAdapter] = {}


def _adapter(answer: Any) -> TypeAdapter:
    if answer not in _ADAPTERS:
        _ADAPTERS[answer] = TypeAdapter(answer)
    return _ADAPTERS[answer]


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (RFC 9110: a number of seconds or an HTTP date), or None."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def poll_delay(response: httpx.Response) -> float:
    """The pause between two polls of a job: its ``Retry-After``, kept within 0.1 and 5 s."""
    return min(max(retry_after(response) or 1.0, 0.1), 5.0)


def same_origin(location: str, base_url: str) -> str:
    """``location`` resolved against the broker's URL, refused if it leaves its origin."""
    if not location:
        raise problem_error(
            502,
            {"title": "No Location", "status": 502, "detail": "202 Accepted without Location"},
        )
    base = httpx.URL(base_url + "/")
    target = base.join(location)
    if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
        raise problem_error(
            502,
            {
                "title": "Location on another origin",
                "status": 502,
                "detail": f"the broker sent Location {location!r}, outside {base_url}: not "
                "followed, so that the key is not sent there",
            },
        )
    return str(target)


def problem_of(response: httpx.Response) -> dict[str, Any]:
    """The RFC 9457 body of an error answer, or one built from a body that is not one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        body.setdefault("status", response.status_code)
        return body
    return {
        "type": "about:blank",
        "title": response.reason_phrase or "Error",
        "status": response.status_code,
        "detail": response.text[:500],
    }


def segment(value: str | int) -> str:
    """One path segment, quoted so that an id can never change the path."""
    return quote(str(value), safe="")


def columns(names: Any) -> str | None:
    """A list of column names as the broker's form fields take them (comma-separated)."""
    if names is None or isinstance(names, str):
        return names
    return ",".join(names)


def idempotency(key: str | None) -> dict[str, str]:
    """The ``Idempotency-Key`` header: the caller's key, or a new random one; every retry of
    the call sends the same."""
    return {IDEMPOTENCY_KEY: key or uuid.uuid4().hex}


def unavailable(base_url: str, error: httpx.TransportError) -> BrokerUnavailable:
    if isinstance(error, httpx.TimeoutException):
        return BrokerUnavailable(
            base_url, f"no answer within the timeout ({type(error).__name__})", timed_out=True
        )
    return BrokerUnavailable(base_url, f"{type(error).__name__}: {error}".rstrip(": "))


def plain(answer: Any) -> Any:
    """An answer as the JSON the broker sent (models to dicts, only the fields it sent), for a
    caller that passes it on."""
    if isinstance(answer, BaseModel):
        return answer.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(answer, list):
        return [plain(item) for item in answer]
    return answer

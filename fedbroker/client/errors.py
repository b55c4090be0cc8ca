"""What the client raises: the broker's RFC 9457 problems as exceptions, one class per status.

Exception tree::

    BrokerClientError
    ├── BrokerUnavailable         no answer: connection refused, DNS failure, timeout, ...
    └── BrokerAnsweredError       the broker answered with an error status; carries its problem
        ├── BadRequest            400
        ├── Unauthorized          401
        ├── Forbidden             403
        ├── NotFound              404
        ├── Conflict              409
        ├── PreconditionFailed    412
        ├── ContentTooLarge       413
        ├── UnsupportedMediaType  415
        ├── Unprocessable         422
        ├── TooManyRequests       429
        └── ServerError           5xx
            └── ServiceUnavailable  503
"""

from __future__ import annotations

from typing import Any


class BrokerClientError(Exception):
    """Base of every error this client raises."""


class BrokerUnavailable(BrokerClientError):
    """The broker gave no answer: it is down, unreachable, or did not answer in time."""

    def __init__(self, base_url: str, reason: str, *, timed_out: bool = False):
        self.base_url = base_url
        self.reason = reason
        self.timed_out = timed_out
        super().__init__(f"the broker at {base_url} does not answer: {reason}")


class BrokerAnsweredError(BrokerClientError):
    """The broker answered with an error status (4xx, 5xx).

    ``problem`` is the RFC 9457 body the broker sent (or one built from a non-JSON answer);
    its fields are also attributes: ``status``, ``type``, ``title``, ``detail``, ``instance``,
    ``errors`` (the invalid fields of a 422). ``retry_after``: the seconds the broker asked to
    wait (429, 503), when it said.
    """

    def __init__(self, status: int, problem: dict[str, Any], retry_after: float | None = None):
        self.status = status
        self.problem = problem
        self.retry_after = retry_after
        super().__init__(f"{status} {self.title}: {self.detail}")

    @property
    def type(self) -> str:
        return str(self.problem.get("type", "about:blank"))

    @property
    def title(self) -> str:
        return str(self.problem.get("title", ""))

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", ""))

    @property
    def instance(self) -> str | None:
        return self.problem.get("instance")

    @property
    def errors(self) -> list[dict[str, Any]] | None:
        return self.problem.get("errors")


class BadRequest(BrokerAnsweredError):
    """400: the request is malformed (an unreadable file, a bad header)."""


class Unauthorized(BrokerAnsweredError):
    """401: no key, or a key the broker does not know."""


class Forbidden(BrokerAnsweredError):
    """403: the key is known but may not do this."""


class NotFound(BrokerAnsweredError):
    """404: no such resource, or one the caller may not see."""


class Conflict(BrokerAnsweredError):
    """409: the resource exists already, or its state forbids this."""


class PreconditionFailed(BrokerAnsweredError):
    """412: ``If-Match`` names a version that is no longer the current one."""


class ContentTooLarge(BrokerAnsweredError):
    """413: the upload is larger than the broker accepts."""


class UnsupportedMediaType(BrokerAnsweredError):
    """415: the body's format is not one the route reads."""


class Unprocessable(BrokerAnsweredError):
    """422: the request is well formed but its values are not valid (see ``errors``)."""


class TooManyRequests(BrokerAnsweredError):
    """429: over the member's rate limit, after the client's retries."""


class ServerError(BrokerAnsweredError):
    """5xx: the broker failed."""


class ServiceUnavailable(ServerError):
    """503: the broker cannot serve now (starting, overloaded), after the client's retries."""


BY_STATUS: dict[int, type[BrokerAnsweredError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    413: ContentTooLarge,
    415: UnsupportedMediaType,
    422: Unprocessable,
    429: TooManyRequests,
    503: ServiceUnavailable,
}


def problem_error(
    status: int, problem: dict[str, Any], retry_after: float | None = None
) -> BrokerAnsweredError:
    """The exception of the class that fits ``status``."""
    kind = BY_STATUS.get(status) or (ServerError if status >= 500 else BrokerAnsweredError)
    return kind(status, problem, retry_after)

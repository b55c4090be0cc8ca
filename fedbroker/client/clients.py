"""The sync and the async client: the same operations, driven by ``httpx.Client`` or
``httpx.AsyncClient`` (:mod:`fedbroker.client._core` holds the rules both follow)."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import httpx

from fedbroker.client._core import Call, Rules, Send, Sleep, exchange, unavailable
from fedbroker.client.operations import Operations

if TYPE_CHECKING:  # the same operations, each awaited (a generated stub)
    from fedbroker.client._async_operations import AsyncOperations
else:
    AsyncOperations = Operations

USER_AGENT = "fedbroker-client/0.1"


def _headers(token: str | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class Client(Operations):
    """Calls the broker with a bearer token: a member's API key, or an administrator's token.

    ``timeout`` bounds each HTTP exchange; ``decision_timeout`` how long a transfer decided in
    the background is polled; ``retries`` and ``max_retry_wait`` how a 429 or 503 is tried
    again. ``transport`` replaces the network (``httpx.MockTransport``). A context manager::

        with Client("http://127.0.0.1:8000", token=api_key) as broker:
            decision = broker.create_transfer(
                csv_bytes, "patients.csv", "fr-research", "research", quasi_identifiers=["Age"]
            )
            decision.status   # TransferStatus.APPROVED, ANONYMIZATION_REQUIRED or REJECTED
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30,
        decision_timeout: float = 3600,
        retries: int = 3,
        max_retry_wait: float = 30,
        transport: httpx.BaseTransport | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.rules = Rules(self.base_url, retries, max_retry_wait, decision_timeout)
        self._http = httpx.Client(
            base_url=self.base_url, headers=_headers(token), timeout=timeout, transport=transport
        )

    def _call(self, call: Call) -> Any:
        steps = exchange(call, self.rules)
        answer: httpx.Response | None = None
        try:
            while True:
                step = steps.send(answer)
                answer = None
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                else:
                    answer = self._send(step)
        except StopIteration as done:
            return done.value
        finally:
            steps.close()

    def _send(self, step: Send) -> httpx.Response:
        try:
            return self._http.request(step.method, step.url, **step.arguments)
        except httpx.TransportError as error:
            raise unavailable(self.base_url, error) from error

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient(AsyncOperations):
    """:class:`Client` for asyncio: the same methods, each returning an awaitable::

    async with AsyncClient("http://127.0.0.1:8000", token=api_key) as broker:
        decision = await broker.get_transfer(transfer_id)
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30,
        decision_timeout: float = 3600,
        retries: int = 3,
        max_retry_wait: float = 30,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.rules = Rules(self.base_url, retries, max_retry_wait, decision_timeout)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=_headers(token), timeout=timeout, transport=transport
        )

    async def _call(self, call: Call) -> Any:
        steps = exchange(call, self.rules)
        answer: httpx.Response | None = None
        try:
            while True:
                step = steps.send(answer)
                answer = None
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                else:
                    answer = await self._send(step)
        except StopIteration as done:
            return done.value
        finally:
            steps.close()

    async def _send(self, step: Send) -> httpx.Response:
        try:
            return await self._http.request(step.method, step.url, **step.arguments)
        except httpx.TransportError as error:
            raise unavailable(self.base_url, error) from error

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

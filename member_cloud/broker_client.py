"""A typed client of the federal broker's REST API (``/v1``), on ``httpx.Client``.

One module on purpose, over 300 lines: it is the member cloud's whole boundary with the broker
(one short method per broker route, the two errors they raise, the one ``_request`` they all
go through), and a quarter of it is docstrings. Split by resource, that boundary would be
spread over files that share all their plumbing.

It is the only module of the member cloud that talks to the broker, and the client your own
scripts can import::

    from member_cloud.broker_client import BrokerClient, BrokerAnsweredError

    with BrokerClient("http://127.0.0.1:8000", token="<member API key>") as broker:
        with open("patients.csv", "rb") as f:
            decision = broker.send_transfer(
                f.read(), "patients.csv", destination="fr-research", purpose="research",
                quasi_identifiers=["Age", "Gender"], sensitive=["Disease"],
            )
        print(decision["status"])          # approved, anonymization_required or rejected
        try:
            broker.get_transfer("no-such-id")
        except BrokerAnsweredError as error:
            print(error.status, error.detail)   # 404 and the broker's explanation

Answers are the broker's JSON as plain ``dict`` and ``list`` values (see the broker's OpenAPI
document at ``/openapi.json`` for their fields). A policy that says no is an answer, not an error.

Exception tree::

    BrokerClientError
    ├── BrokerAnsweredError  the broker answered with an error status; carries its problem+json
    └── BrokerUnavailable    no answer: connection refused, DNS failure, timeout, ...
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any
from urllib.parse import quote

import httpx

from broker.wire.headers import IDEMPOTENCY_KEY
from broker.wire.signing import KEYS_PATH
from broker.wire.statuses import Anonymize, TransferKind, TransferStatus

USER_AGENT = "fedbroker-member-cloud/0.1"


class BrokerClientError(Exception):
    """Base of every error this client raises."""


class BrokerAnsweredError(BrokerClientError):
    """The broker answered with an error status (4xx, 5xx).

    ``problem`` is the RFC 9457 body the broker sent (or one built from a non-JSON answer);
    its fields are also attributes: ``status``, ``type``, ``title``, ``detail``, ``instance``,
    ``errors``.
    """

    def __init__(self, status: int, problem: dict[str, Any]):
        self.status = status
        self.problem = problem
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


class BrokerUnavailable(BrokerClientError):
    """The broker gave no answer: it is down, unreachable, or did not answer in time."""

    def __init__(self, base_url: str, reason: str, *, timed_out: bool = False):
        self.base_url = base_url
        self.reason = reason
        self.timed_out = timed_out
        super().__init__(f"the broker at {base_url} does not answer: {reason}")


def _columns(names: Iterable[str] | None) -> str | None:
    if names is None:
        return None
    if isinstance(names, str):
        return names
    return ",".join(names)


class BrokerClient:
    """Calls the broker with a bearer token: a member's API key, or the admin token.

    ``transport`` replaces the network (``httpx.MockTransport`` in tests). Use it as a context
    manager, or call ``close()``::

        with BrokerClient("http://127.0.0.1:8000", token=admin_token) as broker:
            member = broker.register_member(
                "sn-hospital", "Hôpital Principal", "SN", "http://127.0.0.1:8101/inbox"
            )
            api_key = member["api_key"]    # shown once
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        timeout: float = 30,
        transport: httpx.BaseTransport | None = None,
        decision_timeout: float = 3600,
    ):
        """``timeout`` bounds each HTTP exchange; ``decision_timeout`` how long
        :meth:`send_transfer` polls a transfer the broker decides in the background."""
        self.base_url = base_url.rstrip("/")
        self.decision_timeout = decision_timeout
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- members ---------------------------------------------------------------------------

    def register_member(
        self, id: str, name: str, jurisdiction: str, inbox_url: str
    ) -> dict[str, Any]:
        """Register a member cloud (admin token). The answer holds ``api_key``, shown once.

        An existing id raises ``BrokerAnsweredError`` with status 409.
        """
        body = {"id": id, "name": name, "jurisdiction": jurisdiction, "inbox_url": inbox_url}
        return self._request("POST", "/v1/members", json=body)

    def list_members(self) -> list[dict[str, Any]]:
        """Service discovery: every member cloud, with its jurisdiction and inbox URL."""
        return self._request("GET", "/v1/members")

    def get_member(self, member_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/members/{_segment(member_id)}")

    # --- F-SLA policies --------------------------------------------------------------------

    def list_policies(self) -> list[dict[str, Any]]:
        """The current version of every jurisdiction's F-SLA record."""
        return self._request("GET", "/v1/policies")

    def get_policy(self, jurisdiction: str, version: int | None = None) -> dict[str, Any]:
        """The current F-SLA record of a jurisdiction, or one of its versions."""
        path = f"/v1/policies/{_segment(jurisdiction)}"
        if version is not None:
            path += f"/versions/{int(version)}"
        return self._request("GET", path)

    # --- transfers -------------------------------------------------------------------------

    def send_transfer(
        self,
        data: bytes | IO[bytes],
        filename: str,
        destination: str,
        purpose: str,
        quasi_identifiers: Sequence[str] | None = None,
        sensitive: Sequence[str] | None = None,
        anonymize: Anonymize = Anonymize.NONE,
        dry_run: bool = False,
        idempotency_key: str | None = None,
        content_type: str | None = None,
        agreement_id: str | None = None,
    ) -> dict[str, Any]:
        """Ask the broker to send a dataset to another member (member API key); its decision.

        ``quasi_identifiers=None`` lets the broker infer them. With ``idempotency_key`` a retry
        of the same request replays the first decision instead of making a second transfer.
        ``agreement_id``: the agreement it is made under (see :meth:`negotiate`).

        ::

            decision = broker.send_transfer(
                csv_bytes, "patients.csv", "fr-research", "research",
                quasi_identifiers=["Age", "Gender"], sensitive=["Disease"], anonymize="auto",
            )
            decision["status"], decision["rules"], decision["remedy"]
        """
        form: dict[str, str] = {
            "destination": destination,
            "purpose": purpose,
            "anonymize": anonymize,
            "dry_run": "true" if dry_run else "false",
        }
        if (qi := _columns(quasi_identifiers)) is not None:
            form["quasi_identifiers"] = qi
        if (sens := _columns(sensitive)) is not None:
            form["sensitive"] = sens
        if agreement_id:
            form["agreement_id"] = agreement_id
        headers = {IDEMPOTENCY_KEY: idempotency_key} if idempotency_key else None
        file = (filename, data, content_type or "application/octet-stream")
        response = self._response(
            "POST", "/v1/transfers", data=form, files={"file": file}, headers=headers
        )
        if response.status_code != 202:
            return self._json(response, "POST", "/v1/transfers")
        return self._await_job(response.headers["Location"], _retry_after(response))

    def send_aggregate(
        self,
        data: bytes | IO[bytes],
        filename: str,
        destination: str,
        purpose: str,
        queries: Sequence[Mapping[str, Any]],
        epsilon: str | float,
        delta: str | float | None = None,
        dry_run: bool = False,
        idempotency_key: str | None = None,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        """Ask for an aggregate release (``kind=aggregate``): statistics of the dataset under
        differential privacy, charged to the budget the broker keeps per dataset and
        destination; its decision, with each answer, mechanism, epsilon and accuracy.

        ::

            decision = broker.send_aggregate(
                csv_bytes, "patients.csv", "fr-research", "research",
                queries=[{"type": "count_by", "columns": ["sex"], "keys": {"sex": ["F", "M"]}},
                         {"type": "mean", "column": "age", "bounds": [0, 120]}],
                epsilon="0.5",
            )
            decision["status"], decision["aggregate"]["answers"]
        """
        form: dict[str, str] = {
            "destination": destination,
            "purpose": purpose,
            "kind": TransferKind.AGGREGATE,
            "queries": json.dumps(list(queries)),
            "epsilon": str(epsilon),
            "dry_run": "true" if dry_run else "false",
        }
        if delta is not None:
            form["delta"] = str(delta)
        headers = {IDEMPOTENCY_KEY: idempotency_key} if idempotency_key else None
        file = (filename, data, content_type or "application/octet-stream")
        return self._request(
            "POST", "/v1/transfers", data=form, files={"file": file}, headers=headers
        )

    def _await_job(self, location: str, delay: float) -> dict[str, Any]:
        """Poll a transfer decided in the background (202 Accepted) until it is decided.

        Returns the decision; a job that failed raises :class:`BrokerAnsweredError` with the
        problem the broker recorded, as the synchronous answer would have.
        """
        deadline = time.monotonic() + self.decision_timeout
        while True:
            time.sleep(delay)
            response = self._response("GET", location)
            job = self._json(response, "GET", location)
            if job["state"] == "done":
                return job["transfer"]
            if job["state"] == "failed":
                raise BrokerAnsweredError(job["problem"]["status"], job["problem"])
            if time.monotonic() > deadline:
                raise BrokerUnavailable(
                    self.base_url,
                    f"the transfer {job['id']} was not decided within {self.decision_timeout:g} "
                    f"s (it is {job['stage']}, {job['progress']:.0%}); poll {location}",
                    timed_out=True,
                )
            delay = _retry_after(response)

    def get_transfer(self, transfer_id: str) -> dict[str, Any]:
        """One transfer the caller sent or received: decision, rules, delivery state."""
        return self._request("GET", f"/v1/transfers/{_segment(transfer_id)}")

    def list_transfers(
        self,
        status: TransferStatus | None = None,
        offset: int = 0,
        limit: int = 20,
    ) -> dict[str, Any]:
        """A page of the caller's transfers, newest first: ``items``, ``total``, ``offset``,
        ``limit``."""
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        if status is not None:
            params["status"] = status
        return self._request("GET", "/v1/transfers", params=params)

    def report_erasure(self, transfer_id: str) -> dict[str, Any]:
        """Tell the broker this member deleted what a transfer delivered to it."""
        return self._request("POST", f"/v1/transfers/{_segment(transfer_id)}/erasure")

    # --- the catalog -----------------------------------------------------------------------

    def publish_dataset(self, description: dict[str, Any]) -> dict[str, Any]:
        """Describe a dataset this member holds (never the data): the catalog entry, version 1.

        ``description``: ``title``, ``description``, ``keywords``, ``columns`` (``name``,
        ``role``: quasi_identifier, sensitive, person_key or other), ``rows``, ``format``,
        ``purposes``.
        """
        return self._request("POST", "/v1/catalog/datasets", json=description)

    def revise_dataset(
        self, dataset_id: str, description: dict[str, Any], if_match: str | None = None
    ) -> dict[str, Any]:
        headers = {"If-Match": if_match} if if_match else None
        path = f"/v1/catalog/datasets/{_segment(dataset_id)}"
        return self._request("PUT", path, json=description, headers=headers)

    def withdraw_dataset(self, dataset_id: str) -> None:
        self._response("DELETE", f"/v1/catalog/datasets/{_segment(dataset_id)}")

    def measure_dataset(
        self,
        dataset_id: str,
        data: bytes | IO[bytes],
        filename: str,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        """Have the broker measure the file an entry describes; it keeps the figures only."""
        file = (filename, data, content_type or "application/octet-stream")
        path = f"/v1/catalog/datasets/{_segment(dataset_id)}/measurement"
        return self._request("POST", path, files={"file": file})

    def catalog(
        self,
        jurisdiction: str | None = None,
        purpose: str | None = None,
        column: str | None = None,
        keywords: str | None = None,
        provider: str | None = None,
        offset: int = 0,
        limit: int = 20,
    ) -> dict[str, Any]:
        """A page of the catalog as JSON-LD (``dcat:dataset``, each with the offers this member
        could get under ``odrl:hasPolicy`` and the purposes it could not under
        ``fedbroker:refusal``)."""
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        for name, value in (
            ("jurisdiction", jurisdiction),
            ("purpose", purpose),
            ("column", column),
            ("q", keywords),
            ("provider", provider),
        ):
            if value is not None:
                params[name] = value
        return self._request("GET", "/v1/catalog", params=params)

    def catalog_dataset(self, dataset_id: str, version: int | None = None) -> dict[str, Any]:
        params = {} if version is None else {"version": version}
        path = f"/v1/catalog/datasets/{_segment(dataset_id)}"
        return self._request("GET", path, params=params)

    # --- negotiations and agreements -------------------------------------------------------

    def negotiate(
        self,
        dataset_id: str,
        purpose: str,
        columns: Sequence[str] | None = None,
        retention_days: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Ask for a catalogued dataset (the consumer): REQUESTED with the broker's terms, or
        TERMINATED with the reason."""
        body = {
            "dataset_id": dataset_id,
            "purpose": purpose,
            "columns": None if columns is None else list(columns),
            "retention_days": retention_days,
        }
        headers = {IDEMPOTENCY_KEY: idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/negotiations", json=body, headers=headers)

    def negotiation(self, negotiation_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/negotiations/{_segment(negotiation_id)}")

    def negotiations(
        self, states: Sequence[str] = (), offset: int = 0, limit: int = 20
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        if states:
            params["state"] = list(states)
        return self._request("GET", "/v1/negotiations", params=params)

    def offer(
        self,
        negotiation_id: str,
        terms: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Offer the broker's terms (the provider), or stricter ones (``terms``: the fields to
        change, e.g. ``{"min_k": 5}``)."""
        return self._message(negotiation_id, "offer", {"terms": terms}, idempotency_key)

    def counter_request(
        self,
        negotiation_id: str,
        columns: Sequence[str] | None = None,
        retention_days: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "columns": None if columns is None else list(columns),
            "retention_days": retention_days,
        }
        return self._message(negotiation_id, "request", body, idempotency_key)

    def accept(self, negotiation_id: str, idempotency_key: str | None = None) -> dict[str, Any]:
        """Accept the offer (the consumer): the broker signs the agreement."""
        return self._message(negotiation_id, "accept", {}, idempotency_key)

    def verify(self, negotiation_id: str, idempotency_key: str | None = None) -> dict[str, Any]:
        """Confirm the agreement's signature was checked (the consumer): FINALIZED."""
        return self._message(negotiation_id, "verify", {}, idempotency_key)

    def terminate(
        self, negotiation_id: str, reason: str, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        return self._message(negotiation_id, "terminate", {"reason": reason}, idempotency_key)

    def agreement(self, agreement_id: str) -> dict[str, Any]:
        """An agreement: its terms, the document the broker signed and its signature."""
        return self._request("GET", f"/v1/agreements/{_segment(agreement_id)}")

    def notifications(self, after: int = 0, limit: int = 100) -> list[dict[str, Any]]:
        """What this member must know (agreements suspended or restored), after id ``after``."""
        return self._request("GET", "/v1/notifications", params={"after": after, "limit": limit})

    def _message(
        self,
        negotiation_id: str,
        verb: str,
        body: dict[str, Any],
        idempotency_key: str | None,
    ) -> dict[str, Any]:
        headers = {IDEMPOTENCY_KEY: idempotency_key} if idempotency_key else None
        path = f"/v1/negotiations/{_segment(negotiation_id)}/{verb}"
        return self._request("POST", path, json=body, headers=headers)

    # --- measurement -----------------------------------------------------------------------

    def analyze(
        self,
        data: bytes | IO[bytes],
        filename: str,
        quasi_identifiers: Sequence[str] | None = None,
        sensitive: Sequence[str] | None = None,
        combinations: int = 3,
        alpha: float | None = None,
        beta: float | None = None,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        """Measure a dataset (Mmaq, k, l, t, risk) without any policy; nothing is stored."""
        form: dict[str, str] = {"combinations": str(combinations)}
        if (qi := _columns(quasi_identifiers)) is not None:
            form["quasi_identifiers"] = qi
        if (sens := _columns(sensitive)) is not None:
            form["sensitive"] = sens
        if alpha is not None:
            form["alpha"] = str(alpha)
        if beta is not None:
            form["beta"] = str(beta)
        file = (filename, data, content_type or "application/octet-stream")
        return self._request("POST", "/v1/analyze", data=form, files={"file": file})

    def rotate_api_key(self, member_id: str) -> dict[str, Any]:
        """A new API key (shown once); the current one works until ``previous_key_valid_until``."""
        return self._request("POST", f"/v1/members/{_segment(member_id)}/api-key")

    def revoke_api_keys(self, member_id: str) -> dict[str, Any]:
        """Every key of a member stops working at once (admin)."""
        return self._request("POST", f"/v1/members/{_segment(member_id)}/api-key/revoke")

    def signing_keys(self) -> dict[str, Any]:
        """The broker's public delivery signing keys (a JSON Web Key Set)."""
        return self._request("GET", KEYS_PATH)

    # --- plumbing --------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._json(self._response(method, path, **kwargs), method, path)

    def _response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as error:
            raise BrokerUnavailable(
                self.base_url,
                f"no answer within the timeout ({type(error).__name__})",
                timed_out=True,
            ) from error
        except httpx.TransportError as error:
            raise BrokerUnavailable(
                self.base_url, f"{type(error).__name__}: {error}".rstrip(": ")
            ) from error
        if response.is_error:
            raise BrokerAnsweredError(response.status_code, _problem_of(response))
        return response

    @staticmethod
    def _json(response: httpx.Response, method: str, path: str) -> Any:
        try:
            return response.json()
        except ValueError as error:
            raise BrokerAnsweredError(
                502,
                {
                    "type": "about:blank",
                    "title": "Unreadable answer",
                    "status": 502,
                    "detail": f"the broker answered {method} {path} with "
                    f"{response.status_code} but no JSON body",
                },
            ) from error


def _retry_after(response: httpx.Response) -> float:
    """The pause the broker asks for between two polls, kept within 0.1 and 5 seconds."""
    try:
        return min(max(float(response.headers.get("Retry-After", "1")), 0.1), 5.0)
    except ValueError:
        return 1.0


def _segment(value: str) -> str:
    """Quote one path segment so an id can never change the path."""
    return quote(value, safe="")


def _problem_of(response: httpx.Response) -> dict[str, Any]:
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

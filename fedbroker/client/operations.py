"""Every operation of the broker's API, once: the method that builds its request.

Each method is marked with the ``operationId`` it calls in the broker's OpenAPI document (a test
checks that every operation of the document has its method and answer model). A method returns
``self._call(...)``: the answer itself in :class:`fedbroker.client.Client`, an awaitable of it in
:class:`fedbroker.client.AsyncClient`.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, TypeVar

from pydantic import BaseModel

from broker.wire.signing import KEYS_PATH
from fedbroker.client import models as m
from fedbroker.client._core import Call, columns, idempotency, segment

F = TypeVar("F", bound=Callable[..., Any])
Upload = bytes | IO[bytes]
Body = Mapping[str, Any] | BaseModel


def operation(operation_id: str) -> Callable[[F], F]:
    """Mark a method as the one that calls ``operation_id``."""

    def mark(method: F) -> F:
        method.operation_id = operation_id  # type: ignore[attr-defined]
        return method

    return mark


def operations() -> dict[str, str]:
    """operationId -> the name of the method that calls it."""
    return {
        method.operation_id: name
        for name, method in vars(Operations).items()
        if hasattr(method, "operation_id")
    }


def _json(body: Body) -> Any:
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(body)


def _file(data: Upload, filename: str, content_type: str | None) -> dict[str, tuple]:
    return {"file": (filename, data, content_type or "application/octet-stream")}


def _form(**fields: Any) -> dict[str, str]:
    """Form fields as text, the ones left at None omitted."""
    form = {}
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        form[name] = str(value)
    return form


def _params(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _if_match(if_match: str | None) -> dict[str, str]:
    return {"If-Match": if_match} if if_match else {}


class Operations:
    """The broker's operations; a subclass says how a :class:`Call` is made (``_call``)."""

    def _call(self, call: Call) -> Any:
        raise NotImplementedError

    # --- health and keys ---------------------------------------------------------------------

    @operation("get_liveness")
    def get_liveness(self) -> dict[str, str]:
        return self._call(Call("GET", "/livez", dict[str, str]))

    @operation("get_readiness")
    def get_readiness(self) -> dict[str, str]:
        """503 (:class:`ServiceUnavailable`) while the broker cannot serve."""
        return self._call(Call("GET", "/readyz", dict[str, str]))

    @operation("get_metrics")
    def get_metrics(self) -> str:
        """The Prometheus exposition text."""
        return self._call(Call("GET", "/metrics", str))

    @operation("get_signing_keys")
    def get_signing_keys(self) -> dict[str, Any]:
        """The broker's public delivery signing keys (a JSON Web Key Set)."""
        return self._call(Call("GET", KEYS_PATH, dict[str, Any]))

    # --- F-SLA policies ----------------------------------------------------------------------

    @operation("list_policies")
    def list_policies(self) -> list[m.PolicyRead]:
        """The current version of every jurisdiction's F-SLA record."""
        return self._call(Call("GET", "/v1/policies", list[m.PolicyRead]))

    @operation("get_policy")
    def get_policy(self, jurisdiction: str) -> m.PolicyRead:
        return self._call(Call("GET", f"/v1/policies/{segment(jurisdiction)}", m.PolicyRead))

    @operation("put_policy")
    def put_policy(
        self, jurisdiction: str, record: Body, if_match: str | None = None
    ) -> m.PolicyRead:
        """Save a jurisdiction's F-SLA record (admin); ``if_match``: the version it replaces."""
        path = f"/v1/policies/{segment(jurisdiction)}"
        return self._call(
            Call("PUT", path, m.PolicyRead, json=_json(record), headers=_if_match(if_match))
        )

    @operation("patch_policy")
    def patch_policy(
        self, jurisdiction: str, patch: Mapping[str, Any], if_match: str | None = None
    ) -> m.PolicyRead:
        """Change some fields of a record (JSON Merge Patch, RFC 7396; admin)."""
        headers = {"Content-Type": "application/merge-patch+json", **_if_match(if_match)}
        path = f"/v1/policies/{segment(jurisdiction)}"
        body = jsonlib.dumps(dict(patch)).encode()
        return self._call(Call("PATCH", path, m.PolicyRead, content=body, headers=headers))

    @operation("list_policy_versions")
    def list_policy_versions(
        self, jurisdiction: str, after: int | None = None, limit: int | None = None
    ) -> m.PolicyVersionPage:
        path = f"/v1/policies/{segment(jurisdiction)}/versions"
        params = _params(after=after, limit=limit)
        return self._call(Call("GET", path, m.PolicyVersionPage, params=params))

    @operation("get_policy_version")
    def get_policy_version(self, jurisdiction: str, number: int) -> m.PolicyRead:
        path = f"/v1/policies/{segment(jurisdiction)}/versions/{int(number)}"
        return self._call(Call("GET", path, m.PolicyRead))

    @operation("diff_policy_versions")
    def diff_policy_versions(self, jurisdiction: str, old: int, new: int) -> m.PolicyDiff:
        path = f"/v1/policies/{segment(jurisdiction)}/versions/{int(old)}/diff/{int(new)}"
        return self._call(Call("GET", path, m.PolicyDiff))

    @operation("check_policy")
    def check_policy(self, jurisdiction: str, record: Body) -> m.PolicyCheck:
        """What the broker finds wrong in a record, without saving it."""
        path = f"/v1/policies/{segment(jurisdiction)}/check"
        return self._call(Call("POST", path, m.PolicyCheck, json=_json(record)))

    @operation("replay_policy")
    def replay_policy(
        self,
        jurisdiction: str,
        record: Body,
        limit: int | None = None,
        since: str | None = None,
        before: str | None = None,
    ) -> m.PolicyReplay:
        """How past transfers would have been decided under ``record``."""
        path = f"/v1/policies/{segment(jurisdiction)}/replay"
        params = _params(limit=limit, since=since, before=before)
        return self._call(Call("POST", path, m.PolicyReplay, params=params, json=_json(record)))

    # --- members -----------------------------------------------------------------------------

    @operation("list_members")
    def list_members(self) -> list[m.MemberRead]:
        """Service discovery: every member cloud, with its jurisdiction and inbox URL."""
        return self._call(Call("GET", "/v1/members", list[m.MemberRead]))

    @operation("register_member")
    def register_member(
        self,
        id: str,
        name: str,
        jurisdiction: str,
        inbox_url: str,
        health_url: str | None = None,
    ) -> m.MemberCreated:
        """Register a member cloud (admin). The answer holds ``api_key``, shown once; an
        existing id raises :class:`Conflict`."""
        body = _params(
            id=id, name=name, jurisdiction=jurisdiction, inbox_url=inbox_url, health_url=health_url
        )
        return self._call(Call("POST", "/v1/members", m.MemberCreated, json=body))

    @operation("get_member")
    def get_member(self, member_id: str) -> m.MemberRead:
        return self._call(Call("GET", f"/v1/members/{segment(member_id)}", m.MemberRead))

    @operation("suspend_member")
    def suspend_member(self, member_id: str) -> m.MemberRead:
        path = f"/v1/members/{segment(member_id)}/suspend"
        return self._call(Call("POST", path, m.MemberRead))

    @operation("reactivate_member")
    def reactivate_member(self, member_id: str) -> m.MemberRead:
        path = f"/v1/members/{segment(member_id)}/reactivate"
        return self._call(Call("POST", path, m.MemberRead))

    @operation("rotate_member_key")
    def rotate_member_key(self, member_id: str) -> m.KeyRotated:
        """A new API key (shown once); the current one works until ``previous_key_valid_until``."""
        path = f"/v1/members/{segment(member_id)}/api-key"
        return self._call(Call("POST", path, m.KeyRotated))

    @operation("revoke_member_keys")
    def revoke_member_keys(self, member_id: str) -> m.MemberRead:
        """Every key of a member stops working at once (admin)."""
        path = f"/v1/members/{segment(member_id)}/api-key/revoke"
        return self._call(Call("POST", path, m.MemberRead))

    # --- transfers ---------------------------------------------------------------------------

    @operation("create_transfer")
    def create_transfer(
        self,
        data: Upload | None,
        filename: str,
        destination: str,
        purpose: str,
        quasi_identifiers: Sequence[str] | str | None = None,
        sensitive: Sequence[str] | str | None = None,
        person_key: str | None = None,
        anonymize: str | None = None,
        location: str | None = None,
        min_utility_percent: float | None = None,
        agreement_id: str | None = None,
        dry_run: bool = False,
        kind: str | None = None,
        queries: Sequence[Mapping[str, Any]] | None = None,
        epsilon: str | float | None = None,
        delta: str | float | None = None,
        idempotency_key: str | None = None,
        content_type: str | None = None,
        respond_async: bool = False,
        hierarchy: Mapping[str, Upload] | None = None,
    ) -> m.TransferRead:
        """Ask the broker to send a dataset to another member (member key); its decision.

        A transfer decided in the background (``202 Accepted``, or ``respond_async``) is polled
        until decided. ``idempotency_key`` (a random one when not given) makes every retry
        replay the first decision instead of making a second transfer. ``kind="aggregate"``
        with ``queries`` and ``epsilon``: statistics under differential privacy instead of rows.
        ``data=None`` with ``location``: the broker reads the file there. ``hierarchy``: column
        -> an ARX hierarchy file (its bytes or a file object) for the remedy to follow.
        """
        form = _form(
            destination=destination,
            purpose=purpose,
            quasi_identifiers=columns(quasi_identifiers),
            sensitive=columns(sensitive),
            person_key=person_key,
            anonymize=anonymize,
            location=location,
            min_utility_percent=min_utility_percent,
            agreement_id=agreement_id,
            dry_run=dry_run,
            kind=kind,
            queries=None if queries is None else jsonlib.dumps(list(queries)),
            epsilon=epsilon,
            delta=delta,
        )
        headers = idempotency(idempotency_key)
        if respond_async:
            headers["Prefer"] = "respond-async"
        files = None if data is None else _file(data, filename, content_type)
        if hierarchy:
            files = [
                *(files or {}).items(),
                *(
                    ("hierarchy", (f"{column}.csv", content, "text/csv"))
                    for column, content in hierarchy.items()
                ),
            ]
        return self._call(
            Call(
                "POST",
                "/v1/transfers",
                m.TransferRead,
                data=form,
                files=files,
                headers=headers,
                follow_job=True,
            )
        )

    @operation("list_transfers")
    def list_transfers(
        self, status: str | None = None, offset: int = 0, limit: int = 20
    ) -> m.TransferPage:
        """A page of the caller's transfers, newest first."""
        params = _params(status=status, offset=offset, limit=limit)
        return self._call(Call("GET", "/v1/transfers", m.TransferPage, params=params))

    @operation("get_transfer_job")
    def get_transfer_job(self, job_id: str) -> m.TransferJobRead:
        path = f"/v1/transfers/jobs/{segment(job_id)}"
        return self._call(Call("GET", path, m.TransferJobRead))

    @operation("get_transfer")
    def get_transfer(self, transfer_id: str) -> m.TransferRead:
        """One transfer the caller sent or received: decision, rules, delivery state."""
        path = f"/v1/transfers/{segment(transfer_id)}"
        return self._call(Call("GET", path, m.TransferRead))

    @operation("redeliver_transfer")
    def redeliver_transfer(self, transfer_id: str) -> m.TransferRead:
        path = f"/v1/transfers/{segment(transfer_id)}/redeliver"
        return self._call(Call("POST", path, m.TransferRead))

    @operation("erase_transfer")
    def erase_transfer(self, transfer_id: str) -> m.TransferRead:
        """Tell the broker this member deleted what a transfer delivered to it."""
        path = f"/v1/transfers/{segment(transfer_id)}/erasure"
        return self._call(Call("POST", path, m.TransferRead))

    @operation("get_dry_run_data")
    def get_dry_run_data(self, dry_run_id: str) -> bytes:
        """The data a dry run would have sent, for a while after it."""
        path = f"/v1/transfers/dry-runs/{segment(dry_run_id)}/data"
        return self._call(Call("GET", path, bytes))

    @operation("get_transfer_report")
    def get_transfer_report(self, transfer_id: str) -> str:
        """A transfer's report as an HTML page."""
        path = f"/v1/transfers/{segment(transfer_id)}/report"
        return self._call(Call("GET", path, str))

    # --- the catalog -------------------------------------------------------------------------

    @operation("list_catalog")
    def list_catalog(
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
        could get under ``odrl:hasPolicy``)."""
        params = _params(
            jurisdiction=jurisdiction,
            purpose=purpose,
            column=column,
            q=keywords,
            provider=provider,
            offset=offset,
            limit=limit,
        )
        return self._call(Call("GET", "/v1/catalog", dict[str, Any], params=params))

    @operation("get_catalog_dataset")
    def get_catalog_dataset(self, dataset_id: str, version: int | None = None) -> dict[str, Any]:
        """A catalogued dataset as JSON-LD, with the offers this member could get."""
        path = f"/v1/catalog/datasets/{segment(dataset_id)}"
        return self._call(Call("GET", path, dict[str, Any], params=_params(version=version)))

    @operation("publish_dataset")
    def publish_dataset(self, description: Body) -> m.CatalogEntryRead:
        """Describe a dataset this member holds (never the data): the catalog entry."""
        return self._call(
            Call("POST", "/v1/catalog/datasets", m.CatalogEntryRead, json=_json(description))
        )

    @operation("revise_dataset")
    def revise_dataset(
        self, dataset_id: str, description: Body, if_match: str | None = None
    ) -> m.CatalogEntryRead:
        path = f"/v1/catalog/datasets/{segment(dataset_id)}"
        return self._call(
            Call(
                "PUT",
                path,
                m.CatalogEntryRead,
                json=_json(description),
                headers=_if_match(if_match),
            )
        )

    @operation("withdraw_dataset")
    def withdraw_dataset(self, dataset_id: str) -> None:
        return self._call(Call("DELETE", f"/v1/catalog/datasets/{segment(dataset_id)}", None))

    @operation("list_catalog_versions")
    def list_catalog_versions(self, dataset_id: str) -> list[m.CatalogEntryRead]:
        path = f"/v1/catalog/datasets/{segment(dataset_id)}/versions"
        return self._call(Call("GET", path, list[m.CatalogEntryRead]))

    @operation("measure_dataset")
    def measure_dataset(
        self, dataset_id: str, data: Upload, filename: str, content_type: str | None = None
    ) -> m.CatalogEntryRead:
        """Have the broker measure the file an entry describes; it keeps the figures only."""
        path = f"/v1/catalog/datasets/{segment(dataset_id)}/measurement"
        files = _file(data, filename, content_type)
        return self._call(Call("POST", path, m.CatalogEntryRead, files=files))

    # --- negotiations and agreements ---------------------------------------------------------

    @operation("create_negotiation")
    def create_negotiation(
        self,
        dataset_id: str,
        purpose: str,
        columns: Sequence[str] | None = None,
        retention_days: int | None = None,
        idempotency_key: str | None = None,
    ) -> m.NegotiationRead:
        """Ask for a catalogued dataset (the consumer): REQUESTED with the broker's terms, or
        TERMINATED with the reason."""
        body = {
            "dataset_id": dataset_id,
            "purpose": purpose,
            "columns": None if columns is None else list(columns),
            "retention_days": retention_days,
        }
        return self._call(
            Call(
                "POST",
                "/v1/negotiations",
                m.NegotiationRead,
                json=body,
                headers=idempotency(idempotency_key),
            )
        )

    @operation("list_negotiations")
    def list_negotiations(
        self, states: Sequence[str] = (), offset: int = 0, limit: int = 20
    ) -> m.NegotiationPage:
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        if states:
            params["state"] = list(states)
        return self._call(Call("GET", "/v1/negotiations", m.NegotiationPage, params=params))

    @operation("get_negotiation")
    def get_negotiation(self, negotiation_id: str) -> m.NegotiationRead:
        path = f"/v1/negotiations/{segment(negotiation_id)}"
        return self._call(Call("GET", path, m.NegotiationRead))

    @operation("offer_negotiation")
    def offer_negotiation(
        self,
        negotiation_id: str,
        terms: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> m.NegotiationRead:
        """Offer the broker's terms (the provider), or stricter ones (``terms``: the fields to
        change, e.g. ``{"min_k": 5}``)."""
        body = {"terms": None if terms is None else dict(terms)}
        return self._message(negotiation_id, "offer", body, idempotency_key)

    @operation("request_negotiation")
    def request_negotiation(
        self,
        negotiation_id: str,
        columns: Sequence[str] | None = None,
        retention_days: int | None = None,
        idempotency_key: str | None = None,
    ) -> m.NegotiationRead:
        """Answer an offer with another request (the consumer)."""
        body = {
            "columns": None if columns is None else list(columns),
            "retention_days": retention_days,
        }
        return self._message(negotiation_id, "request", body, idempotency_key)

    @operation("accept_negotiation")
    def accept_negotiation(
        self, negotiation_id: str, idempotency_key: str | None = None
    ) -> m.NegotiationRead:
        """Accept the offer (the consumer): the broker signs the agreement."""
        return self._message(negotiation_id, "accept", None, idempotency_key)

    @operation("verify_negotiation")
    def verify_negotiation(
        self, negotiation_id: str, idempotency_key: str | None = None
    ) -> m.NegotiationRead:
        """Confirm the agreement's signature was checked (the consumer): FINALIZED."""
        return self._message(negotiation_id, "verify", None, idempotency_key)

    @operation("terminate_negotiation")
    def terminate_negotiation(
        self, negotiation_id: str, reason: str, idempotency_key: str | None = None
    ) -> m.NegotiationRead:
        return self._message(negotiation_id, "terminate", {"reason": reason}, idempotency_key)

    def _message(
        self,
        negotiation_id: str,
        verb: str,
        body: dict[str, Any] | None,
        idempotency_key: str | None,
    ) -> m.NegotiationRead:
        path = f"/v1/negotiations/{segment(negotiation_id)}/{verb}"
        return self._call(
            Call("POST", path, m.NegotiationRead, json=body, headers=idempotency(idempotency_key))
        )

    @operation("list_agreements")
    def list_agreements(self, offset: int = 0, limit: int = 20) -> m.AgreementPage:
        params = {"offset": offset, "limit": limit}
        return self._call(Call("GET", "/v1/agreements", m.AgreementPage, params=params))

    @operation("get_agreement")
    def get_agreement(self, agreement_id: str) -> m.AgreementRead:
        """An agreement: its terms, the document the broker signed and its signature."""
        path = f"/v1/agreements/{segment(agreement_id)}"
        return self._call(Call("GET", path, m.AgreementRead))

    @operation("list_notifications")
    def list_notifications(self, after: int = 0, limit: int = 100) -> list[m.NotificationRead]:
        """What this member must know (agreements suspended or restored), after id ``after``."""
        params = {"after": after, "limit": limit}
        return self._call(Call("GET", "/v1/notifications", list[m.NotificationRead], params=params))

    # --- measurement -------------------------------------------------------------------------

    @operation("analyze_dataset")
    def analyze_dataset(
        self,
        data: Upload,
        filename: str,
        quasi_identifiers: Sequence[str] | str | None = None,
        sensitive: Sequence[str] | str | None = None,
        combinations: int | None = None,
        alpha: float | None = None,
        beta: float | None = None,
        sampling_fraction: float | None = None,
        weights: str | None = None,
        suda: bool | None = None,
        suda_dis_fraction: float | None = None,
        suda_max_msu: int | None = None,
        content_type: str | None = None,
    ) -> m.Report:
        """Measure a dataset (Mmaq, k, l, t, risk; SUDA with ``suda=True``) without any
        policy; nothing is stored."""
        form = _form(
            quasi_identifiers=columns(quasi_identifiers),
            sensitive=columns(sensitive),
            combinations=combinations,
            alpha=alpha,
            beta=beta,
            sampling_fraction=sampling_fraction,
            weights=weights,
            suda=suda,
            suda_dis_fraction=suda_dis_fraction,
            suda_max_msu=suda_max_msu,
        )
        files = _file(data, filename, content_type)
        return self._call(Call("POST", "/v1/analyze", m.Report, data=form, files=files))

    # --- audit, administrators, the federation -----------------------------------------------

    @operation("list_audit_entries")
    def list_audit_entries(self, after: int | None = None, limit: int | None = None) -> m.AuditPage:
        params = _params(after=after, limit=limit)
        return self._call(Call("GET", "/v1/audit", m.AuditPage, params=params))

    @operation("verify_audit_chain")
    def verify_audit_chain(self) -> m.AuditVerification:
        return self._call(Call("GET", "/v1/audit/verify", m.AuditVerification))

    @operation("list_admins")
    def list_admins(self) -> list[m.AdministratorRead]:
        return self._call(Call("GET", "/v1/admins", list[m.AdministratorRead]))

    @operation("create_admin")
    def create_admin(self, name: str) -> m.AdministratorCreated:
        """A named administrator; its token is in the answer, shown once."""
        return self._call(Call("POST", "/v1/admins", m.AdministratorCreated, json={"name": name}))

    @operation("revoke_admin")
    def revoke_admin(self, name: str) -> m.AdministratorRead:
        path = f"/v1/admins/{segment(name)}/revoke"
        return self._call(Call("POST", path, m.AdministratorRead))

    @operation("get_federation_overview")
    def get_federation_overview(self, days: int | None = None) -> m.FederationOverview:
        params = _params(days=days)
        return self._call(
            Call("GET", "/v1/federation/overview", m.FederationOverview, params=params)
        )

    @operation("get_federation_overview_page")
    def get_federation_overview_page(self, days: int | None = None) -> str:
        """The overview as an HTML page."""
        params = _params(days=days)
        return self._call(Call("GET", "/v1/federation/overview.html", str, params=params))

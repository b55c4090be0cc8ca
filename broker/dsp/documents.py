"""The protocol's documents the broker sends, built from the market's own records.

Pure: plain data in, dicts out, in the compact form of release 2025-1 (one ``@context``, terms
without prefixes). ODRL's right operands are strings in this release's schema, so k, l, t and
periods are written as text. What the protocol has no term for (the measurement, the columns, why
an offer is anonymized) is left out here; the ``/v1`` catalog carries it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from broker.catalog.jsonld import anonymity_bounds, dataset_iri, member_iri, offer_iri
from broker.fsla.offers import Offer, Terms
from broker.wire.statuses import OfferKind

VERSION = "2025-1"
CONTEXT = ["https://w3id.org/dspace/2025/1/context.jsonld"]
MEDIA_TYPE = "application/json"
PROVIDER_PID = "urn:uuid:"  # a negotiation's or a transfer process's providerPid: its id as a URN
# The one transfer type the broker does: it pushes the data, over HTTP, to the consumer member's
# registered inbox (the name Eclipse EDC gives a push over HTTP).
PUSH_FORMAT = "HttpData-PUSH"


class ProtocolError(Exception):
    """An error a protocol route answers with the binding's error document (and the
    negotiation's pids where known), raised where the protocol's rules, not the market's, are
    broken."""

    def __init__(self, status: int, reason: str, pids: dict[str, str] | None = None):
        super().__init__(reason)
        self.status, self.reason, self.pids = status, reason, pids or {}


def version_document(path: str, participant: str) -> dict[str, Any]:
    """``/.well-known/dspace-version``: the one binding the broker speaks, and where."""
    return {
        "protocolVersions": [
            {
                "version": VERSION,
                "path": path,
                "binding": "HTTPS",
                "serviceId": participant,
            }
        ]
    }


def catalog(datasets: Sequence[dict[str, Any]], broker_url: str, participant: str) -> dict:
    """A Catalog holding ``datasets`` (each made by :func:`dataset`, its context removed)."""
    return {
        "@context": CONTEXT,
        "@id": f"{broker_url}/catalog",
        "@type": "Catalog",
        "participantId": participant,
        "service": [_service(broker_url)],
        "dataset": [{k: v for k, v in d.items() if k != "@context"} for d in datasets],
    }


def dataset(entry: dict[str, Any], offers: Sequence[Offer], broker_url: str) -> dict[str, Any]:
    """One Dataset with the offers the broker can make the caller (refusals left out: the
    schema asks for at least one offer, so a dataset the caller can get nothing of is not
    listed, and asking for it answers 404)."""
    description = entry["description"]
    return {
        "@context": CONTEXT,
        "@id": dataset_iri(entry["id"]),
        "@type": "Dataset",
        "title": description["title"],
        "description": description.get("description", ""),
        "keyword": list(description.get("keywords", [])),
        "version": str(entry["version"]),
        "publisher": member_iri(entry["provider"]),
        "hasPolicy": [_offer(entry, offer) for offer in offers if offer.kind != OfferKind.REFUSED],
        "distribution": [
            {
                "@type": "Distribution",
                "format": PUSH_FORMAT,
                "accessService": _service(broker_url)["@id"],
            }
        ],
    }


def has_offers(offers: Sequence[Offer]) -> bool:
    return any(offer.kind != OfferKind.REFUSED for offer in offers)


def negotiation(provider_pid: str, consumer_pid: str, state: str) -> dict[str, Any]:
    return {
        "@context": CONTEXT,
        "@type": "ContractNegotiation",
        "providerPid": PROVIDER_PID + provider_pid,
        "consumerPid": consumer_pid,
        "state": state,
    }


def error(kind: str, code: int, reason: str, pids: dict[str, str] | None = None) -> dict:
    """A CatalogError or ContractNegotiationError: the HTTP status as ``code``, the reason in
    words (and the negotiation's pids, where known)."""
    return {
        "@context": CONTEXT,
        "@type": kind,
        **(pids or {}),
        "code": str(code),
        "reason": [reason],
    }


def policy(terms: Terms) -> dict[str, Any]:
    """The permission to use for the purpose, its duties (anonymize to k, l, t; delete after
    the retention) and, without onward transfer, the prohibition to distribute."""
    anonymize = [
        _constraint(name, operator, str(value)) for name, operator, value in anonymity_bounds(terms)
    ]
    duties = []
    if anonymize:
        duties.append({"action": "anonymize", "constraint": anonymize})
    if terms.retention_days is not None:
        period = f"P{terms.retention_days}D"
        duties.append(
            {"action": "delete", "constraint": [_constraint("elapsedTime", "lteq", period)]}
        )
    permission: dict[str, Any] = {
        "action": "use",
        "constraint": [_constraint("purpose", "eq", terms.purpose)],
    }
    if duties:
        permission["duty"] = duties
    found: dict[str, Any] = {"permission": [permission]}
    if not terms.onward_transfer:
        found["prohibition"] = [{"action": "distribute"}]
    return found


def _offer(entry: dict[str, Any], offer: Offer) -> dict[str, Any]:
    return {
        "@id": offer_iri(entry["id"], entry["version"], offer.purpose),
        "@type": "Offer",
        "assigner": member_iri(entry["provider"]),
        **policy(offer.terms),
    }


def _constraint(left: str, operator: str, right: str) -> dict[str, str]:
    return {"leftOperand": left, "operator": operator, "rightOperand": right}


def _service(broker_url: str) -> dict[str, Any]:
    return {"@id": f"{broker_url}", "@type": "DataService", "endpointURL": broker_url}


def offer_message(
    negotiation_id: str, consumer_pid: str, dataset_id: str, version: int, terms: Terms
) -> dict[str, Any]:
    """The provider's offer (ContractOfferMessage) on a negotiation the consumer started."""
    return {
        "@context": CONTEXT,
        "@type": "ContractOfferMessage",
        "providerPid": PROVIDER_PID + negotiation_id,
        "consumerPid": consumer_pid,
        "offer": {
            "@id": offer_iri(dataset_id, version, terms.purpose),
            "@type": "Offer",
            "target": dataset_iri(dataset_id),
            **policy(terms),
        },
    }


def agreement_message(negotiation_id: str, consumer_pid: str, signed: dict[str, Any]) -> dict:
    """The agreement the broker signed (its stored ``document``), as a ContractAgreementMessage."""
    return {
        "@context": CONTEXT,
        "@type": "ContractAgreementMessage",
        "providerPid": PROVIDER_PID + negotiation_id,
        "consumerPid": consumer_pid,
        "agreement": {
            "@id": PROVIDER_PID + signed["id"],
            "@type": "Agreement",
            "target": dataset_iri(signed["dataset"]["id"]),
            "timestamp": signed["signed_at"],
            "assigner": member_iri(signed["provider"]),
            "assignee": member_iri(signed["consumer"]),
            **policy(Terms.of(signed["terms"])),
        },
    }


def event_message(negotiation_id: str, consumer_pid: str, event: str) -> dict[str, Any]:
    return {
        "@context": CONTEXT,
        "@type": "ContractNegotiationEventMessage",
        "providerPid": PROVIDER_PID + negotiation_id,
        "consumerPid": consumer_pid,
        "eventType": event,
    }


def termination_message(negotiation_id: str, consumer_pid: str, reason: str) -> dict[str, Any]:
    return {
        "@context": CONTEXT,
        "@type": "ContractNegotiationTerminationMessage",
        "providerPid": PROVIDER_PID + negotiation_id,
        "consumerPid": consumer_pid,
        "code": "terminated",
        "reason": [reason],
    }


def transfer_process(provider_pid: str, consumer_pid: str, state: str) -> dict[str, Any]:
    return {
        "@context": CONTEXT,
        "@type": "TransferProcess",
        "providerPid": PROVIDER_PID + provider_pid,
        "consumerPid": consumer_pid,
        "state": state,
    }


def transfer_message(
    kind: str, provider_pid: str, consumer_pid: str, reason: str | None = None
) -> dict[str, Any]:
    """A provider's message on a transfer process (``kind``: TransferStartMessage,
    TransferCompletionMessage, TransferSuspensionMessage or TransferTerminationMessage), with
    the broker's ``reason`` where it gives one. A start names no ``dataAddress``: the data is
    pushed to the consumer member's registered inbox, not fetched."""
    found: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": kind,
        "providerPid": PROVIDER_PID + provider_pid,
        "consumerPid": consumer_pid,
    }
    if reason:
        found |= {"code": "terminated", "reason": [reason]}
    return found

"""The catalog as JSON-LD, in the vocabularies the European dataspaces use.

The Eclipse Dataspace Protocol's catalog is a DCAT catalog (W3C Data Catalog Vocabulary,
version 3): each dataset a ``dcat:Dataset`` with its ``dcat:distribution`` and, under
``odrl:hasPolicy``, the offers its provider makes, each an ``odrl:Offer`` (W3C Open Digital
Rights Language 2.2): a permission to ``use`` it for a purpose (``odrl:purpose``), with duties
(``odrl:anonymize`` to the offer's k, l and t; ``odrl:delete`` once ``odrl:elapsedTime`` passes the
retention period) and the prohibition to ``odrl:distribute`` it further. What those vocabularies
have no word for (k, l, t, a column's role, the broker's measurement) is in this product's own
namespace, ``fedbroker:`` (``urn:fedbroker:vocab:``). The context is written inline, so that a
reader expands the documents without fetching anything.

Pure: plain data in, dicts out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from broker.fsla.models import RuleSet
from broker.fsla.offers import Offer, Terms
from broker.fsla.stricter import HIGHER, LOWER, declaration
from broker.wire.statuses import OfferKind

VOCAB = "urn:fedbroker:vocab:"
CONTEXT = {
    "dcat": "http://www.w3.org/ns/dcat#",
    "dct": "http://purl.org/dc/terms/",
    "odrl": "http://www.w3.org/ns/odrl/2/",
    "dspace": "https://w3id.org/dspace/2024/1/",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "fedbroker": VOCAB,
}
MEDIA_TYPE = "application/ld+json"
FORMATS = {
    "csv": "text/csv",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}


def dataset_iri(dataset_id: str) -> str:
    return f"urn:uuid:{dataset_id}"


def member_iri(member_id: str) -> str:
    return f"urn:fedbroker:member:{member_id}"


def catalog(
    datasets: Sequence[dict[str, Any]], total: int, offset: int, limit: int, broker_url: str
) -> dict[str, Any]:
    """The catalog page holding ``datasets`` (each made by :func:`dataset`)."""
    return {
        "@context": CONTEXT,
        "@id": f"{broker_url}/v1/catalog",
        "@type": "dcat:Catalog",
        "dct:title": "The federation's dataset catalog",
        "dct:description": "Datasets the federation's member clouds describe, with the offers "
        "the federal broker can make from their jurisdictions' F-SLA records",
        "dspace:participantId": "fedbroker",
        "dcat:service": [_service(broker_url)],
        "dcat:dataset": [_without_context(d) for d in datasets],
        "fedbroker:total": total,
        "fedbroker:offset": offset,
        "fedbroker:limit": limit,
    }


def dataset(
    entry: dict[str, Any],
    offers: Sequence[Offer] | None,
    broker_url: str,
) -> dict[str, Any]:
    """One dataset: ``entry`` holds ``id``, ``provider``, ``jurisdiction``, ``version``,
    ``description`` (a :class:`~broker.catalog.schemas.DatasetDescription` as a dict),
    ``summary``, ``measured_at``, ``updated_at``; ``offers``: those for the member asking
    (None: not shown, for an administrator)."""
    description = entry["description"]
    iri = dataset_iri(entry["id"])
    found: dict[str, Any] = {
        "@context": CONTEXT,
        "@id": iri,
        "@type": "dcat:Dataset",
        "dct:identifier": entry["id"],
        "dct:title": description["title"],
        "dct:description": description.get("description", ""),
        "dcat:keyword": list(description.get("keywords", [])),
        "dcat:version": str(entry["version"]),
        "dct:publisher": {"@id": member_iri(entry["provider"])},
        "fedbroker:providerHealth": entry.get("provider_health", "unknown"),
        "dct:spatial": entry["jurisdiction"],
        "dct:modified": _date(entry["updated_at"]),
        "fedbroker:column": [
            {
                "@type": "fedbroker:Column",
                "fedbroker:name": column["name"],
                "fedbroker:role": column["role"],
                "dct:description": column.get("description", ""),
            }
            for column in description["columns"]
        ],
        "dcat:distribution": [
            {
                "@type": "dcat:Distribution",
                "dcat:mediaType": FORMATS[description.get("format", "csv")],
                "dcat:accessService": {"@id": f"{broker_url}/v1/transfers"},
            }
        ],
    }
    if description.get("rows") is not None:
        found["fedbroker:rows"] = description["rows"]
    if description.get("purposes"):
        found["fedbroker:purpose"] = list(description["purposes"])
    if entry.get("summary"):
        found["fedbroker:measurement"] = _measurement(entry["summary"], entry.get("measured_at"))
    if offers is not None:
        made = [o for o in offers if o.kind != OfferKind.REFUSED]
        found["odrl:hasPolicy"] = [_offer(entry, o) for o in made]
        found["fedbroker:refusal"] = [
            {"fedbroker:purpose": o.purpose, "fedbroker:reason": list(o.reasons)}
            for o in offers
            if o.kind == OfferKind.REFUSED
        ]
    return found


def offer_iri(dataset_id: str, version: int, purpose: str) -> str:
    return f"urn:fedbroker:offer:{dataset_id}:{version}:{purpose.casefold()}"


def _offer(entry: dict[str, Any], offer: Offer) -> dict[str, Any]:
    terms = offer.terms
    iri = offer_iri(entry["id"], entry["version"], offer.purpose)
    return {
        "@id": iri,
        "@type": "odrl:Offer",
        "odrl:uid": {"@id": iri},
        "odrl:assigner": {"@id": member_iri(entry["provider"])},
        "odrl:target": {"@id": dataset_iri(entry["id"])},
        "fedbroker:offerKind": offer.kind,
        "fedbroker:expectedUtilityPercent": offer.expected_utility_percent,
        "fedbroker:note": list(offer.reasons),
        **policy(terms),
    }


# The ODRL operator of a rule, from its declared stricter direction (broker.fsla.stricter).
_OPERATORS = {HIGHER: "gteq", LOWER: "lteq"}


def anonymity_bounds(terms: Terms) -> list[tuple[str, str, Any]]:
    """``(name, ODRL operator, value)`` of the k, l and t the terms ask, each operator from its
    rule's declared stricter direction: one source for every rendering of an offer."""
    return [
        (name, _OPERATORS[declaration(RuleSet, rule)["stricter"]], value)
        for name, rule, value in (
            ("k", "min_k", terms.min_k),
            ("l", "min_l", terms.min_l),
            ("t", "max_t", terms.max_t),
        )
        if value is not None
    ]


def policy(terms: Terms) -> dict[str, Any]:
    """The ODRL rules of ``terms``: a permission to use for the purpose with its duties, and
    the prohibition to distribute (unless the terms allow onward transfer)."""
    anonymize = [
        _constraint(f"fedbroker:{name}", f"odrl:{operator}", value)
        for name, operator, value in anonymity_bounds(terms)
    ]
    duties = []
    if anonymize:
        duties.append({"odrl:action": {"@id": "odrl:anonymize"}, "odrl:constraint": anonymize})
    if terms.retention_days is not None:
        period = {"@value": f"P{terms.retention_days}D", "@type": "xsd:duration"}
        duties.append(
            {
                "odrl:action": {"@id": "odrl:delete"},
                "odrl:constraint": [_constraint("odrl:elapsedTime", "odrl:lteq", period)],
            }
        )
    permission = {
        "odrl:action": {"@id": "odrl:use"},
        "odrl:constraint": [_constraint("odrl:purpose", "odrl:eq", terms.purpose)],
        "odrl:duty": duties,
    }
    found: dict[str, Any] = {
        "odrl:permission": [permission],
        "fedbroker:columns": list(terms.columns),
        "fedbroker:identifiersAllowed": terms.identifiers_allowed,
    }
    if not terms.onward_transfer:
        found["odrl:prohibition"] = [{"odrl:action": {"@id": "odrl:distribute"}}]
    return found


def agreement(document: dict[str, Any]) -> dict[str, Any]:
    """An agreement the broker signed (its ``document``) as an ``odrl:Agreement``: the
    provider assigns, the consumer is assigned, the terms are its rules."""
    terms = Terms.of(document["terms"])
    return {
        "@context": CONTEXT,
        "@id": f"urn:uuid:{document['id']}",
        "@type": "odrl:Agreement",
        "odrl:uid": {"@id": f"urn:uuid:{document['id']}"},
        "odrl:assigner": {"@id": member_iri(document["provider"])},
        "odrl:assignee": {"@id": member_iri(document["consumer"])},
        "odrl:target": {"@id": dataset_iri(document["dataset"]["id"])},
        "dcat:version": str(document["dataset"]["version"]),
        "dct:issued": {"@value": document["signed_at"], "@type": "xsd:dateTime"},
        **policy(terms),
    }


def _constraint(left: str, operator: str, right: Any) -> dict[str, Any]:
    return {
        "odrl:leftOperand": {"@id": left},
        "odrl:operator": {"@id": operator},
        "odrl:rightOperand": right,
    }


def _measurement(summary: dict[str, Any], measured_at: datetime | None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "@type": "fedbroker:Measurement",
        "fedbroker:rows": summary.get("rows"),
        "fedbroker:k": summary.get("k"),
        "fedbroker:l": summary.get("l"),
        "fedbroker:t": summary.get("t"),
        "fedbroker:maxProsecutorRisk": summary.get("max_prosecutor_risk"),
        "fedbroker:quasiIdentifier": list(summary.get("quasi_identifiers", [])),
        "fedbroker:identifyingColumn": list(summary.get("identifiers", [])),
    }
    if measured_at is not None:
        found["dct:issued"] = _date(measured_at)
    return {key: value for key, value in found.items() if value is not None}


def _service(broker_url: str) -> dict[str, Any]:
    return {
        "@id": f"{broker_url}/v1",
        "@type": "dcat:DataService",
        "dcat:endpointURL": {"@id": f"{broker_url}/v1"},
        "dcat:endpointDescription": {"@id": f"{broker_url}/openapi.json"},
    }


def _date(moment: datetime) -> dict[str, str]:
    return {"@value": moment.isoformat(), "@type": "xsd:dateTime"}


def _without_context(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key != "@context"}

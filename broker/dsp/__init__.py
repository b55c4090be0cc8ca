"""The Eclipse Dataspace Protocol's HTTPS binding (release 2025-1), beside the ``/v1`` API.

A dataspace connector (Eclipse EDC and the others that implement the protocol) talks to the
broker as to the provider's agent: the catalog, one dataset, and the contract negotiation's
provider endpoints, in the protocol's compact JSON-LD messages. The broker stands in as the
compliance authority, with the same F-SLA evaluation, offers and agreements as the ``/v1``
market: a protocol negotiation and a ``/v1`` negotiation are the same negotiation seen two ways.

Explained in ``docs/explanations/dataspace-protocol.md``.
"""

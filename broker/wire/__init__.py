"""The federation's wire contract, shared by the broker and the member clouds.

What crosses the network between the two services and must mean the same on both sides: the
header names (:mod:`~broker.wire.headers`), the request id (:mod:`~broker.wire.request_id`), the
RFC 9457 problem+json answers (:mod:`~broker.wire.problems`) and the Ed25519 delivery signatures
(:mod:`~broker.wire.signing`); and where the broker may send at all
(:mod:`~broker.wire.inbox_urls`: an inbox URL never reaches the broker's own network). The
broker owns the protocol, so the package lives here; it imports nothing from the rest of
``broker``, and ``member_cloud`` imports nothing of ``broker`` but this package
(``tests/test_layering.py`` checks both).

Explained in ``docs/guides/verifying-deliveries.md``.
"""

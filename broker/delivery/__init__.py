"""The outbox and its worker: each approved transfer delivered once, signed for its recipient,
retried, held while its destination is down.

Explained in ``docs/operations/operations.md``, ``docs/guides/verifying-deliveries.md``.
"""

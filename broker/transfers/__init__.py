"""The walk of a transfer: intake, the decision of its kind, one recording, the outbox row; jobs
for transfers decided in the background; the privacy budget ledger.

Explained in ``docs/guides/member-clouds.md``.
"""

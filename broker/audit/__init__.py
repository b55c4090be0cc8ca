"""The audit log: a hash chain of every decision and change, verified and exported as a head.

Explained in ``docs/operations/operations.md``.
"""

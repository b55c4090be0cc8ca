"""The federation's administrators: their tokens, created, listed and revoked.

Explained in ``docs/guides/admins.md``.
"""

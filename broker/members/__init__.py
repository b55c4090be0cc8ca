"""Member clouds: registration, keys, inbox URLs, health.

Explained in ``docs/guides/admins.md``, ``docs/operations/monitoring.md``.
"""

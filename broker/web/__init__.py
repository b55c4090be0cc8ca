"""The HTTP layer around the routers: request dependencies, rate limits, JSON request logs,
/metrics, /livez and /readyz.

Explained in ``docs/operations/monitoring.md``, ``docs/operations/operations.md``.
"""

"""The database: engines, sessions, the start-up lock, migrations, PostgreSQL connections that give
up on a silent server.

Explained in ``docs/operations/deployment.md``, ``docs/operations/faults.md``.
"""

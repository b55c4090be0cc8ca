"""How data comes in: an upload copied into the spool, a reference to data that stays on the
cluster's storage (resolved once, its files pinned), either opened as a table.

Explained in ``docs/explanations/references.md``, ``docs/explanations/engines.md``.
"""

"""F-SLA records and the transfer decision: pure code with no web or database imports.

Explained in ``docs/explanations/measures.md``, ``docs/explanations/linkage.md``,
``docs/guides/admins.md``.
"""

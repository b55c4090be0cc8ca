"""PURE helpers on column names and values that the readers, the measures and the rules share: how
names compare, declared roles, what "missing" means, sender text read as numbers, identifying
precision.

Explained in ``docs/explanations/people-and-precision.md``, ``docs/explanations/border.md``.
"""

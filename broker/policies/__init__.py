"""F-SLA records: versioned, edited with If-Match, checked, replayed over past transfers, seeded
from policies/.

Explained in ``docs/guides/admins.md``.
"""

"""``POST /v1/analyze``: the measurement report of a dataset, without a transfer.

Explained in ``docs/guides/data-stewards.md``.
"""

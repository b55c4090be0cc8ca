"""The data market's catalog: DCAT descriptions members publish (never data), measured by the
broker, with ODRL offers for the asking member.

Explained in ``docs/explanations/market.md``.
"""

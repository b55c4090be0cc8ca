"""Contract negotiations of the data market (the Dataspace Protocol's states, the broker as
compliance authority) and the agreements they leave.

Explained in ``docs/explanations/market.md``.
"""

"""Per-member rate limits on the routes that make the broker measure (transfers, analyses).

A moving window per member (the ``limits`` library), counted in ``BROKER_RATE_LIMIT_STORAGE``:
in memory by default, so each broker process counts on its own; point several processes at one
shared store to share the budget. Over the limit, the answer is ``429`` problem+json with
``Retry-After``. Administrators are not limited.
"""

from __future__ import annotations

import math
import time

from limits import parse_many, storage, strategies

from broker.errors import TooManyRequests


class RateLimiter:
    def __init__(self, rate: str, storage_uri: str = "memory://"):
        self.items = parse_many(rate)
        self.limiter = strategies.MovingWindowRateLimiter(storage.storage_from_string(storage_uri))

    def check(self, key: str) -> None:
        """Count one request of ``key``; raise :class:`TooManyRequests` when over a limit."""
        for item in self.items:
            if not self.limiter.hit(item, "uploads", key):
                reset = self.limiter.get_window_stats(item, "uploads", key).reset_time
                wait = max(1, math.ceil(reset - time.time()))
                raise TooManyRequests(
                    f"Member {key!r} is over its upload rate ({item}): try again in {wait} s",
                    retry_after=wait,
                )

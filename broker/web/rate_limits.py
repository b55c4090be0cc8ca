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
    """``what`` names the counted action in the answer (and keeps its counts apart)."""

    def __init__(self, rate: str, storage_uri: str = "memory://", what: str = "upload"):
        self.items = parse_many(rate)
        self.in_memory = storage_uri.startswith("memory://")  # counting blocks on nothing
        self.limiter = strategies.MovingWindowRateLimiter(storage.storage_from_string(storage_uri))
        self.what = what
        self.namespace = "uploads" if what == "upload" else what

    def check(self, key: str, who: str | None = None) -> None:
        """Count one request of ``key`` (named ``who`` in the answer, by default a member);
        raise :class:`TooManyRequests` when over a limit."""
        for item in self.items:
            if not self.limiter.hit(item, self.namespace, key):
                reset = self.limiter.get_window_stats(item, self.namespace, key).reset_time
                wait = max(1, math.ceil(reset - time.time()))
                raise TooManyRequests(
                    f"{who or f'Member {key!r}'} is over its {self.what} rate ({item}): try "
                    f"again in {wait} s",
                    retry_after=wait,
                )

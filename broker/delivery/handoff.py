"""A delivery handed to this process's worker by the decision that approved it.

An approved transfer's outbox row is normally left due, and a worker's claim leases it (one
conditional UPDATE) and reads it back. A decision made in a broker process whose worker has a
free place instead writes the row already leased to that worker (:meth:`Handoff.reserve`, before
the decision's transaction) and hands it over once committed (:meth:`Handoff.hand`): no claim,
no wake-up of the worker's thread. The lease is the same one a claim takes, so exactly once holds
as it does for claimed rows: if the process stops before the delivery is made, the lease runs out
and any worker claims the row again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Lease:
    """A place reserved in a worker: the row's lease (``owner``, ``expires_at``, as a claim
    writes them) and the monotonic time the worker stops relying on it (``until``)."""

    owner: str
    expires_at: datetime
    until: float


class Handoff(Protocol):
    """What a decision needs of the delivery worker of its process."""

    def reserve(self) -> Lease | None:
        """A free place, reserved, or None (the row is then left due, for a claim)."""
        ...

    def hand(self, lease: Lease, transfer_id: str) -> None:
        """Start the delivery of ``transfer_id``, recorded (committed) under ``lease``."""
        ...

    def cancel(self, lease: Lease) -> None:
        """Give back a place whose decision was not recorded."""
        ...

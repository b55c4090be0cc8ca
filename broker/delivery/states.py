"""How a delivery is shown: its outbox status, or ``held`` while its destination is down. Pure.

*Held* is not stored: the outbox row stays ``pending`` and is simply not due while its
destination's health is ``down`` (:mod:`broker.delivery.repository`), so a health change needs no
write to the deliveries, and the state shown is read off the destination's health.
"""

from __future__ import annotations

from broker.delivery.schemas import DeliveryRead
from broker.members.health import HealthLike
from broker.wire.statuses import DeliveryState, HealthState


def held_reason(destination_id: str, health: HealthLike | None) -> str | None:
    """Why a pending delivery to ``destination_id`` is held, or None when it is not.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> from broker.members.health import Health
    >>> down = Health(HealthState.DOWN, since=datetime(2026, 11, 27, 9, 30, tzinfo=UTC))
    >>> held_reason("fr-research", down)[:61]
    'fr-research is down since 2026-11-27 09:30:00 UTC (its health'
    >>> held_reason("fr-research", Health(HealthState.UP)) is None
    True
    """
    if health is None or health.state != HealthState.DOWN:
        return None
    since = f" since {health.since:%Y-%m-%d %H:%M:%S} UTC" if health.since else ""
    return (
        f"{destination_id} is down{since} (its health check fails): the delivery waits without "
        f"spending attempts, and goes out once {destination_id} is up again"
    )


def shown(delivery: DeliveryRead, destination_id: str, health: HealthLike | None) -> DeliveryRead:
    """``delivery`` as the API shows it: a pending one to a destination that is down is held."""
    if delivery.status != DeliveryState.PENDING:
        return delivery
    reason = held_reason(destination_id, health)
    if reason is None:
        return delivery
    return delivery.model_copy(update={"status": DeliveryState.HELD, "held_reason": reason})

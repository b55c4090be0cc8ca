"""How the API shows a transfer's delivery (its outbox row)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from broker.wire.statuses import DeliveryState


class DeliveryRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    status: DeliveryState = Field(
        description="`not_applicable` when nothing is to be delivered; `held` while its "
        "destination is down (not attempted, its attempts not spent; it goes out once the "
        "destination is up)"
    )
    attempts: int = 0
    last_error: str | None = None
    delivered_at: datetime | None = None
    held_reason: str | None = Field(
        None, description="Why the delivery is held (None unless `status` is `held`)"
    )

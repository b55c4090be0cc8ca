from datetime import datetime

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field

from broker.fsla.models import JURISDICTION_PATTERN
from broker.wire.statuses import HealthState, MemberStatus


class MemberCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{1,62}$",
        examples=["sn-hospital"],
        description="Lower-case letters, digits and dashes",
    )
    name: str = Field(min_length=1, max_length=200, examples=["Hôpital Principal de Dakar"])
    jurisdiction: str = Field(
        pattern=JURISDICTION_PATTERN, examples=["SN"], description="Must have an F-SLA record"
    )
    inbox_url: AnyHttpUrl = Field(
        examples=["http://127.0.0.1:8101/inbox"],
        description="Where the broker delivers approved transfers",
    )
    health_url: AnyHttpUrl | None = Field(
        None,
        examples=["http://127.0.0.1:8101/readyz"],
        description="Where the broker checks the member's health (2xx: up); by default the "
        "`readyz` next to the inbox (`https://host/inbox` -> `https://host/readyz`). Must pass "
        "the federation's inbox policy, as the inbox URL does",
    )


class MemberHealthRead(BaseModel):
    """A member's health as the broker's checks of its `/readyz` last found it."""

    model_config = ConfigDict(from_attributes=True)

    state: HealthState = Field(
        description="`unknown` until the first check; `down` after failed checks in a row "
        "(deliveries to it are then held, their attempts not spent)"
    )
    since: datetime | None = Field(description="Since when it is in this state")
    checked_at: datetime | None = Field(description="When it was last checked (None: never)")
    reason: str | None = Field(
        None,
        description="Why the last check failed (None after a success); shown to admins only",
    )


class MemberRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    jurisdiction: str
    inbox_url: str | None = Field(
        description="Where the broker delivers; shown to admins only (None for members)"
    )
    health_url: str | None = Field(
        None,
        description="Where the broker checks its health (given at registration, or next to the "
        "inbox); shown to admins only (None for members)",
    )
    status: MemberStatus = Field(description="Suspended members neither send nor receive")
    health: MemberHealthRead = Field(
        description="What the broker's last health check found (service discovery)"
    )
    created_at: datetime


class MemberCreated(MemberRead):
    api_key: str = Field(description="Shown once: the broker keeps only its hash")


class KeyRotated(BaseModel):
    api_key: str = Field(description="The new key, shown once: the broker keeps only its hash")
    previous_key_valid_until: datetime | None = Field(
        description="Until when the key used before keeps working (None: it stopped at once)"
    )

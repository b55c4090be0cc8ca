from datetime import datetime

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field

from broker.fsla.models import JURISDICTION_PATTERN
from broker.wire.statuses import MemberStatus


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


class MemberRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    jurisdiction: str
    inbox_url: str | None = Field(
        description="Where the broker delivers; shown to admins only (None for members)"
    )
    status: MemberStatus = Field(description="Suspended members neither send nor receive")
    created_at: datetime


class MemberCreated(MemberRead):
    api_key: str = Field(description="Shown once: the broker keeps only its hash")


class KeyRotated(BaseModel):
    api_key: str = Field(description="The new key, shown once: the broker keeps only its hash")
    previous_key_valid_until: datetime | None = Field(
        description="Until when the key used before keeps working (None: it stopped at once)"
    )

from datetime import datetime

from pydantic import BaseModel, Field

from broker.fsla.models import FSLARecord


class PolicyRead(BaseModel):
    jurisdiction: str = Field(examples=["SN"])
    version: int = Field(description="Starts at 1; every change adds one", examples=[2])
    created_at: datetime
    created_by: str = Field(description="`seed` or `admin`")
    record: FSLARecord


class PolicyCheck(BaseModel):
    valid: bool = Field(description="Always true: an invalid draft is a 422 naming the fields")
    record: FSLARecord = Field(description="The draft as it would be stored, defaults filled in")
    current_version: int | None = Field(description="The version a save would replace")
    changed_fields: list[str] = Field(description="Top-level fields that differ from it")

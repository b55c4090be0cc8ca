from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{1,57}$"


class AdministratorCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=NAME_PATTERN,
        examples=["awa.diop"],
        description="Lower-case letters, digits, dots, dashes and underscores (2 to 58); the "
        "audit log names this administrator `admin:<name>`. Never reused.",
    )


class AdministratorRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str = Field(examples=["awa.diop"])
    active: bool = Field(description="False once revoked: the token answers 401")
    created_at: datetime
    created_by: str = Field(examples=["admin:bootstrap"])
    revoked_at: datetime | None = None
    revoked_by: str | None = None


class AdministratorCreated(AdministratorRead):
    token: str = Field(description="Shown once: the broker keeps only its hash")

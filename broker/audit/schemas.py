from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class AuditEntryRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    created_at: datetime
    actor: str = Field(
        description="`admin:<name>` (an administrator; `admin` before named administrators), "
        "`cli:<login>` (`fedbroker admins`), a member id, `seed` or `broker`"
    )
    action: str = Field(examples=["transfer.decided"])
    subject: str = Field(description="What the entry is about: a transfer id, a jurisdiction")
    details: dict[str, Any]
    previous_hash: str
    hash: str
    hash_rule: str = Field(
        description="How `hash` is computed: `rfc8785`, SHA-256 of `previous_hash` (hex) then "
        "the RFC 8785 JSON of id, created_at, actor, action, subject, details and hash_rule; "
        "`sorted-json` (entries written before), the same members but hash_rule in Python's "
        "sorted JSON (docs/guides/verifying-deliveries.md)",
        examples=["rfc8785"],
    )


class AuditPage(BaseModel):
    items: list[AuditEntryRead]
    next_after: int | None = Field(description="Pass as `after` to read the next page")


class AuditVerification(BaseModel):
    valid: bool
    entries_checked: int
    first_invalid_id: int | None = None
    reason: str | None = None
    head_id: int | None = Field(None, description="The last entry of a valid chain")
    head_hash: str | None = Field(
        None,
        description="Its hash: keep it elsewhere; if a later head does not descend from "
        "it (entry head_id with this hash), entries were removed from the end",
    )

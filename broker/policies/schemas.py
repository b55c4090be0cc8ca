from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from broker.fsla.lint import WarningCode
from broker.fsla.models import FSLARecord, RuleSet
from broker.wire.statuses import TransferStatus

# Senegal's seed record (policies/sn.yaml) as the API writes it: the example of every request
# body and answer that holds a whole record, so /docs shows a real one (a test keeps them equal).
EXAMPLE_RECORD: dict[str, Any] = FSLARecord(
    jurisdiction="SN",
    name="Senegal",
    legal_basis="Law No. 2008-12 of 25 January 2008 on the Protection of Personal Data",
    authority="Commission de Protection des Données Personnelles (CDP)",
    allowed_destinations=["FR", "NG"],
    allowed_purposes=["research", "public_health", "treatment"],
    domestic_export=RuleSet(identifiers_allowed=True, auto_anonymize=True),
    cross_border_export=RuleSet(
        max_mmaq_index=0.7,
        min_k=3,
        min_l=2,
        forbidden_attributes=["NIN"],
        max_date_precision="year",
        max_postcode_prefix=3,
        max_age=89,
        auto_anonymize=True,
        aggregate_releases_allowed=True,
        max_epsilon_per_release=1.0,
        max_delta_per_release=1e-6,
        epsilon_budget=3.0,
        source_epsilon_budget=10.0,
        budget_period_days=365,
    ),
    import_rules=RuleSet(min_k=2, auto_anonymize=True),
).model_dump(mode="json")

EXAMPLE_PATCH: dict[str, Any] = {"cross_border_export": {"min_k": 5, "max_mmaq_index": None}}


class PolicyRead(BaseModel):
    jurisdiction: str = Field(examples=["SN"])
    version: int = Field(description="Starts at 1; every change adds one", examples=[2])
    created_at: datetime
    created_by: str = Field(
        description="`seed`, or `admin:<name>` for the administrator who saved it (`admin` "
        "before named administrators existed)",
        examples=["admin:awa.diop"],
    )
    record: FSLARecord = Field(examples=[EXAMPLE_RECORD])


class PolicyVersionPage(BaseModel):
    items: list[PolicyRead] = Field(description="Versions, oldest first")
    next_after: int | None = Field(
        description="Pass as `after` for the next page (also in the `Link` header, "
        "rel=next); null on the last page",
        examples=[20],
    )


class PolicyChange(BaseModel):
    path: str = Field(
        description="The field: object keys joined with dots, list positions as [i]",
        examples=["cross_border_export.min_k"],
    )
    old: Any = Field(description="Its value before (null where it was absent)", examples=[3])
    new: Any = Field(description="Its value after (null where it is absent)", examples=[5])
    text: str = Field(
        description="`path: old -> new`, values as JSON, `(absent)` for a missing key",
        examples=["cross_border_export.min_k: 3 -> 5"],
    )


class PolicyWarningRead(BaseModel):
    code: WarningCode
    path: str = Field(examples=["allowed_destinations[1]"])
    message: str = Field(
        examples=["'FRA' has no F-SLA record in this federation: no member can be there"]
    )


class PolicyCheck(BaseModel):
    valid: bool = Field(description="Always true: an invalid draft is a 422 naming the fields")
    record: FSLARecord = Field(description="The draft as it would be stored, defaults filled in")
    current_version: int | None = Field(description="The version a save would replace")
    changed_fields: list[str] = Field(
        description="Top-level fields that differ from it", examples=[["cross_border_export"]]
    )
    changes: list[PolicyChange] = Field(description="Each field that differs, old -> new")
    warnings: list[PolicyWarningRead] = Field(
        description="Valid, but worth a second look: saving is still allowed"
    )


class PolicyDiff(BaseModel):
    jurisdiction: str = Field(examples=["SN"])
    old_version: int = Field(examples=[1])
    new_version: int = Field(examples=[2])
    changes: list[PolicyChange] = Field(description="Each field that differs, old -> new")


class ReplayRuleState(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_CHECKED = "not checked"


class ReplayedRule(BaseModel):
    rule: str = Field(examples=["min_k"])
    scope: str = Field(examples=["export"])
    jurisdiction: str = Field(examples=["SN"])
    attribute: str | None = Field(examples=["Age, Gender"])
    before: ReplayRuleState = Field(description="Its outcome in the decision made then")
    after: ReplayRuleState = Field(description="Its outcome under the draft")
    detail: str = Field(
        examples=["the quasi-identifiers Age, Gender give k = 3; SN (export) requires k >= 5"]
    )


class ReplayedTransfer(BaseModel):
    transfer_id: str
    created_at: datetime
    source_id: str = Field(examples=["sn-hospital"])
    destination_id: str = Field(examples=["fr-research"])
    purpose: str = Field(examples=["research"])
    policy_versions: dict[str, int] = Field(
        description="The versions the decision used; the other party's is kept in the replay",
        examples=[{"SN": 1, "FR": 1}],
    )
    status: TransferStatus = Field(description="What was decided, remedy included")
    replayable: bool = Field(
        description="False when the stored report cannot be judged again (see `note`)"
    )
    old_verdict: TransferStatus | None = Field(
        description="The rules' verdict then, before any remedy"
    )
    new_verdict: TransferStatus | None = Field(
        description="The rules' verdict under the draft, before any remedy"
    )
    verdict_changed: bool
    newly_failed: list[ReplayedRule]
    newly_passed: list[ReplayedRule] = Field(
        description="Rules that failed then and pass, or are no longer checked, under the draft"
    )
    not_replayed: list[str] = Field(
        description="Rules that could change the verdict but need the data, which is not kept"
    )
    delivered_passes: bool | None = Field(
        description="For a transfer the broker anonymized: whether what it delivered meets the "
        "draft (null otherwise)"
    )
    note: str


class PolicyReplay(BaseModel):
    jurisdiction: str = Field(examples=["SN"])
    examined: int = Field(description="Transfers from or to the jurisdiction looked at")
    verdicts_changed: int
    rules_changed: int = Field(description="Transfers whose verdict stays but a rule changes")
    not_replayable: int
    items: list[ReplayedTransfer] = Field(
        description="Only the transfers where something changes or that cannot be replayed, "
        "newest first"
    )
    next_before: datetime | None = Field(
        description="More transfers are older than this: pass it as `before` for the next page"
    )

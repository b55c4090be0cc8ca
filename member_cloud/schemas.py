"""API schemas of the member cloud: inputs forbid unknown fields."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from broker.wire.headers import IDEMPOTENCY_KEY
from broker.wire.statuses import Anonymize, TransferKind


class MemberInfo(BaseModel):
    id: str = Field(examples=["sn-hospital"])
    name: str
    jurisdiction: str = Field(examples=["SN"])
    inbox_url: str = Field(description="Where the broker delivers approved transfers")
    broker_url: str


class DatasetRead(BaseModel):
    name: str = Field(examples=["patients.csv"])
    size_bytes: int
    sha256: str
    modified_at: datetime


class TransferCreate(BaseModel):
    """Ask the broker to send one of this member's datasets to another member."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="Name of a local dataset", examples=["patients.csv"])
    destination: str = Field(
        min_length=1, max_length=64, description="Destination member id", examples=["fr-research"]
    )
    purpose: str = Field(min_length=1, max_length=200, examples=["research"])
    quasi_identifiers: list[str] | None = Field(
        None,
        description="Column names; null lets the broker infer them",
        examples=[["Age", "Gender"]],
    )
    sensitive: list[str] | None = Field(None, examples=[["Disease"]])
    anonymize: Anonymize = Field(
        "none",
        description="`auto`: where both policies allow it, the broker anonymizes the data and "
        "forwards only the compliant result",
    )
    dry_run: bool = Field(False, description="Evaluate only: the broker stores and sends nothing")
    agreement_id: str | None = Field(
        None,
        max_length=36,
        description="The agreement (negotiated through the broker) this transfer is made under",
    )
    kind: TransferKind = Field(
        TransferKind.MICRODATA,
        description="`aggregate`: send only the answers to `queries`, computed by the broker "
        "under differential privacy and charged to the privacy budget of this dataset and "
        "destination",
    )
    queries: list[dict[str, Any]] | None = Field(
        None,
        description="With kind `aggregate`: the queries, as the broker takes them",
        examples=[[{"type": "count_by", "columns": ["Gender"], "keys": {"Gender": ["F", "M"]}}]],
    )
    epsilon: str | None = Field(
        None,
        max_length=64,
        description="With kind `aggregate`: the epsilon to spend",
        examples=["0.5"],
    )
    delta: str | None = Field(
        None, max_length=64, description="With kind `aggregate`: the delta it may spend"
    )
    idempotency_key: str | None = Field(
        None,
        max_length=200,
        description="Sending the same request again with the same key replays the first "
        "decision. Without one (and unless dry_run), the member cloud makes one (a UUID); the "
        f"key sent is in the answer's {IDEMPOTENCY_KEY} header",
    )


class DeliveryReceipt(BaseModel):
    status: Literal["received", "already_received"]
    transfer_id: str


class InboxEntry(BaseModel):
    transfer_id: str
    source: str = Field(description="Source member id")
    purpose: str
    decision: str = Field(examples=["approved"])
    filename: str = Field(description="Original or anonymized file name; may be empty")
    sha256: str
    anonymized: bool
    content_type: str
    size_bytes: int
    received_at: datetime
    agreement: str | None = Field(None, description="The agreement it was sent under")
    retain_until: datetime | None = Field(
        None, description="When this member deletes it (null: no limit)"
    )
    erased_at: datetime | None = Field(None, description="When its data was deleted")


class Publication(BaseModel):
    """Describe one of this member's datasets in the federation's catalog."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="Name of a local dataset", examples=["patients.csv"])
    title: str = Field(min_length=1, max_length=200, examples=["Dakar admissions 2025"])
    description: str = Field("", max_length=5_000)
    keywords: list[str] = Field(default_factory=list, max_length=50)
    purposes: list[str] = Field(
        default_factory=list, max_length=50, description="Empty: any the F-SLA records allow"
    )
    quasi_identifiers: list[str] = Field(default_factory=list, examples=[["Age", "Gender"]])
    sensitive: list[str] = Field(default_factory=list, examples=[["Disease"]])
    person_key: str | None = Field(None, description="A column naming the person of each row")
    measure: bool = Field(
        True,
        description="Also send the file for the broker to measure (it keeps the figures, not "
        "the data): offers then say whether it could leave as it is",
    )


class NegotiationAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset_id: str = Field(min_length=1, max_length=36)
    purpose: str = Field(min_length=1, max_length=200, examples=["research"])
    columns: list[str] | None = None
    retention_days: int | None = Field(None, ge=1, le=100_000)


class OfferTerms(BaseModel):
    model_config = ConfigDict(extra="forbid")

    terms: dict | None = Field(
        None,
        description="What to change in the broker's terms (columns, min_k, min_l, max_t, "
        "retention_days, onward_transfer); null: offer them as they are",
        examples=[{"min_k": 5}],
    )


class CounterAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    columns: list[str] | None = None
    retention_days: int | None = Field(None, ge=1, le=100_000)


class Ending(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=1_000)

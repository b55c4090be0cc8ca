"""The API shapes of negotiations, agreements and notifications."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from broker.columns.digits import significant_digits
from broker.negotiations.states import PROTOCOL_MESSAGES, Message
from broker.wire.statuses import AgreementState, NegotiationState


class TermsRead(BaseModel):
    purpose: str = Field(examples=["research"])
    columns: list[str] = Field(
        description="The columns that may leave; a transfer under the agreement drops any other",
        examples=[["Age", "Gender", "Disease"]],
    )
    min_k: int | None = Field(examples=[5])
    min_l: int | None = Field(examples=[2])
    max_t: float | None = Field(examples=[0.7])
    identifiers_allowed: bool = False
    retention_days: int | None = Field(
        description="The consumer deletes the data this many days after it arrives (null: no "
        "limit)",
        examples=[365],
    )
    onward_transfer: bool = Field(
        False, description="May the consumer send the data on? The broker refuses it if not"
    )


def _few_digits(value: float) -> float:
    """A number the other party reads as the sender wrote it carries no number of the sender's
    choosing (a card in its decimals): six significant digits at most."""
    if significant_digits(value) > 6:
        raise ValueError("write it with at most 6 significant digits (e.g. 0.25)")
    return value


class TermsChange(BaseModel):
    """The terms a provider changes in its offer; those it does not send stay the broker's.
    An offer may ask more than the records require (fewer columns, a higher k or l, a lower t,
    a shorter retention), never less."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str] | None = Field(None, min_length=1, max_length=1_000)
    min_k: int | None = Field(None, ge=1, le=1_000_000, examples=[5])
    min_l: int | None = Field(None, ge=1, le=1_000_000)
    max_t: Annotated[float, Field(ge=0, le=1), AfterValidator(_few_digits)] | None = None
    retention_days: int | None = Field(None, ge=1, le=100_000, examples=[180])
    onward_transfer: bool | None = None


class NegotiationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset_id: str = Field(min_length=1, max_length=36, description="The catalog entry's id")
    purpose: str = Field(min_length=1, max_length=200, examples=["research"])
    columns: list[str] | None = Field(
        None,
        min_length=1,
        max_length=1_000,
        description="The columns asked for; null: every column but the person key",
    )
    retention_days: int | None = Field(
        None, ge=1, le=100_000, description="Keep the data at most this long (null: as allowed)"
    )


class CounterRequest(BaseModel):
    """The consumer's answer to an offer with another request (the purpose stays)."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str] | None = Field(None, min_length=1, max_length=1_000)
    retention_days: int | None = Field(None, ge=1, le=100_000)


class OfferCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    terms: TermsChange | None = Field(
        None, description="What to change in the broker's terms; null: offer them as they are"
    )


class Termination(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=1_000, examples=["no longer needed"])


class NegotiationEventRead(BaseModel):
    actor: str = Field(description="A member id, `broker`, or `admin:<name>`")
    role: str = Field(examples=["consumer"])
    message: Message
    protocol_message: str = Field(
        description="The Dataspace Protocol's name of the message",
        examples=["ContractRequestMessage"],
    )
    state: NegotiationState = Field(description="The state the message led to")
    body: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, event) -> NegotiationEventRead:
        return cls(
            actor=event.actor,
            role=event.role,
            message=event.message,
            protocol_message=PROTOCOL_MESSAGES[Message(event.message)],
            state=event.state,
            body=event.body,
            created_at=event.created_at,
        )


class NegotiationRead(BaseModel):
    id: str
    dataset_id: str
    dataset_version: int
    consumer: str = Field(examples=["fr-research"])
    provider: str = Field(examples=["sn-hospital"])
    state: NegotiationState
    waiting_for: str | None = Field(
        description="Whose message the negotiation waits for (`provider`, `consumer`); null "
        "when it is over",
        examples=["provider"],
    )
    purpose: str
    asked: dict[str, Any] = Field(description="The consumer's last request")
    required: dict[str, Any] | None = Field(
        description="The least the F-SLA records require: `terms` (the broker's terms), "
        "`notes` (what they leave out, and why) and `expected_utility_percent` (the information "
        "the data kept when the broker generalized it to that k; null when not measured)"
    )
    offered: TermsRead | None = Field(description="The provider's offer, once made")
    reason: str | None = Field(description="Why it was terminated")
    agreement_id: str | None
    expires_at: datetime | None = Field(
        description="When the broker ends it if no message comes (null when it is over)"
    )
    created_at: datetime
    updated_at: datetime
    events: list[NegotiationEventRead] = Field(
        default_factory=list, description="Its messages, oldest first"
    )


class NegotiationPage(BaseModel):
    items: list[NegotiationRead]
    total: int


class AgreementRead(BaseModel):
    id: str
    negotiation_id: str
    dataset_id: str
    dataset_version: int
    provider: str
    consumer: str
    terms: TermsRead
    state: AgreementState
    reason: str | None = Field(description="Why it is suspended")
    document: dict[str, Any] = Field(description="What the broker signed, exactly")
    signature: str = Field(
        description="`ed25519-jcs=<key id>:<base64url Ed25519 signature>` over the RFC 8785 "
        "canonical JSON of `document`, by a key of the broker's published set (key id: its RFC "
        "7638 thumbprint); agreements signed before RFC 8785 carry `ed25519=`, over Python's "
        "sorted JSON (docs/guides/verifying-deliveries.md)"
    )
    odrl: dict[str, Any] = Field(description="The agreement as an ODRL Agreement (JSON-LD)")
    created_at: datetime
    updated_at: datetime


class AgreementPage(BaseModel):
    items: list[AgreementRead]
    total: int


class NotificationRead(BaseModel):
    id: int = Field(description="Pass the last one read as `after` to read only newer ones")
    kind: str = Field(examples=["agreement.suspended"])
    subject: str = Field(description="The id of what it is about")
    detail: str
    created_at: datetime

"""The protocol's messages the broker accepts, as models: what a malformed message lacks is
named in the protocol's own error document (:mod:`broker.dsp.route`).

Compact JSON-LD as release 2025-1 writes it: the ``@context`` must hold the protocol's context
(a message in another vocabulary would be read wrongly), ``@type`` names the message. Terms the
broker does not read are allowed (JSON-LD documents carry others' vocabularies) and ignored.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from broker.dsp.documents import CONTEXT

Text = Annotated[str, StringConstraints(min_length=1, max_length=500, strip_whitespace=True)]


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    context: list[str] | str = Field(alias="@context")

    @field_validator("context")
    @classmethod
    def _the_protocols_context(cls, context: list[str] | str) -> list[str] | str:
        names = [context] if isinstance(context, str) else context
        if CONTEXT[0] not in names:
            raise ValueError(f"the @context must hold {CONTEXT[0]}")
        return context


class Constraint(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    left: str | None = Field(None, alias="leftOperand", max_length=200)
    operator: str | None = Field(None, max_length=50)
    right: object = Field(None, alias="rightOperand")


class Rule(BaseModel):
    model_config = ConfigDict(extra="allow")

    action: Text
    constraint: list[Constraint] = Field(default_factory=list, max_length=50)


class MessageOffer(BaseModel):
    """The offer a consumer's request names: the dataset (``target``) and the permission."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: Text = Field(alias="@id")
    type: Literal["Offer"] = Field(alias="@type")
    target: Text
    permission: list[Rule] = Field(default_factory=list, max_length=50)

    def purpose(self) -> str | None:
        """The purpose the permission names (``purpose eq ...``), if one does."""
        for rule in self.permission:
            for constraint in rule.constraint:
                right = constraint.right
                named = constraint.left == "purpose" and constraint.operator in ("eq", None)
                if named and isinstance(right, str) and right.strip():
                    return right.strip()
        return None


class CatalogRequest(Message):
    type: Literal["CatalogRequestMessage"] = Field(alias="@type")
    filter: list[object] = Field(default_factory=list, max_length=20)


class DatasetRequest(Message):
    type: Literal["DatasetRequestMessage"] = Field(alias="@type")
    dataset: Text


class ContractRequest(Message):
    type: Literal["ContractRequestMessage"] = Field(alias="@type")
    consumer_pid: Text = Field(alias="consumerPid")
    provider_pid: Text | None = Field(None, alias="providerPid")
    offer: MessageOffer
    callback_address: Text | None = Field(None, alias="callbackAddress")


class NegotiationEvent(Message):
    type: Literal["ContractNegotiationEventMessage"] = Field(alias="@type")
    consumer_pid: Text = Field(alias="consumerPid")
    provider_pid: Text = Field(alias="providerPid")
    event_type: Literal["ACCEPTED", "FINALIZED"] = Field(alias="eventType")


class AgreementVerification(Message):
    type: Literal["ContractAgreementVerificationMessage"] = Field(alias="@type")
    consumer_pid: Text = Field(alias="consumerPid")
    provider_pid: Text = Field(alias="providerPid")


class NegotiationTermination(Message):
    type: Literal["ContractNegotiationTerminationMessage"] = Field(alias="@type")
    consumer_pid: Text = Field(alias="consumerPid")
    provider_pid: Text = Field(alias="providerPid")
    code: Text | None = None
    reason: list[Text] = Field(default_factory=list, max_length=20)


Pid = Annotated[
    str,
    StringConstraints(min_length=1, max_length=500, pattern=r"^[\x21-\x7e]+$"),
]  # a URI: visible ASCII only, so two pids never differ by an invisible or look-alike letter


class EndpointProperty(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: Literal["EndpointProperty"] = Field(alias="@type")
    name: str = Field(max_length=200)
    value: str = Field(max_length=4000)


class DataAddress(BaseModel):
    """Where a consumer asks the data to be pushed. The broker delivers to the consumer
    member's registered inbox only: an ``endpoint`` must be that inbox; the properties (a
    token, its type) are neither kept nor used."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: Literal["DataAddress"] = Field(alias="@type")
    endpoint_type: Text = Field(alias="endpointType")
    endpoint: str | None = Field(None, max_length=2000)
    endpoint_properties: list[EndpointProperty] = Field(
        default_factory=list, alias="endpointProperties", max_length=20
    )


class TransferRequest(Message):
    type: Literal["TransferRequestMessage"] = Field(alias="@type")
    consumer_pid: Pid = Field(alias="consumerPid")
    agreement_id: Text = Field(alias="agreementId")
    format: Text
    data_address: DataAddress | None = Field(None, alias="dataAddress")
    callback_address: Text = Field(alias="callbackAddress")


class TransferMessage(Message):
    """A message on an existing transfer process (start, completion, suspension, termination):
    its pids, and for some a code and reasons (read for their shape; the broker forwards no
    sender's text)."""

    type: Literal[
        "TransferStartMessage",
        "TransferCompletionMessage",
        "TransferSuspensionMessage",
        "TransferTerminationMessage",
    ] = Field(alias="@type")
    consumer_pid: Text = Field(alias="consumerPid")
    provider_pid: Text = Field(alias="providerPid")
    code: Text | None = None
    reason: list[object] = Field(default_factory=list, max_length=20)
    data_address: DataAddress | None = Field(None, alias="dataAddress")

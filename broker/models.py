"""Every ORM model, imported once so that Alembic sees the whole schema."""

from broker.admins.models import Administrator
from broker.audit.models import AuditEntry
from broker.catalog.models import CatalogDataset, CatalogVersion
from broker.console.models import ConsoleSession
from broker.delivery.models import Delivery
from broker.dsp.models import ProtocolNegotiation, ProtocolTransfer, ProtocolTransferEvent
from broker.members.models import Member, MemberHealth
from broker.negotiations.models import Agreement, Negotiation, NegotiationEvent, Notification
from broker.policies.models import PolicyVersion
from broker.transfers.models import (
    DatasetSketch,
    PrivacySpend,
    ReleasedClasses,
    Transfer,
    TransferJob,
)

__all__ = [
    "Administrator",
    "Agreement",
    "AuditEntry",
    "CatalogDataset",
    "CatalogVersion",
    "ConsoleSession",
    "DatasetSketch",
    "Delivery",
    "Member",
    "MemberHealth",
    "Negotiation",
    "NegotiationEvent",
    "Notification",
    "PolicyVersion",
    "PrivacySpend",
    "ProtocolNegotiation",
    "ProtocolTransfer",
    "ProtocolTransferEvent",
    "ReleasedClasses",
    "Transfer",
    "TransferJob",
]

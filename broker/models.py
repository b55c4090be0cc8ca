"""Every ORM model, imported once so that Alembic sees the whole schema."""

from broker.admins.models import Administrator
from broker.audit.models import AuditEntry
from broker.delivery.models import Delivery
from broker.members.models import Member, MemberHealth
from broker.policies.models import PolicyVersion
from broker.transfers.models import Release, Transfer, TransferJob

__all__ = [
    "Administrator",
    "AuditEntry",
    "Delivery",
    "Member",
    "MemberHealth",
    "PolicyVersion",
    "Release",
    "Transfer",
    "TransferJob",
]

"""The federation's status vocabularies, each written once.

They are stored in the database and sent on the wire as their string values (``StrEnum``), so
``TransferStatus.APPROVED == "approved"`` and the JSON of a decision reads ``"approved"``.
"""

from enum import StrEnum


class TransferStatus(StrEnum):
    """What the broker decided about a transfer."""

    APPROVED = "approved"
    ANONYMIZATION_REQUIRED = "anonymization_required"
    REJECTED = "rejected"


class DeliveryStatus(StrEnum):
    """Where the outbox row of an approved transfer stands."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class MemberStatus(StrEnum):
    """Whether a member cloud may send and receive."""

    ACTIVE = "active"
    SUSPENDED = "suspended"

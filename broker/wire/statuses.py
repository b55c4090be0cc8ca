"""The federation's vocabularies on the wire (statuses, the anonymize option), each written once.

They are stored in the database and sent on the wire as their string values (``StrEnum``), so
``TransferStatus.APPROVED == "approved"`` and the JSON of a decision reads ``"approved"``.
"""

from enum import StrEnum


class TransferStatus(StrEnum):
    """What the broker decided about a transfer."""

    APPROVED = "approved"
    ANONYMIZATION_REQUIRED = "anonymization_required"
    REJECTED = "rejected"


class JobState(StrEnum):
    """Where a transfer decided in the background (202 Accepted) stands."""

    QUEUED = "queued"  # waiting for a broker process to take it
    RUNNING = "running"
    DONE = "done"  # decided: the transfer exists under the job's id
    FAILED = "failed"  # the data could not be decided (its problem says why); nothing stored


class DeliveryStatus(StrEnum):
    """Where the outbox row of an approved transfer stands."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class Anonymize(StrEnum):
    """What the source asks of the broker when its data needs anonymization."""

    NONE = "none"  # answer with the verified remedy; the source applies it
    AUTO = "auto"  # apply the remedy and deliver the result, where every rule set allows it


class MemberStatus(StrEnum):
    """Whether a member cloud may send and receive."""

    ACTIVE = "active"
    SUSPENDED = "suspended"

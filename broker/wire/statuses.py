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


class TransferKind(StrEnum):
    """What a transfer sends: the rows, or statistics of them under differential privacy."""

    MICRODATA = "microdata"  # the table (or its anonymized version), measured and judged
    AGGREGATE = "aggregate"  # query answers with calibrated noise, charged to a privacy budget


class MemberStatus(StrEnum):
    """Whether a member cloud may send and receive."""

    ACTIVE = "active"
    SUSPENDED = "suspended"


class HealthState(StrEnum):
    """A member cloud's health, as the broker's checks of its ``/readyz`` last found it."""

    UNKNOWN = "unknown"  # not checked yet
    UP = "up"
    DOWN = "down"  # its deliveries are held: not attempted, their attempts not spent


class DeliveryState(StrEnum):
    """A transfer's delivery as the API shows it: the outbox status, or none at all."""

    NOT_APPLICABLE = "not_applicable"  # not approved, or a dry run: nothing to deliver
    PENDING = "pending"
    HELD = "held"  # pending, but its destination is down: waits without spending attempts
    DELIVERED = "delivered"
    FAILED = "failed"


class NegotiationState(StrEnum):
    """Where a contract negotiation stands: the states of the Dataspace Protocol's contract
    negotiation (Eclipse Dataspace Protocol), by their names there."""

    REQUESTED = "REQUESTED"  # the consumer asked for a dataset, for a purpose
    OFFERED = "OFFERED"  # the provider offered terms (the broker's, or stricter ones)
    ACCEPTED = "ACCEPTED"  # the consumer accepted the offer
    AGREED = "AGREED"  # the broker recorded and signed the agreement
    VERIFIED = "VERIFIED"  # the consumer checked the broker's signature
    FINALIZED = "FINALIZED"  # the agreement is in force: transfers may be made under it
    TERMINATED = "TERMINATED"  # ended without (or before) an agreement, with its reason


class AgreementState(StrEnum):
    """Whether transfers may be made under an agreement."""

    ACTIVE = "active"
    SUSPENDED = "suspended"  # an F-SLA change broke its terms; a later change may restore it


class OfferKind(StrEnum):
    """What a member could receive of a catalogued dataset, for one purpose."""

    AS_IS = "as_is"  # the data as measured meets every rule
    ANONYMIZED = "anonymized"  # the data must first meet the offer's k, l and t
    REFUSED = "refused"  # not at all, and why


class ColumnRole(StrEnum):
    """What a catalogued dataset's column is, as its provider declares it."""

    QUASI_IDENTIFIER = "quasi_identifier"  # an outsider may know it (age, zip code)
    SENSITIVE = "sensitive"  # to protect (a diagnosis): judged by l and t
    PERSON_KEY = "person_key"  # names the person of each row; measured, never delivered
    OTHER = "other"


class RuleScope(StrEnum):
    """Whose rules a result is about."""

    EXPORT = "export"  # the source jurisdiction's rules for data leaving
    IMPORT = "import"  # the destination jurisdiction's rules for data arriving
    AGREEMENT = "agreement"  # the terms of the agreement the transfer is made under
    FEDERATION = "federation"  # the broker's own checks (known, active destination; a remedy)
    REQUEST = "request"  # what the sender asked for itself (a utility floor on the request)


class RuleName(StrEnum):
    """Every rule a decision reports (``broker/fsla/rules.py`` and ``decide.py``; a test
    checks that each rule they can report is listed here)."""

    DESTINATION_KNOWN = "destination_known"
    DESTINATION_ACTIVE = "destination_active"
    DESTINATION_NOT_SOURCE = "destination_not_source"
    DESTINATION_ALLOWED = "destination_allowed"
    PURPOSE_ALLOWED = "purpose_allowed"
    PERSON_KEY_DECLARED = "person_key_declared"
    FORBIDDEN_ATTRIBUTE = "forbidden_attribute"
    NO_IDENTIFIERS = "no_identifiers"
    MIN_LOG10_MMAQ = "min_log10_mmaq"
    MAX_MMAQ_INDEX = "max_mmaq_index"
    QI_MAX_MMAQ_INDEX = "qi_max_mmaq_index"
    MIN_K = "min_k"
    MAX_JOURNALIST_RISK = "max_journalist_risk"
    MAX_MARKETER_RISK = "max_marketer_risk"
    MAX_POPULATION_UNIQUENESS = "max_population_uniqueness"
    MAX_EXPECTED_REIDENTIFICATIONS = "max_expected_reidentifications"
    MAX_DIS_SUDA = "max_dis_suda"
    MIN_L = "min_l"
    MAX_ALPHA = "max_alpha"
    RECURSIVE_C_L = "recursive_c_l"
    MAX_BETA = "max_beta"
    MAX_ENHANCED_BETA = "max_enhanced_beta"
    MAX_DELTA = "max_delta"
    MAX_T = "max_t"
    MAX_DATE_PRECISION = "max_date_precision"
    MAX_POSTCODE_PREFIX = "max_postcode_prefix"
    MAX_AGE = "max_age"
    IDENTIFYING_PRECISION = "identifying_precision"  # passed: every precision rule holds
    LINKAGE = "linkage"
    MIN_UTILITY_PERCENT = "min_utility_percent"
    SENSITIVE_DECLARED = "sensitive_declared"
    REMEDY_FOUND = "remedy_found"
    AGREEMENT_TERMS = "agreement_terms"
    ONWARD_TRANSFER = "onward_transfer"
    AGGREGATE_ALLOWED = "aggregate_allowed"
    MAX_EPSILON_PER_RELEASE = "max_epsilon_per_release"
    MAX_DELTA_PER_RELEASE = "max_delta_per_release"
    EPSILON_BUDGET = "epsilon_budget"
    SOURCE_EPSILON_BUDGET = "source_epsilon_budget"
    AGGREGATE_RELEASE_POSSIBLE = "aggregate_release_possible"

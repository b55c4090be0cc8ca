"""The broker's answers as pydantic models, generated from its OpenAPI document.

Do not edit: scripts/generate_client.py writes this module from docs/openapi.json.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class BrokerModel(BaseModel):
    """Base of every answer model: unknown fields are kept, so a newer broker reads fine."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Accuracy(BrokerModel):
    confidence: float | None
    half_width: float | None
    meaning: str


class AdministratorCreate(BrokerModel):
    name: str


class AdministratorCreated(BrokerModel):
    name: str
    active: bool
    created_at: datetime
    created_by: str
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    token: str


class AdministratorRead(BrokerModel):
    name: str
    active: bool
    created_at: datetime
    created_by: str
    revoked_at: datetime | None = None
    revoked_by: str | None = None


class AggregateRead(BrokerModel):
    """An aggregate release: what it spends and, once released, each query's answer."""

    schema_version: Literal[2] | None = None
    epsilon: str
    epsilon_exact: str
    delta: str
    delta_exact: str
    spent: bool
    released: bool
    dataset_key: str | None = None
    queries: list[PlannedQuery]
    answers: (
        list[
            CountAnswer
            | DeclaredCountsAnswer
            | DataKeyCountsAnswer
            | SumAnswer
            | MeanAnswer
            | QuantilesAnswer
        ]
        | None
    )


class AgreementPage(BrokerModel):
    items: list[AgreementRead]
    total: int


class AgreementRead(BrokerModel):
    id: str
    negotiation_id: str
    dataset_id: str
    dataset_version: int
    provider: str
    consumer: str
    terms: TermsRead
    state: AgreementState
    reason: str | None
    document: dict[str, Any]
    signature: str
    odrl: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class AgreementState(StrEnum):
    """Whether transfers may be made under an agreement."""

    ACTIVE = "active"
    SUSPENDED = "suspended"


class AgreementVerification(BrokerModel):
    context_: list[str] | str = Field(alias="@context")
    type_: Literal["ContractAgreementVerificationMessage"] = Field(alias="@type")
    consumerPid: str
    providerPid: str


class Anonymize(StrEnum):
    """What the source asks of the broker when its data needs anonymization."""

    NONE = "none"
    AUTO = "auto"


class AttributeMeasure(BrokerModel):
    rows: int
    categories: int
    shannon: float
    shannon_normalized: float
    log10_stabilizer: float
    log10_mmaq: float
    mmaq: str
    mmaq_index: float
    class_: str = Field(alias="class")
    name: str
    qir_risk_percent: float
    qir_class: Literal["high", "medium", "low"]
    values: str
    direct_identifier: str | None
    identifier_evidence: str | None = None
    singled_out_rows: int
    precision: ColumnPrecision | None = None


class AuditEntryRead(BrokerModel):
    id: int
    created_at: datetime
    actor: str
    action: str
    subject: str
    details: dict[str, Any]
    previous_hash: str
    hash: str
    hash_rule: str


class AuditPage(BrokerModel):
    items: list[AuditEntryRead]
    next_after: int | None


class AuditVerification(BrokerModel):
    valid: bool
    entries_checked: int
    first_invalid_id: int | None = None
    reason: str | None = None
    head_id: int | None = None
    head_hash: str | None = None


class Body_analyze_dataset(BrokerModel):
    quasi_identifiers: str | None = None
    sensitive: str | None = None
    combinations: int | None = None
    alpha: float | None = None
    beta: float | None = None
    sampling_fraction: float | None = None
    weights: str | None = None
    suda: bool | None = None
    suda_dis_fraction: float | None = None
    suda_max_msu: int | None = None
    file: str


class Body_measure_dataset(BrokerModel):
    file: str


class CatalogEntryRead(BrokerModel):
    """A catalogued dataset as its provider (or an administrator) sees it."""

    id: str
    provider: str
    provider_health: str | None = None
    jurisdiction: str
    version: int
    description: DatasetDescription
    summary: CatalogSummary | None = None
    measured_at: datetime | None = None
    withdrawn: bool | None = None
    created_at: datetime
    updated_at: datetime


class CatalogRequest(BrokerModel):
    context_: list[str] | str = Field(alias="@context")
    type_: Literal["CatalogRequestMessage"] = Field(alias="@type")
    filter: list[Any] | None = None


class CatalogSummary(BrokerModel):
    """What the catalog keeps of a measurement of the provider's file: figures, never values."""

    rows: int
    quasi_identifiers: list[str]
    sensitive: list[str]
    k: int | None
    max_prosecutor_risk: float | None
    l: int | None
    t: float | None
    identifiers: list[str]
    utility_at_k: dict[str, float]
    dropped_at_k: dict[str, list[str]] | None


class Cell(BrokerModel):
    key: list[str | None]
    count: int


class ColumnDescription(BrokerModel):
    name: str
    role: ColumnRole | None = None
    description: str | None = None


class ColumnPrecision(BrokerModel):
    kind: str
    finest: str | int | None
    unreadable: int
    oldest_birth_year: int | None = None


class ColumnRole(StrEnum):
    """What a catalogued dataset's column is, as its provider declares it."""

    QUASI_IDENTIFIER = "quasi_identifier"
    SENSITIVE = "sensitive"
    PERSON_KEY = "person_key"
    OTHER = "other"


class CombinationMeasure(BrokerModel):
    rows: int
    categories: int
    shannon: float
    shannon_normalized: float
    log10_stabilizer: float
    log10_mmaq: float
    mmaq: str
    mmaq_index: float
    class_: str = Field(alias="class")
    attributes: list[str]
    unique_share: float


class CombinationSearch(BrokerModel):
    requested_size: int
    searched_size: int
    complete: bool
    evaluations: int
    found: int
    reported: int
    note: str | None


class Constraint(BrokerModel):
    leftOperand: str | None = None
    operator: str | None = None
    rightOperand: Any | None = None


class ContractRequest(BrokerModel):
    context_: list[str] | str = Field(alias="@context")
    type_: Literal["ContractRequestMessage"] = Field(alias="@type")
    consumerPid: str
    providerPid: str | None = None
    offer: MessageOffer
    callbackAddress: str | None = None


class CountAnswer(BrokerModel):
    count: int


class CounterRequest(BrokerModel):
    """The consumer's answer to an offer with another request (the purpose stays)."""

    columns: list[str] | None = None
    retention_days: int | None = None


class DataAddress(BrokerModel):
    """Where a consumer asks the data to be pushed. The broker delivers to the consumer member's
    registered inbox only: an ``endpoint`` must be that inbox; the properties (a token, its type)
    are neither kept nor used."""

    type_: Literal["DataAddress"] = Field(alias="@type")
    endpointType: str
    endpoint: str | None = None
    endpointProperties: list[EndpointProperty] | None = None


class DataKeyCountsAnswer(BrokerModel):
    """count_by with keys from the data: the keys counted above the threshold."""

    columns: list[str]
    cells: list[Cell]
    threshold: int
    withheld: int


class DatasetDescription(BrokerModel):
    """What a provider says of a dataset it holds. The broker adds the provider, its jurisdiction
    and, when it measured the data, its summary."""

    title: str
    description: str | None = None
    keywords: list[str] | None = None
    columns: list[ColumnDescription]
    rows: int | None = None
    format: Literal["csv", "json", "parquet"] | None = None
    purposes: list[str] | None = None


class DatasetRead(BrokerModel):
    sha256: str
    size_bytes: int
    rows: int
    columns: int
    format: str
    filename: str | None
    location: str | None = None
    notes: list[str] | None = None
    anonymized: bool | None = None
    delivered_sha256: str | None = None
    delivered_filename: str | None = None
    delivered_rows: int | None = None
    delivered_columns: int | None = None
    preview: DryRunPreview | None = None


class DayOverview(BrokerModel):
    day: str
    decisions: StatusCounts


class DecisionsOverTime(BrokerModel):
    days: int
    first_day: str
    last_day: str
    per_day: list[DayOverview]
    decisions: StatusCounts


class DeclaredCountsAnswer(BrokerModel):
    """count_by with declared keys: every declared cell, and the other rows in one."""

    columns: list[str]
    cells: list[Cell]
    other: int


class DeliveryCounts(BrokerModel):
    """Approved transfers' deliveries per state (`held`: pending, to a member that is down)."""

    pending: int | None = None
    held: int | None = None
    delivered: int | None = None
    failed: int | None = None
    total: int | None = None


class DeliveryRead(BrokerModel):
    status: DeliveryState
    attempts: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
    held_reason: str | None = None


class DeliveryState(StrEnum):
    """A transfer's delivery as the API shows it: the outbox status, or none at all."""

    NOT_APPLICABLE = "not_applicable"
    PENDING = "pending"
    HELD = "held"
    DELIVERED = "delivered"
    FAILED = "failed"


class DryRunPreview(BrokerModel):
    """What a dry run's transfer would deliver, fetchable for a while by whoever ran it."""

    url: str
    expires_at: datetime
    filename: str
    media_type: str
    sha256: str
    size_bytes: int
    rows: int
    columns: int
    what: str
    note: str


class EndpointProperty(BrokerModel):
    type_: Literal["EndpointProperty"] = Field(alias="@type")
    name: str
    value: str


class FSLARecord(BrokerModel):
    """A jurisdiction's federal service level agreement."""

    jurisdiction: str
    name: str
    legal_basis: str
    authority: str
    allowed_destinations: list[str] | None = None
    allowed_purposes: list[str]
    domestic_export: RuleSet | None = None
    cross_border_export: RuleSet | None = None
    import_rules: RuleSet | None = None
    hierarchies: dict[str, dict[str, list[str]]] | None = None


class FederationOverview(BrokerModel):
    """The federation at a glance, for its administrators."""

    generated_at: datetime
    members: list[MemberOverview]
    member_health: HealthCounts
    transfers_by_jurisdiction_pair: list[PairOverview]
    decisions_over_time: DecisionsOverTime
    deliveries: DeliveryCounts
    market: MarketCounts | None = None


class HealthCounts(BrokerModel):
    """Active members per health state (suspended members are not checked)."""

    up: int | None = None
    down: int | None = None
    unknown: int | None = None


class HealthState(StrEnum):
    """A member cloud's health, as the broker's checks of its ``/readyz`` last found it."""

    UNKNOWN = "unknown"
    UP = "up"
    DOWN = "down"


class IndividualRisk(BrokerModel):
    max: float
    average: float
    expected_reidentifications: float
    weights: str


class JobState(StrEnum):
    """Where a transfer decided in the background (202 Accepted) stands."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class JournalistRisk(BrokerModel):
    max: float
    average: float
    unique_share: float


class KeyRotated(BrokerModel):
    api_key: str
    previous_key_valid_until: datetime | None


class MarketCounts(BrokerModel):
    """The data market: catalogued datasets, negotiations, agreements (see "The data market")."""

    datasets_listed: int | None = None
    datasets_measured: int | None = None
    datasets_withdrawn: int | None = None
    negotiations_open: int | None = None
    negotiations: dict[str, int] | None = None
    agreements_active: int | None = None
    agreements_suspended: int | None = None


class MeanAnswer(BrokerModel):
    mean: float
    sum: float
    count: int
    interval: list[float] | None


class MemberCreate(BrokerModel):
    id: str
    name: str
    jurisdiction: str
    inbox_url: str
    health_url: str | None = None


class MemberCreated(BrokerModel):
    id: str
    name: str
    jurisdiction: str
    inbox_url: str | None
    health_url: str | None = None
    status: MemberStatus
    health: MemberHealthRead
    created_at: datetime
    api_key: str


class MemberHealthRead(BrokerModel):
    """A member's health as the broker's checks of its `/readyz` last found it."""

    state: HealthState
    since: datetime | None
    checked_at: datetime | None
    reason: str | None = None


class MemberOverview(BrokerModel):
    id: str
    name: str
    jurisdiction: str
    status: MemberStatus
    health: MemberHealthRead


class MemberRead(BrokerModel):
    id: str
    name: str
    jurisdiction: str
    inbox_url: str | None
    health_url: str | None = None
    status: MemberStatus
    health: MemberHealthRead
    created_at: datetime


class MemberStatus(StrEnum):
    """Whether a member cloud may send and receive."""

    ACTIVE = "active"
    SUSPENDED = "suspended"


class Message(StrEnum):
    REQUEST = "request"
    OFFER = "offer"
    ACCEPT = "accept"
    AGREE = "agree"
    VERIFY = "verify"
    FINALIZE = "finalize"
    TERMINATE = "terminate"


class MessageOffer(BrokerModel):
    """The offer a consumer's request names: the dataset (``target``) and the permission."""

    id_: str = Field(alias="@id")
    type_: Literal["Offer"] = Field(alias="@type")
    target: str
    permission: list[Rule] | None = None


class NegotiationCreate(BrokerModel):
    dataset_id: str
    purpose: str
    columns: list[str] | None = None
    retention_days: int | None = None


class NegotiationEvent(BrokerModel):
    context_: list[str] | str = Field(alias="@context")
    type_: Literal["ContractNegotiationEventMessage"] = Field(alias="@type")
    consumerPid: str
    providerPid: str
    eventType: Literal["ACCEPTED", "FINALIZED"]


class NegotiationEventRead(BrokerModel):
    actor: str
    role: str
    message: Message
    protocol_message: str
    state: NegotiationState
    body: dict[str, Any]
    created_at: datetime


class NegotiationPage(BrokerModel):
    items: list[NegotiationRead]
    total: int


class NegotiationRead(BrokerModel):
    id: str
    dataset_id: str
    dataset_version: int
    consumer: str
    provider: str
    state: NegotiationState
    waiting_for: str | None
    purpose: str
    asked: dict[str, Any]
    required: dict[str, Any] | None
    offered: TermsRead | None
    reason: str | None
    agreement_id: str | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    events: list[NegotiationEventRead] | None = None


class NegotiationState(StrEnum):
    """Where a contract negotiation stands: the states of the Dataspace Protocol's contract
    negotiation (Eclipse Dataspace Protocol), by their names there."""

    REQUESTED = "REQUESTED"
    OFFERED = "OFFERED"
    ACCEPTED = "ACCEPTED"
    AGREED = "AGREED"
    VERIFIED = "VERIFIED"
    FINALIZED = "FINALIZED"
    TERMINATED = "TERMINATED"


class NegotiationTermination(BrokerModel):
    context_: list[str] | str = Field(alias="@context")
    type_: Literal["ContractNegotiationTerminationMessage"] = Field(alias="@type")
    consumerPid: str
    providerPid: str
    code: str | None = None
    reason: list[str] | None = None


class NotificationRead(BrokerModel):
    id: int
    kind: str
    subject: str
    detail: str
    created_at: datetime


class OfferCreate(BrokerModel):
    terms: TermsChange | None = None


class PairOverview(BrokerModel):
    source_jurisdiction: str
    destination_jurisdiction: str | None
    decisions: StatusCounts


class PlannedQuery(BrokerModel):
    """One query with its share of the budget, its mechanism and its accuracy."""

    query: ReleaseQuery
    mechanism: str
    epsilon: str
    epsilon_exact: str
    delta: str
    contributions: int
    scale: float | list[float]
    accuracy: Accuracy
    threshold: int | None = None
    delta_of_threshold: float | None = None


class PolicyChange(BrokerModel):
    path: str
    old: Any
    new: Any
    text: str


class PolicyCheck(BrokerModel):
    valid: bool
    record: FSLARecord
    current_version: int | None
    changed_fields: list[str]
    changes: list[PolicyChange]
    warnings: list[PolicyWarningRead]


class PolicyDiff(BrokerModel):
    jurisdiction: str
    old_version: int
    new_version: int
    changes: list[PolicyChange]


class PolicyRead(BrokerModel):
    jurisdiction: str
    version: int
    created_at: datetime
    created_by: str
    record: FSLARecord


class PolicyReplay(BrokerModel):
    jurisdiction: str
    examined: int
    verdicts_changed: int
    rules_changed: int
    not_replayable: int
    items: list[ReplayedTransfer]
    next_before: datetime | None


class PolicyVersionPage(BrokerModel):
    items: list[PolicyRead]
    next_after: int | None


class PolicyWarningRead(BrokerModel):
    code: WarningCode
    path: str
    message: str


class PopulationMeasure(BrokerModel):
    sampling_fraction: float
    sampling_fraction_from: str
    population_size: int
    uniqueness: PopulationUniqueness
    individual_risk: IndividualRisk
    k_map: int | None


class PopulationUniqueness(BrokerModel):
    pitman: UniquenessEstimate
    zayatz: UniquenessEstimate
    snb: UniquenessEstimate
    dankar: UniquenessEstimate
    dankar_model: str


class Problem(BrokerModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str
    errors: list[dict[str, Any]] | None = None
    request_id: str | None = None


class ProsecutorRisk(BrokerModel):
    max: float
    average: float
    unique_share: float
    average_per_class: float


class QuantileValue(BrokerModel):
    quantile: float
    value: float


class QuantilesAnswer(BrokerModel):
    quantiles: list[QuantileValue]


class QuasiIdentifierMeasure(BrokerModel):
    rows: int
    categories: int
    shannon: float
    shannon_normalized: float
    log10_stabilizer: float
    log10_mmaq: float
    mmaq: str
    mmaq_index: float
    class_: str = Field(alias="class")
    attributes: list[str]
    k: int
    k_people: int
    equivalence_classes: int
    class_size_histogram: dict[str, int]
    prosecutor_risk: ProsecutorRisk
    journalist_risk: JournalistRisk
    marketer_risk: float
    risk_population: str


class RecursiveDiversityRule(BrokerModel):
    """Recursive (c, l)-diversity: in every class, r_1 < c (r_l + ... + r_m) for the value counts
    r_1 >= ... >= r_m of each declared sensitive attribute."""

    c: float
    l: int


class ReleaseQuery(BrokerModel):
    """A query as asked, checked (:meth:`broker.privacy.queries.Query.as_dict`)."""

    type: Literal["count", "count_by", "sum", "mean", "quantile"]
    columns: list[str] | None = None
    keys: dict[str, list[str | None]] | None = None
    column: str | None = None
    bounds: list[float] | None = None
    quantiles: list[float] | None = None
    candidates: int | None = None
    contributions: int | None = None


class RemedyAfter(BrokerModel):
    """The anonymized data's figures."""

    rows: int
    k: int | None = None
    equivalence_classes: int | None = None


class RemedyBefore(BrokerModel):
    report: Report
    rules: list[StoredRule]


class RemedyLoss(BrokerModel):
    """How much information the remedy keeps and what it suppresses."""

    utility_percent: float
    attribute_utility_percent: dict[str, float] | None = None
    discernibility: float
    suppressed_rows: int
    suppressed_cell_share: float


class RemedyRead(BrokerModel):
    verified: bool
    steps: list[RemedyStep]
    note: str | None = None
    applied: bool | None = None
    information_loss: RemedyLoss | None = None
    suppressed_rows: int | None = None
    after: RemedyAfter | None = None
    before: RemedyBefore | None = None


class RemedyStep(BrokerModel):
    column: str | None
    method: str
    parameters: dict[str, Any]
    reason: str | None = None


class ReplayRuleState(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_CHECKED = "not checked"


class ReplayedRule(BrokerModel):
    rule: str
    scope: str
    jurisdiction: str
    attribute: str | None
    before: ReplayRuleState
    after: ReplayRuleState
    detail: str


class ReplayedTransfer(BrokerModel):
    transfer_id: str
    created_at: datetime
    source_id: str
    destination_id: str
    purpose: str
    policy_versions: dict[str, int]
    status: TransferStatus
    replayable: bool
    old_verdict: TransferStatus | None
    new_verdict: TransferStatus | None
    verdict_changed: bool
    newly_failed: list[ReplayedRule]
    newly_passed: list[ReplayedRule]
    not_replayed: list[str]
    delivered_passes: bool | None
    note: str


class Report(BrokerModel):
    rows: int
    duplicate_rows: int
    people_counted_by: str
    rare_tuples: int | None = None
    rare_tuple_rows: int | None = None
    attributes: list[AttributeMeasure]
    combinations: list[CombinationMeasure]
    combination_search: CombinationSearch | None
    quasi_identifiers: QuasiIdentifierMeasure | None
    sensitive: list[SensitiveMeasure]
    population: PopulationMeasure | None = None
    suda: SudaMeasure | None = None


class Rule(BrokerModel):
    action: str
    constraint: list[Constraint] | None = None


class RuleName(StrEnum):
    """Every rule a decision reports (``broker/fsla/rules.py`` and ``decide.py``; a test checks
    that each rule they can report is listed here)."""

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
    IDENTIFYING_PRECISION = "identifying_precision"
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


class RuleRead(BrokerModel):
    rule: RuleName
    scope: RuleScope
    jurisdiction: str
    attribute: str | None
    passed: bool
    measured: float | int | str | None
    threshold: float | int | str | None
    detail: str


class RuleScope(StrEnum):
    """Whose rules a result is about."""

    EXPORT = "export"
    IMPORT = "import"
    AGREEMENT = "agreement"
    FEDERATION = "federation"
    REQUEST = "request"


class RuleSet(BrokerModel):
    """Thresholds one transfer must meet; a field left empty sets no rule."""

    identifiers_allowed: bool | None = None
    min_log10_mmaq: float | None = None
    max_mmaq_index: float | None = None
    qi_max_mmaq_index: float | None = None
    min_k: int | None = None
    max_journalist_risk: float | None = None
    max_marketer_risk: float | None = None
    sampling_fraction: float | None = None
    max_population_uniqueness: float | None = None
    max_expected_reidentifications: float | None = None
    max_dis_suda: float | None = None
    min_l: int | None = None
    max_alpha: float | None = None
    recursive_c_l: RecursiveDiversityRule | None = None
    max_beta: float | None = None
    max_enhanced_beta: float | None = None
    max_delta: float | None = None
    max_t: float | None = None
    linkage_lookback_days: int | None = None
    max_date_precision: Literal["year", "month", "day"] | None = None
    max_postcode_prefix: int | None = None
    max_age: int | None = None
    forbidden_attributes: list[str] | None = None
    require_person_key: bool | None = None
    min_utility_percent: float | None = None
    auto_anonymize: bool | None = None
    max_retention_days: int | None = None
    aggregate_releases_allowed: bool | None = None
    max_epsilon_per_release: float | None = None
    max_delta_per_release: float | None = None
    epsilon_budget: float | None = None
    source_epsilon_budget: float | None = None
    budget_period_days: int | None = None


class SensitiveMeasure(BrokerModel):
    name: str
    l_diversity: int
    entropy_l_diversity: float
    t_closeness: float
    t_closeness_method: str
    k: int
    known_attributes: list[str]
    alpha: float
    recursive_c: int | None
    recursive_c_bounds: dict[str, float]
    beta_likeness: float
    enhanced_beta_likeness: float | None
    delta_disclosure: float


class StatusCounts(BrokerModel):
    """Transfers per decision status."""

    approved: int | None = None
    anonymization_required: int | None = None
    rejected: int | None = None
    total: int | None = None


class StoredRule(BrokerModel):
    """One rule's result as a transfer stores it (``Transfer.rules``, and a remedy's
    ``before.rules``)."""

    rule: str
    scope: str
    jurisdiction: str
    attribute: str | None = None
    passed: bool
    measured: float | int | str | None = None
    threshold: float | int | str | None = None
    detail: str


class SudaMeasure(BrokerModel):
    """SUDA of the quasi-identifiers (Elliot et al. 2002; DIS-SUDA, Skinner and Elliot 2002), as
    sdcMicro's ``suda2`` computes them: the same object as ``fedbroker analyze --suda`` without its
    list of every record."""

    quasi_identifiers: list[str]
    dis_fraction: float
    max_msu_size: int
    records_with_msus: int
    max_score: float
    max_dis_score: float
    attribute_contributions: dict[str, float]
    riskiest: list[SudaRecord]
    sample_uniques: int
    pair_records: int
    dis_weight_sum: float


class SudaRecord(BrokerModel):
    row: int
    msus: int
    score: float
    dis_score: float


class SumAnswer(BrokerModel):
    sum: float


class SummaryEntry(BrokerModel):
    kind: str
    problem: str | None
    do: str
    attributes: list[str]
    rules: list[str]
    jurisdictions: list[str]


class Termination(BrokerModel):
    reason: str


class TermsChange(BrokerModel):
    """The terms a provider changes in its offer; those it does not send stay the broker's. An
    offer may ask more than the records require (fewer columns, a higher k or l, a lower t, a
    shorter retention), never less."""

    columns: list[str] | None = None
    min_k: int | None = None
    min_l: int | None = None
    max_t: float | None = None
    retention_days: int | None = None
    onward_transfer: bool | None = None


class TermsRead(BrokerModel):
    purpose: str
    columns: list[str]
    min_k: int | None
    min_l: int | None
    max_t: float | None
    identifiers_allowed: bool | None = None
    retention_days: int | None
    onward_transfer: bool | None = None


class TransferForm(BrokerModel):
    """The form fields of ``POST /v1/transfers`` (multipart, beside the ``file``), and the
    :class:`~broker.fsla.decide.TransferRequest` they make."""

    destination: str
    purpose: str
    quasi_identifiers: str | None = None
    sensitive: str | None = None
    person_key: str | None = None
    anonymize: Anonymize | None = None
    location: str | None = None
    min_utility_percent: float | None = None
    agreement_id: str | None = None
    dry_run: bool | None = None
    kind: TransferKind | None = None
    queries: str | None = None
    epsilon: str | None = None
    delta: str | None = None
    file: str | None = None
    hierarchy: list[str] | None = None


class TransferJobRead(BrokerModel):
    """A transfer being decided in the background; poll its ``Location`` until ``done``."""

    id: str
    state: JobState
    stage: str
    progress: float
    attempts: int
    created_at: datetime
    updated_at: datetime
    transfer: TransferRead | None = None
    problem: dict[str, Any] | None = None


class TransferKind(StrEnum):
    """What a transfer sends: the rows, or statistics of them under differential privacy."""

    MICRODATA = "microdata"
    AGGREGATE = "aggregate"


class TransferMessage(BrokerModel):
    """A message on an existing transfer process (start, completion, suspension, termination): its
    pids, and for some a code and reasons (read for their shape; the broker forwards no sender's
    text)."""

    context_: list[str] | str = Field(alias="@context")
    type_: Literal[
        "TransferStartMessage",
        "TransferCompletionMessage",
        "TransferSuspensionMessage",
        "TransferTerminationMessage",
    ] = Field(alias="@type")
    consumerPid: str
    providerPid: str
    code: str | None = None
    reason: list[Any] | None = None
    dataAddress: DataAddress | None = None


class TransferPage(BrokerModel):
    items: list[TransferRead]
    total: int
    offset: int
    limit: int


class TransferRead(BrokerModel):
    """A transfer as its source and admins see it, read off the stored :class:`Transfer`."""

    id: str | None
    status: TransferStatus
    summary: list[SummaryEntry] | None = None
    dry_run: bool | None = None
    source: str
    destination: str
    purpose: str
    anonymize: Anonymize
    created_at: datetime
    quasi_identifiers: list[str]
    quasi_identifiers_inferred: bool
    sensitive: list[str]
    report: Report | None
    rules: list[RuleRead]
    remedy: RemedyRead | None
    policy_versions: dict[str, int]
    dataset: DatasetRead
    delivery: DeliveryRead
    agreement_id: str | None = None
    retain_until: datetime | None = None
    erased_at: datetime | None = None
    kind: TransferKind | None = None
    aggregate: AggregateRead | None = None


class TransferRequest(BrokerModel):
    context_: list[str] | str = Field(alias="@context")
    type_: Literal["TransferRequestMessage"] = Field(alias="@type")
    consumerPid: str
    agreementId: str
    format: str
    dataAddress: DataAddress | None = None
    callbackAddress: str


class TransferStatus(StrEnum):
    """What the broker decided about a transfer."""

    APPROVED = "approved"
    ANONYMIZATION_REQUIRED = "anonymization_required"
    REJECTED = "rejected"


class UniquenessEstimate(BrokerModel):
    uniques: float | None
    share: float | None


class WarningCode(StrEnum):
    """The kinds of warning, as listed in the module docstring."""

    UNKNOWN_DESTINATION = "unknown-destination"
    DUPLICATE_PURPOSE = "duplicate-purpose"
    DUPLICATE_ATTRIBUTE = "duplicate-attribute"
    ATTRIBUTE_SPELLING = "attribute-spelling"
    NO_COMMON_PURPOSE = "no-common-purpose"
    IDENTIFIERS_NEVER_PASS = "identifiers-never-pass"
    DOMESTIC_STRICTER = "domestic-stricter"
    UNUSED_CROSS_BORDER_RULES = "unused-cross-border-rules"
    SUDA_DEFAULT_FRACTION = "suda-default-fraction"


for _model in (
    Accuracy,
    AdministratorCreate,
    AdministratorCreated,
    AdministratorRead,
    AggregateRead,
    AgreementPage,
    AgreementRead,
    AgreementVerification,
    AttributeMeasure,
    AuditEntryRead,
    AuditPage,
    AuditVerification,
    Body_analyze_dataset,
    Body_measure_dataset,
    CatalogEntryRead,
    CatalogRequest,
    CatalogSummary,
    Cell,
    ColumnDescription,
    ColumnPrecision,
    CombinationMeasure,
    CombinationSearch,
    Constraint,
    ContractRequest,
    CountAnswer,
    CounterRequest,
    DataAddress,
    DataKeyCountsAnswer,
    DatasetDescription,
    DatasetRead,
    DayOverview,
    DecisionsOverTime,
    DeclaredCountsAnswer,
    DeliveryCounts,
    DeliveryRead,
    DryRunPreview,
    EndpointProperty,
    FSLARecord,
    FederationOverview,
    HealthCounts,
    IndividualRisk,
    JournalistRisk,
    KeyRotated,
    MarketCounts,
    MeanAnswer,
    MemberCreate,
    MemberCreated,
    MemberHealthRead,
    MemberOverview,
    MemberRead,
    MessageOffer,
    NegotiationCreate,
    NegotiationEvent,
    NegotiationEventRead,
    NegotiationPage,
    NegotiationRead,
    NegotiationTermination,
    NotificationRead,
    OfferCreate,
    PairOverview,
    PlannedQuery,
    PolicyChange,
    PolicyCheck,
    PolicyDiff,
    PolicyRead,
    PolicyReplay,
    PolicyVersionPage,
    PolicyWarningRead,
    PopulationMeasure,
    PopulationUniqueness,
    Problem,
    ProsecutorRisk,
    QuantileValue,
    QuantilesAnswer,
    QuasiIdentifierMeasure,
    RecursiveDiversityRule,
    ReleaseQuery,
    RemedyAfter,
    RemedyBefore,
    RemedyLoss,
    RemedyRead,
    RemedyStep,
    ReplayedRule,
    ReplayedTransfer,
    Report,
    Rule,
    RuleRead,
    RuleSet,
    SensitiveMeasure,
    StatusCounts,
    StoredRule,
    SudaMeasure,
    SudaRecord,
    SumAnswer,
    SummaryEntry,
    Termination,
    TermsChange,
    TermsRead,
    TransferForm,
    TransferJobRead,
    TransferMessage,
    TransferPage,
    TransferRead,
    TransferRequest,
    UniquenessEstimate,
):
    _model.model_rebuild()

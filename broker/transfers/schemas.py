from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import File, UploadFile
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from broker.analysis.schemas import Report
from broker.callers import Caller
from broker.columns.roles import NAMES_MAX_LENGTH, parse_names
from broker.delivery import states as delivery_states
from broker.delivery.schemas import DeliveryRead
from broker.errors import InvalidHierarchy
from broker.fsla.decide import TransferRequest
from broker.fsla.stored import StoredBefore, StoredRemedy
from broker.fsla.summary import summarize
from broker.intake.hierarchies import read_parts
from broker.transfers.facts import DatasetFacts
from broker.transfers.release import StoredRelease
from broker.wire.statuses import (
    Anonymize,
    DeliveryState,
    JobState,
    RuleName,
    RuleScope,
    TransferKind,
    TransferStatus,
)


class RuleRead(BaseModel):
    rule: RuleName = Field(examples=["min_k"])
    scope: RuleScope = Field(
        description="export (the source's rules), import (the destination's rules) or "
        "federation (the broker's own checks)"
    )
    jurisdiction: str
    attribute: str | None = Field(description="The attribute or attributes concerned")
    passed: bool
    measured: float | int | str | None
    threshold: float | int | str | None
    detail: str


class SummaryEntry(BaseModel):
    kind: str = Field(
        description="problem (something to fix before the data may leave) or note (nothing "
        "to fix: what happened, or a warning)",
        examples=["problem"],
    )
    problem: str | None = Field(
        description="What is wrong, merged across rules and jurisdictions",
        examples=["Age, Gender: k = 1 (needs at least 3) (SN (export) and FR (import))"],
    )
    do: str = Field(
        description="What to do next",
        examples=["generalize Age, Gender (k-anonymize them with k = 3); or send anonymize=auto"],
    )
    attributes: list[str] = Field(description="The columns concerned")
    rules: list[str] = Field(description="The failed rules this entry merges (see `rules`)")
    jurisdictions: list[str] = Field(description="Whose rules: `SN (export)`, `FR (import)`")


class RemedyBefore(StoredBefore):
    report: Report = Field(description="The report of the data as uploaded")


# A transfer's ``remedy`` as served: the stored remedy, field for field, its ``before`` report
# served as :class:`Report` (without the stored version fields).
class RemedyRead(StoredRemedy):
    before: RemedyBefore | None = Field(
        None, description="The report and rules of the data as uploaded (when applied)"
    )


# A transfer's ``dataset`` as served: the stored facts, field for field (no docstring, so that
# the OpenAPI document describes it as before).
class DatasetRead(DatasetFacts):
    pass


class AggregateRead(StoredRelease):
    """An aggregate release: what it spends and, once released, each query's answer."""


class TransferRead(BaseModel):
    """A transfer as its source and admins see it, read off the stored :class:`Transfer`."""

    model_config = ConfigDict(from_attributes=True)

    id: str | None = Field(
        description="The transfer's id; for a dry run, the dry run's id (no transfer is stored: "
        "its data is at `dataset.preview.url` for a while)"
    )
    status: TransferStatus
    summary: list[SummaryEntry] = Field(
        default_factory=list,
        description="The decision in a few lines: one entry per problem (merged across rules "
        "and jurisdictions) and what to do next; `rules` has the detail",
    )
    dry_run: bool = False
    source: str = Field(validation_alias=AliasChoices("source", "source_id"))
    destination: str = Field(validation_alias=AliasChoices("destination", "destination_id"))
    purpose: str
    anonymize: Anonymize
    created_at: datetime
    quasi_identifiers: list[str]
    quasi_identifiers_inferred: bool = Field(
        description="True when the broker added attributes to the declared quasi-identifiers: "
        "every non-sensitive attribute whose Mmaq class is quasi_identifier is always checked"
    )
    sensitive: list[str]
    report: Report | None = Field(
        description="None when the transfer was rejected before the data could be measured"
    )
    rules: list[RuleRead]
    remedy: RemedyRead | None
    policy_versions: dict[str, int] = Field(description="jurisdiction -> F-SLA version used")
    dataset: DatasetRead
    delivery: DeliveryRead
    agreement_id: str | None = Field(
        None, description="The agreement the transfer was made under (null: none)"
    )
    retain_until: datetime | None = Field(
        None,
        description="When the destination deletes what it received (the shortest retention "
        "of the rule sets and the agreement; null: no limit)",
    )
    erased_at: datetime | None = Field(
        None, description="When the destination said it deleted what it received"
    )
    kind: TransferKind = Field(
        TransferKind.MICRODATA,
        description="`microdata`: the rows; `aggregate`: statistics under differential privacy",
    )
    aggregate: AggregateRead | None = Field(
        None, description="An aggregate release's spend and answers (kind `aggregate`)"
    )

    @classmethod
    def of(cls, transfer: Any, caller: Caller | None = None, dry_run: bool = False) -> TransferRead:
        """``transfer`` (a stored :class:`~broker.transfers.models.Transfer`) as ``caller``
        may see it: its source and admins see all of it (and so does the broker's own answer to
        the source, ``caller`` None), any other caller (its destination) what
        :meth:`seen_by_destination` keeps. A pending delivery to a destination that is down is
        shown held."""
        if caller is not None and not caller.is_admin and caller.member_id != transfer.source_id:
            read = cls.seen_by_destination(transfer)
        else:
            read = cls.model_validate(transfer)
        update: dict[str, Any] = {"dry_run": True} if dry_run else {}
        if read.delivery.status == DeliveryState.PENDING:  # held while its destination is down
            update["delivery"] = delivery_states.shown(
                read.delivery, transfer.destination_id, transfer.destination_health
            )
        return read.model_copy(update=update) if update else read

    @classmethod
    def seen_by_destination(cls, transfer: Any) -> TransferRead:
        """What the destination may know: the decision and what it received, nothing the sender
        sent that was not delivered (no report, rules or remedy of the upload, not its columns,
        file name, hash or size: all would cross the border unmeasured), and of an aggregate
        release not the dataset's key in the privacy budget ledger."""
        dataset = DatasetFacts.of(transfer.dataset)
        aggregate = StoredRelease.of(transfer.aggregate)
        if aggregate is not None:
            aggregate = AggregateRead(**aggregate.seen_by_destination().model_dump())
        return cls(
            id=transfer.id,
            status=transfer.status,
            source=transfer.source_id,
            destination=transfer.destination_id,
            purpose=transfer.purpose,
            anonymize=transfer.anonymize,
            created_at=transfer.created_at,
            quasi_identifiers=[],
            quasi_identifiers_inferred=False,
            sensitive=[],
            report=None,
            rules=[],
            remedy=None,
            policy_versions=transfer.policy_versions,
            dataset=DatasetRead(
                sha256=dataset.delivered_sha256 or "",
                size_bytes=0,
                rows=dataset.delivered_rows or 0,
                columns=dataset.delivered_columns or 0,
                format=dataset.format,
                filename=None,
                anonymized=dataset.anonymized,
                delivered_sha256=dataset.delivered_sha256,
                delivered_filename=dataset.delivered_filename,
                delivered_rows=dataset.delivered_rows,
                delivered_columns=dataset.delivered_columns,
            ),
            delivery=transfer.delivery,
            agreement_id=transfer.agreement_id,
            retain_until=transfer.retain_until,
            erased_at=transfer.erased_at,
            kind=transfer.kind,
            aggregate=aggregate,
        )

    @field_validator("kind", mode="before")
    @classmethod
    def _microdata_unless_said(cls, kind: object) -> object:
        """A transfer not yet written (a dry run) has no column default applied yet."""
        return TransferKind.MICRODATA if kind is None else kind

    @field_validator("delivery", mode="before")
    @classmethod
    def _no_outbox_row(cls, delivery: object) -> object:
        """Only approved transfers have an outbox row; the others say so."""
        return {"status": "not_applicable", "attempts": 0} if delivery is None else delivery

    @model_validator(mode="after")
    def _summarized(self) -> TransferRead:
        """The summary is read off the decision's rules and remedy (a pure function of them),
        so every stored decision, however old, gets one."""
        if not self.summary:
            self.summary = [
                SummaryEntry(**entry)
                for entry in summarize(
                    self.status,
                    [rule.model_dump() for rule in self.rules],
                    self.remedy.model_dump() if self.remedy else None,
                    self.quasi_identifiers,
                    self.anonymize,
                )
            ]
        return self


class TransferPage(BaseModel):
    items: list[TransferRead]
    total: int
    offset: int
    limit: int


class TransferJobRead(BaseModel):
    """A transfer being decided in the background; poll its ``Location`` until ``done``."""

    model_config = ConfigDict(from_attributes=True)

    id: str = Field(description="The job's id, which the transfer will have once decided")
    state: JobState
    stage: str = Field(
        description="What the broker is doing: queued, reading, measuring, deciding, writing, "
        "done or failed",
        examples=["measuring"],
    )
    progress: float = Field(ge=0, le=1, description="Share of the work done, 0 to 1")
    attempts: int = Field(description="How many times a broker process has taken the job")
    created_at: datetime
    updated_at: datetime
    transfer: TransferRead | None = Field(
        None, description="The decision, once `state` is `done` (also at /v1/transfers/{id})"
    )
    problem: dict[str, Any] | None = Field(
        None,
        description="Why the data could not be decided, once `state` is `failed` (RFC 9457 "
        "problem details, as the synchronous answer would have given); nothing was stored",
    )


class TransferForm(BaseModel):
    """The form fields of ``POST /v1/transfers`` (multipart, beside the ``file``), and the
    :class:`~broker.fsla.decide.TransferRequest` they make."""

    destination: Annotated[
        str, Field(description="Destination member id", examples=["fr-research"], max_length=64)
    ]
    purpose: Annotated[
        str,
        Field(
            description="Purpose of the transfer",
            examples=["research"],
            min_length=1,
            max_length=200,
        ),
    ]
    # The optional text fields default to "" and carry their example in the description: a
    # nullable field (anyOf string/null) is pre-filled with "string" by Swagger UI, and an
    # example would be sent by Execute as if the user had typed it.
    quasi_identifiers: Annotated[
        str,
        Field(
            description="Comma-separated column names an outsider may know, e.g. `Age,Gender`; "
            "the broker adds every other column that measures as a quasi-identifier. Empty: "
            "the broker finds them all",
            max_length=NAMES_MAX_LENGTH,
        ),
    ] = ""
    sensitive: Annotated[
        str,
        Field(
            description="Comma-separated column names whose values are to be protected, e.g. "
            "`Disease` (judged by l and t; with several, each within the classes of all the "
            "others). Empty: none",
            max_length=NAMES_MAX_LENGTH,
        ),
    ] = ""
    person_key: Annotated[
        str,
        Field(
            description="A column naming the person each row belongs to (pseudonymous), e.g. "
            "`patient_ref`: k and the risks then count people, not rows. Measured, never "
            "delivered. Empty: each row is one person",
            max_length=1_000,
        ),
    ] = ""
    anonymize: Annotated[
        Anonymize,
        Field(
            description="`auto`: where both policies allow it, the broker anonymizes the data "
            "itself and forwards only the compliant result"
        ),
    ] = Anonymize.NONE
    location: Annotated[
        str,
        Field(
            description="Instead of a file: where the data lies on the federation's shared "
            "storage, which the broker's Dask cluster reads: the absolute path of .parquet or "
            ".csv files under a folder the federation granted this member, with glob patterns "
            "for several (e.g. `/data/federation/sn-hospital/2026/*.parquet`). Resolved once, "
            "at the request, into regular files (no link, no special file); the job reads "
            "those, unchanged, or fails. Always decided in the background. Empty: the data is "
            "the `file`",
            max_length=2_000,
        ),
    ] = ""
    min_utility_percent: Annotated[
        float | None,
        Field(
            ge=0,
            le=100,
            description="The least information (percent of non-uniform entropy kept, as the "
            "remedy's `information_loss.utility_percent`) a remedy may keep: below it, no remedy "
            "is offered or applied and the transfer is rejected. The rule sets' own "
            "`min_utility_percent` applies too; the higher floor wins",
            examples=[20],
        ),
    ] = None
    agreement_id: Annotated[
        str,
        Field(
            description="The agreement (`/v1/agreements`) this transfer is made under: its terms "
            "(columns, k, l, t, retention, onward transfer) apply beside the F-SLA records', "
            "and it must be from its provider to its consumer for its purpose. Empty: none",
            max_length=36,
        ),
    ] = ""
    dry_run: Annotated[
        bool,
        Field(description="Evaluate only: store and forward nothing (always answered at once)"),
    ] = False
    kind: Annotated[
        TransferKind,
        Field(
            description="`microdata`: send the rows, measured and judged; `aggregate`: send "
            "only the answers to `queries`, computed by the broker under differential privacy "
            "and charged to the privacy budget of the dataset and destination (always answered "
            "at once; a dry run shows each query's cost and accuracy, never an answer)"
        ),
    ] = TransferKind.MICRODATA
    queries: Annotated[
        str,
        Field(
            description="With kind `aggregate`: the queries as a JSON list, e.g. "
            '`[{"type": "count"}, {"type": "count_by", "columns": ["sex"], "keys": {"sex": '
            '["F", "M"]}}, {"type": "mean", "column": "age", "bounds": [0, 120]}]`; types '
            "count, count_by (histogram or contingency table), sum, mean, quantile",
            max_length=1_000_000,
        ),
    ] = ""
    epsilon: Annotated[
        str,
        Field(
            description="With kind `aggregate`: the epsilon the release spends, e.g. `0.5` "
            "(written in decimal or as a fraction, counted exactly); the queries share it",
            max_length=64,
        ),
    ] = ""
    delta: Annotated[
        str,
        Field(
            description="With kind `aggregate`: the delta it may spend, e.g. `1e-6`, needed by "
            "histograms whose keys come from the data. Empty: 0",
            max_length=64,
        ),
    ] = ""

    file: Annotated[
        UploadFile | None,
        File(description="CSV, JSON (array of records) or Parquet (or name a `location`)"),
    ] = None
    hierarchy: Annotated[
        list[UploadFile],
        File(
            description="Generalization hierarchies for the remedy, as ARX writes them: one "
            "file part per column, each named for its column (`education.csv`), one line per "
            "value with its labels from level 1 up, `;` separated (`Bachelors;Undergraduate;*`). "
            "The remedy follows them instead of its own ranges, unless an F-SLA record gives "
            "a hierarchy for the same column. Each must cover every value of its column; labels "
            "are checked (none may name a value of a class of several values or hold a direct "
            "identifier; range labels whose bounds are values of their class leave re-labelled). "
            "At most 32 files of 1 MiB, 20,000 values, 16 levels"
        ),
    ] = []

    def request(self, idempotency_key: str | None) -> TransferRequest:
        """The request to decide: names parsed, text trimmed, an empty optional field None, the
        fields of an aggregate release kept only for one."""
        aggregate = self.kind == TransferKind.AGGREGATE
        if aggregate and self.hierarchy:
            raise InvalidHierarchy(
                "hierarchy files shape the remedy of a microdata transfer; an aggregate release "
                "sends statistics, not rows"
            )
        hierarchies = read_parts([(part.filename, part.file) for part in self.hierarchy])
        return TransferRequest(
            destination=self.destination.strip(),
            purpose=self.purpose.strip(),
            quasi_identifiers=parse_names(self.quasi_identifiers),
            sensitive=parse_names(self.sensitive),
            person_key=self.person_key.strip() or None,
            anonymize=self.anonymize,
            min_utility_percent=self.min_utility_percent,
            dry_run=self.dry_run,
            idempotency_key=idempotency_key,
            agreement_id=self.agreement_id.strip() or None,
            kind=self.kind,
            queries=self.queries if aggregate else None,
            epsilon=self.epsilon.strip() if aggregate else None,
            delta=self.delta.strip() if aggregate else None,
            hierarchies=hierarchies,
        )

"""Broker settings, read from the environment (prefix ``BROKER_``) by pydantic-settings."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from broker.engines import IN_MEMORY_MAX_BYTES
from broker.wire.inbox_urls import InboxPolicy, parse_networks

# Where Docker and Kubernetes mount secrets: a file named after a variable, in any case
# (/run/secrets/broker_admin_token), sets it when the environment does not.
SECRETS_DIR = Path("/run/secrets")


class Settings(BaseSettings):
    """Everything an operator can set; tests build their own instance and pass it to create_app."""

    model_config = SettingsConfigDict(
        env_prefix="BROKER_",
        extra="ignore",
        secrets_dir=SECRETS_DIR if SECRETS_DIR.is_dir() else None,
    )

    database_url: str = Field(
        "sqlite:///data/broker.db",
        description="SQLAlchemy URL: sqlite:///path or postgresql+psycopg://user@host/db",
    )
    database_password: SecretStr | None = Field(
        None,
        description="Password of the database user, for a `database_url` that has none: kept "
        "apart from the URL, it can come from a secret file "
        "(/run/secrets/broker_database_password)",
    )
    database_connect_timeout_seconds: float = Field(
        5.0,
        ge=0,
        description="How long the broker waits to open a connection to PostgreSQL (libpq's "
        "`connect_timeout`, whole seconds, at least 2); then the request answers 503. 0: no limit",
    )
    database_statement_timeout_seconds: float = Field(
        15.0,
        ge=0,
        description="Longest one PostgreSQL statement may run (`statement_timeout`). The broker "
        "also gives a connection up when the server has sent no answer 2 s past this time (a "
        "frozen or unreachable server, which cannot time itself out); the request answers 503. "
        "0: no limit, and no client-side limit either",
    )
    database_lock_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="Longest a statement waits for a lock another connection holds: "
        "PostgreSQL's `lock_timeout`, SQLite's busy timeout (the wait for its one writer); then "
        "the request answers 503",
    )
    database_idle_in_transaction_timeout_seconds: float = Field(
        60.0,
        ge=0,
        description="PostgreSQL ends a session that keeps a transaction open without a "
        "statement this long (`idle_in_transaction_session_timeout`): a frozen broker process "
        "releases its locks. 0: never",
    )
    database_pool_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="Longest a request waits for a free connection of the broker's pool; then "
        "it answers 503",
    )
    host: str = Field(
        "127.0.0.1",
        description="Address `fedbroker serve` listens on (0.0.0.0: every interface, as in a "
        "container)",
    )
    port: int = Field(8000, ge=1, le=65535, description="Port `fedbroker serve` listens on")
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="uvicorn worker processes of `fedbroker serve`: decisions are CPU-bound, so "
        "about one per core. Each has its own delivery worker (leases keep deliveries "
        "exactly-once), rate-limit counters and /metrics",
    )
    admin_token: SecretStr | None = Field(
        None,
        min_length=16,
        description="Bearer token of the federation's administrators, 16 characters or more "
        "(required to serve): the administrator named `bootstrap`, who can name others and be "
        "revoked once they exist",
    )
    max_upload_bytes: int = Field(
        10 * 1024**3,
        gt=0,
        description="Largest request body; the upload is spooled to disk, never held in memory",
    )
    in_memory_max_bytes: int = Field(
        IN_MEMORY_MAX_BYTES,
        ge=0,
        description="Larger uploads are counted out of core by DuckDB (CSV only; JSON and "
        "Parquet are read in memory up to this size), in memory bounded by "
        "`duckdb_memory_limit` whatever their size",
    )
    aggregate_contributions: int = Field(
        1,
        ge=1,
        le=100,
        description="With a `person_key`, the rows of one person an aggregate release's query "
        "counts when the query does not say (`contributions`): each person's other rows are left "
        "out, and the noise is calibrated to this many rows a person",
    )
    out_of_core_max_distinct: int = Field(
        5_000_000,
        gt=0,
        description="Most distinct values in one column, and distinct rows, of an upload "
        "counted out of core: its values and distinct tuples come back to the broker's memory "
        "(about 100 bytes each), whatever the file's size",
    )
    duckdb_memory_limit: str = Field(
        "1GB", description="DuckDB's memory limit when it counts an upload ('1GB', '700MB')"
    )
    max_columns: int = Field(1_000, gt=0, description="Most columns in one dataset")
    max_cells: int = Field(
        20_000_000,
        gt=0,
        description="Most cells (rows x columns): the measures' working set is several times "
        "8 bytes per cell, whatever the file's size",
    )
    max_decoded_bytes: int = Field(
        1 << 30, gt=0, description="Most bytes a dataset may take once decompressed and decoded"
    )
    max_row_groups: int = Field(10_000, gt=0, description="Most row groups in a Parquet file")
    max_cell_chars: int = Field(10_000, gt=0, description="Longest text value, in characters")
    spool_dir: Path = Field(
        Path("data/spool"),
        description="Folder where uploads are copied while they are measured, and where jobs "
        "keep theirs until decided; brokers sharing a database must share it",
    )
    decide_in_background_above_bytes: int = Field(
        32 * 1024 * 1024,
        ge=0,
        description="Uploads larger than this are decided in the background: the answer is "
        "202 Accepted with a Location to poll (so is any request sent with the header "
        "`Prefer: respond-async`)",
    )
    dask_scheduler: str | None = Field(
        None,
        description="Address of the Dask scheduler (tcp://scheduler:8786) that counts "
        "transfers by reference where their data lies; none: no transfers by reference",
    )
    reference_roots: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per member id, the folders of the federation's shared file storage it may "
        'name files under in a transfer by reference, as JSON ({"sn-hospital": '
        '["/data/federation/sn-hospital/"]}): absolute paths, the folders of two members '
        "apart, none holding the broker's own folders (spool, signing keys, reference output) "
        "or lying in them",
    )
    reference_output: str | None = Field(
        None,
        description="Folder or URL prefix where the cluster writes what leaves by reference "
        "(one folder per transfer, Parquet); destinations are given read access there",
    )
    reference_max_files: int = Field(
        10_000, gt=0, description="Most files one transfer by reference may name"
    )
    jobs_per_member: int = Field(
        4,
        ge=1,
        description="Most transfers one member may have waiting for a background decision "
        "(each may hold gigabytes of spool); more answer 429",
    )
    job_slots: int = Field(
        2, ge=1, description="Background transfers this process decides at the same time"
    )
    job_slots_per_member: int = Field(
        1,
        ge=1,
        description="Background transfers of one member decided at the same time, by all the "
        "processes sharing the database: its other jobs wait, so that one member's slow jobs "
        "never hold every slot; the next job goes to the member with the fewest running",
    )
    job_deadline_seconds: float = Field(
        3_600.0,
        gt=0,
        description="Wall-clock time one background decision may take; past it, the job fails "
        "(413) and its slot takes the next job once its thread has stopped",
    )
    jobs_enabled: bool = Field(True, description="Decide background transfers in this process")
    job_poll_seconds: float = Field(
        0.5,
        gt=0,
        description="How soon the job runner looks again for queued jobs when it found none; "
        "twice as long after each look that finds none, up to 5 s (a job sent to this process "
        "wakes it at once)",
    )
    job_lease_seconds: float = Field(
        120.0,
        gt=0,
        description="How long a process holds a job between two progress reports; a job whose "
        "process stopped is taken over once this has passed",
    )
    job_max_attempts: int = Field(
        3, ge=1, description="Processes that may stop while deciding one job before it fails"
    )
    spool_orphan_seconds: float = Field(
        86_400,
        gt=0,
        description="Spool files older than this that no request, job or delivery uses are "
        "removed (a process that died left them); checked every `spool_sweep_seconds`",
    )
    spool_sweep_seconds: float = Field(
        600,
        gt=0,
        description="How often the spool folder is swept of files no request, job or delivery "
        "holds (those older than `spool_orphan_seconds`)",
    )
    negotiation_timeout_seconds: float = Field(
        7 * 24 * 3600.0,
        gt=0,
        description="A contract negotiation that waits longer than this for its next message "
        "is ended by the broker (checked every `negotiation_sweep_seconds`)",
    )
    protocol_callback_seconds: float = Field(
        2.0,
        gt=0,
        description="How often the provider's and the broker's messages of Dataspace Protocol "
        "negotiations and transfer processes are sent to the consumers' callback addresses "
        "(and failed ones retried), and transfer processes are tied to the /v1 transfers that "
        "carry their data",
    )
    negotiation_sweep_seconds: float = Field(
        60.0,
        gt=0,
        description="How often negotiations past `negotiation_timeout_seconds` are looked for "
        "and ended",
    )
    policy_dir: Path = Field(Path("policies"), description="Seed F-SLA records (YAML)")
    apply_migrations: bool = Field(True, description="Upgrade the schema at start")
    remedy_seconds: float = Field(
        120.0,
        gt=0,
        description="Time budget of the search for a verified remedy; checked before each "
        "anonymization attempt (an attempt that started finishes)",
    )
    linkage_max_classes: int = Field(
        100_000,
        ge=1,
        description="Most classes the broker remembers of one approved release, for the "
        "linkage rule (`linkage_lookback_days`); a release with more is remembered by its "
        "count only, and a later transfer to the same destination that looks back on it is "
        "rejected until it leaves the window",
    )
    anonymize_max_suppression: float = Field(
        0.05, ge=0, le=1, description="Largest share of rows auto-anonymization may suppress"
    )
    inbox_allowed_networks: list[str] = Field(
        default_factory=list,
        description="Networks member inboxes may be in besides public addresses, as a JSON "
        'list (["10.0.0.0/8", "127.0.0.0/8"]); loopback, private and link-local are refused '
        "otherwise (SSRF)",
    )
    inbox_allowed_hosts: list[str] = Field(
        default_factory=list,
        description='Host names member inboxes may use whatever they resolve to (["sn-hospital"])',
    )
    rate_limit: str = Field(
        "120/minute",
        description="Uploads (transfers, analyses, catalog measurements) one member may send, "
        "in the notation of "
        "the `limits` library ('120/minute', '10/second;1000/hour'); admins are not limited",
    )
    rate_limit_storage: str = Field(
        "memory://",
        description="Where the counts live: memory:// (one process) or a shared store such as "
        "redis://host:6379 (several processes share one budget)",
    )
    console_idle_minutes: float = Field(
        30,
        gt=0,
        description="A console session ends after this long without a page opened (minutes)",
    )
    console_session_hours: float = Field(
        12,
        gt=0,
        description="A console session ends this long after its sign-in, however busy (hours)",
    )
    console_sign_in_rate: str = Field(
        "10/minute;50/hour",
        description="Console sign-in attempts from one client address, in the notation of "
        "`rate_limit`; counted in `rate_limit_storage`",
    )
    key_grace_seconds: float = Field(
        86_400, ge=0, description="How long a member's previous API key works after a rotation"
    )
    signing_key_dir: Path = Field(
        Path("data/signing-keys"),
        description="Folder of the broker's Ed25519 delivery signing keys (*.pem): the newest "
        "signs, all are published; never in the database",
    )
    signing_key_create: bool = Field(
        True, description="Create a first key when the folder has none (local use)"
    )
    delivery_enabled: bool = Field(True, description="Run the delivery worker in this process")
    delivery_max_attempts: int = Field(
        8, ge=1, description="Attempts of one delivery before it fails (it can be redelivered)"
    )
    delivery_backoff_seconds: float = Field(1.0, gt=0, description="First retry delay")
    delivery_backoff_max_seconds: float = Field(
        60.0, gt=0, description="Longest retry delay: the delay doubles up to this"
    )
    delivery_lease_seconds: float = Field(
        60.0, gt=0, description="How long a worker holds a delivery; must exceed the timeout"
    )
    delivery_poll_seconds: float = Field(
        0.5,
        gt=0,
        description="How soon the delivery worker looks again for due deliveries when it found "
        "none; twice as long after each look that finds none, up to 5 s (a transfer approved "
        "in this process, or a retry coming due, wakes it at once)",
    )
    delivery_failed_retention_seconds: float = Field(
        7 * 86_400,
        ge=0,
        description="How long a failed delivery's data is kept for a redelivery",
    )
    delivery_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="HTTP timeout of one delivery attempt; `delivery_lease_seconds` must "
        "outlast it",
    )
    delivery_concurrency: int = Field(
        8,
        ge=1,
        le=256,
        description="Deliveries one worker has under way at once (each a POST to an inbox): "
        "a slow or failing destination holds one of them, not the others",
    )
    delivery_signature_seconds: int = Field(
        300,
        ge=10,
        le=3600,
        description="How long a delivery's signature holds (its RFC 9421 expires - created); "
        "every attempt is signed anew. Members refuse signatures that hold longer than they "
        "accept (MEMBER_SIGNATURE_MAX_LIFETIME_SECONDS, 900 by default)",
    )
    health_check_enabled: bool = Field(
        True,
        description="Check member clouds' health in this process (each member is checked once "
        "a period whatever the number of processes). Deliveries to a member marked down wait "
        "until a check sees it up: keep the checks on in at least one process",
    )
    health_check_seconds: float = Field(
        30.0, gt=0, description="How often each active member's health URL is checked"
    )
    health_check_timeout_seconds: float = Field(
        5.0,
        gt=0,
        description="How long a check waits for an answer; must be shorter than the period",
    )
    health_check_down_after: int = Field(
        2,
        ge=1,
        description="Failed checks in a row that mark a member down (one success marks it up)",
    )
    dry_run_retention_seconds: float = Field(
        3_600,
        ge=0,
        description="How long a dry run's data (what the transfer would deliver) can be fetched "
        "at `/v1/transfers/dry-runs/{id}/data`; 0 keeps none",
    )

    @field_validator("dask_scheduler", "reference_output")
    @classmethod
    def _unset_when_empty(cls, value: str | None) -> str | None:
        """An empty variable (compose's ``${BROKER_DASK_SCHEDULER:-}``) means not set."""
        return value or None

    @field_validator("rate_limit", "console_sign_in_rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        from limits import parse_many

        try:
            parse_many(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a rate such as '120/minute'") from None
        return value

    @field_validator("inbox_allowed_networks")
    @classmethod
    def _networks(cls, values: list[str]) -> list[str]:
        parse_networks(values)
        return values

    @property
    def inbox_policy(self) -> InboxPolicy:
        return InboxPolicy.of(self.inbox_allowed_networks, self.inbox_allowed_hosts)

    @model_validator(mode="after")
    def _password_into_url(self) -> Settings:
        if self.database_password is None:
            return self
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(self.database_url)
        except ArgumentError:
            raise ValueError("database_url is not a SQLAlchemy URL") from None
        if url.password is not None:
            raise ValueError(
                "database_url has a password and database_password is set: give it once"
            )
        password = self.database_password.get_secret_value()
        self.database_url = url.set(password=password).render_as_string(hide_password=False)
        return self

    @model_validator(mode="after")
    def _lease_outlives_an_attempt(self) -> Settings:
        if self.delivery_lease_seconds <= self.delivery_timeout_seconds:
            raise ValueError(
                "delivery_lease_seconds must be longer than delivery_timeout_seconds, or a slow "
                "attempt could lose its lease and be posted twice"
            )
        return self

    @model_validator(mode="after")
    def _check_ends_within_its_period(self) -> Settings:
        if self.health_check_timeout_seconds >= self.health_check_seconds:
            raise ValueError(
                "health_check_timeout_seconds must be shorter than health_check_seconds, or a "
                "slow check could still run when the next one of the same member starts"
            )
        return self

    @model_validator(mode="after")
    def _reference_roots_apart(self) -> Settings:
        """A member's granted folder holds only what that member may send: not another
        member's folder, nor the broker's own files (its spool holds every member's uploads,
        its key folder its signing keys, its output what other transfers delivered)."""
        own = {"spool_dir": self.spool_dir, "signing_key_dir": self.signing_key_dir}
        if self.reference_output and "://" not in self.reference_output:
            own["reference_output"] = self.reference_output
        granted = []
        for member, roots in self.reference_roots.items():
            for root in roots:
                if not root.startswith("/") or "://" in root or "::" in root:
                    raise ValueError(
                        f"reference_roots: {root!r} ({member}) is not an absolute path of the "
                        "shared file storage (object stores are not supported)"
                    )
                granted.append((member, root))
        for member, root in granted:
            for name, folder in own.items():
                if _nested(root, str(folder)):
                    raise ValueError(
                        f"reference_roots: {root!r} ({member}) and {name} ({folder}) overlap"
                    )
            for other, theirs in granted:
                if other != member and _nested(root, theirs):
                    raise ValueError(
                        f"reference_roots: {root!r} ({member}) and {theirs!r} ({other}) overlap"
                    )
        return self


def _nested(first: str, second: str) -> bool:
    """Whether one folder is the other or lies in it (their links resolved)."""
    one, two = (os.path.realpath(path).rstrip("/") + "/" for path in (first, second))
    return one.startswith(two) or two.startswith(one)


@lru_cache
def get_settings() -> Settings:
    return Settings()

"""A decision's stored documents: each rule's result and the remedy, written, served and read
back by these models.

Pure (pydantic only). A transfer stores its rules (``Transfer.rules``) as :class:`StoredRule`'s
JSON (:meth:`broker.fsla.results.RuleResult.stored`) and its remedy (``Transfer.remedy``) as
:class:`StoredRemedy`'s (:meth:`broker.fsla.remedy.VerifiedRemedy.stored`, completed by
:func:`broker.fsla.decide.decide`); the API serves them (``TransferRead.rules`` and
``TransferRead.remedy``, :class:`broker.transfers.schemas.RemedyRead` derives from
:class:`StoredRemedy`), and the summary, the HTML report and policy replay read them with
:meth:`StoredRemedy.of` and :meth:`StoredRule.of`.

Rows stored by older brokers lack what was added since; one before-validator per model gives
them their defaults:

- a rule (the same eight fields since the first transfers, 2026-11-21): ``attribute``,
  ``measured`` and ``threshold`` None;
- a remedy: the first transfers (cafe464) stored hints only, ``{"verified": false, "steps":
  [...], "note": ...}``; verified remedies (89426b2) added ``information_loss``,
  ``suppressed_rows``, ``after`` and, once applied, ``applied`` and ``before``, with steps
  whose ``reason`` was null. Defaults: ``note`` None, ``applied`` False, ``information_loss``,
  ``suppressed_rows``, ``after`` and ``before`` None, a step's ``reason`` "" (null read as
  empty); information loss without ``attribute_utility_percent`` {}.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from broker.metrics.stored import StoredReport


class StoredRule(BaseModel):
    """One rule's result as a transfer stores it (``Transfer.rules``, and a remedy's
    ``before.rules``)."""

    rule: str = Field(examples=["min_k"])
    scope: str = Field(
        description="export (the source's rules), import (the destination's rules) or "
        "federation (the broker's own checks)"
    )
    jurisdiction: str
    attribute: str | None = Field(None, description="The attribute or attributes concerned")
    passed: bool
    measured: float | int | str | None = None
    threshold: float | int | str | None = None
    detail: str

    @classmethod
    def of(cls, stored: Any) -> StoredRule:
        """The result of a stored rule dictionary."""
        return cls.model_validate(stored)

    def stored(self) -> dict[str, Any]:
        """What ``Transfer.rules`` holds for it: this model's JSON."""
        return self.model_dump(mode="json")


class RemedyStep(BaseModel):
    column: str | None = Field(description="Column (or comma-separated columns) concerned")
    method: str = Field(examples=["drop", "generalize", "mondrian"])
    parameters: dict[str, Any]
    reason: str = Field(
        "",
        description="Why the step was chosen: the rule behind it and what the data needed",
        examples=["k = 3 because the rule sets ask min_k = 3; Age has 9 values in 9 rows"],
    )

    @field_validator("reason", mode="before")
    @classmethod
    def _never_null(cls, reason: object) -> object:
        """Remedies recorded before steps carried a reason read as an empty one."""
        return "" if reason is None else reason


class RemedyLoss(BaseModel):
    """How much information the remedy keeps and what it suppresses."""

    utility_percent: float = Field(description="Non-uniform entropy kept, in percent")
    attribute_utility_percent: dict[str, float] = Field(
        default_factory=dict, description="The same, per quasi-identifier"
    )
    discernibility: float
    suppressed_rows: int
    suppressed_cell_share: float = Field(description="Share of the cells suppressed")


class RemedyAfter(BaseModel):
    """The anonymized data's figures."""

    rows: int
    k: int | None = None
    equivalence_classes: int | None = None


class StoredBefore(BaseModel):
    """An applied remedy's record of the data as uploaded."""

    report: StoredReport = Field(description="The report of the data as uploaded")
    rules: list[StoredRule] = Field(description="Its rules' results, as `rules` shows them")


class StoredRemedy(BaseModel):
    """The remedy a transfer stores (``Transfer.remedy``): the steps, whether the broker
    verified and applied them, the information they keep and the figures after."""

    verified: bool = Field(
        description="True when the broker applied the steps to this very data, measured the "
        "result again and found that it passes every rule"
    )
    steps: list[RemedyStep]
    note: str | None = None
    applied: bool = Field(
        False,
        description="True when the broker anonymized the data itself (anonymize=auto) and "
        "delivers only the result",
    )
    information_loss: RemedyLoss | None = Field(
        None,
        description="utility_percent (non-uniform entropy kept), discernibility, suppressed "
        "rows and share of suppressed cells",
    )
    suppressed_rows: int | None = None
    after: RemedyAfter | None = Field(None, description="Rows, k and classes after the steps")
    before: StoredBefore | None = Field(
        None, description="The report and rules of the data as uploaded (when applied)"
    )

    @model_validator(mode="before")
    @classmethod
    def _older_rows(cls, data: Any) -> Any:
        """The defaults of the fields a remedy stored by an older broker lacks (listed in the
        module docstring)."""
        if not isinstance(data, dict):
            return data
        return {
            "note": None,
            "applied": False,
            "information_loss": None,
            "suppressed_rows": None,
            "after": None,
            "before": None,
            **data,
        }

    @classmethod
    def of(cls, stored: Any) -> StoredRemedy | None:
        """The remedy of a stored ``Transfer.remedy`` (None: none was stored)."""
        return None if stored is None else cls.model_validate(stored)

    def stored(self) -> dict[str, Any]:
        """What ``Transfer.remedy`` holds: this model's JSON."""
        return self.model_dump(mode="json")

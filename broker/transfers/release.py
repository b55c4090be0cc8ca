"""An aggregate release's stored document (``Transfer.aggregate``): written, served and read
back by this model, and the destination's payload built from it.

Pure (pydantic only). The decision of an aggregate release (:mod:`broker.transfers.aggregate`)
writes it as :meth:`StoredRelease.stored`; the API serves it (``TransferRead.aggregate``,
:class:`broker.transfers.schemas.AggregateRead` derives from it: the same fields), the
destination without ``dataset_key``; :meth:`StoredRelease.delivered_answers` is what the
destination receives. ``queries`` holds each query with its cost and accuracy
(:meth:`broker.privacy.release.Plan.as_dict`), always; ``answers`` each query's released result
(:func:`broker.privacy.release.compute`), in the same order, only once released.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 2


def _absent(description: str) -> Any:
    """A field that the document leaves out when it does not apply (not written as null)."""
    return Field(None, description=description, exclude_if=lambda value: value is None)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReleaseQuery(_Closed):
    """A query as asked, checked (:meth:`broker.privacy.queries.Query.as_dict`)."""

    type: Literal["count", "count_by", "sum", "mean", "quantile"]
    columns: list[str] | None = _absent("count_by: the columns counted")
    keys: dict[str, list[str | None]] | None = _absent(
        "count_by: each column's declared keys (absent: the keys come from the data)"
    )
    column: str | None = _absent("sum, mean, quantile: the numeric column read")
    bounds: list[float] | None = _absent("sum, mean, quantile: the clamping interval")
    quantiles: list[float] | None = _absent("quantile: the quantiles asked")
    candidates: int | None = _absent("quantile: how many candidate values, evenly spaced")
    contributions: int | None = _absent("the rows of one person the query reads, when stated")


class Accuracy(_Closed):
    confidence: float | None = Field(description="The probability of `half_width` (or None)")
    half_width: float | None = Field(description="The noise stays within it at `confidence`")
    meaning: str = Field(description="The accuracy in words")


class PlannedQuery(_Closed):
    """One query with its share of the budget, its mechanism and its accuracy."""

    query: ReleaseQuery
    mechanism: str = Field(examples=["Laplace (OpenDP make_laplace on make_count)"])
    epsilon: str = Field(description="Its share of the release's epsilon")
    epsilon_exact: str = Field(description="The same, exactly, as num/den")
    delta: str = Field(description="Its share of the release's delta")
    contributions: int = Field(description="The rows of one person it reads, as calibrated")
    scale: float | list[float] = Field(
        description="The noise scale (a list: one per mechanism of a mean or quantiles)"
    )
    accuracy: Accuracy
    threshold: int | None = _absent(
        "count_by with keys from the data: a key is released only above this noisy count"
    )
    delta_of_threshold: float | None = _absent("The delta the threshold spends")


class CountAnswer(_Closed):
    count: int = Field(description="The noisy count")


class Cell(_Closed):
    key: list[str | None] = Field(description="One value per column counted")
    count: int = Field(description="Its noisy count")


class DeclaredCountsAnswer(_Closed):
    """count_by with declared keys: every declared cell, and the other rows in one."""

    columns: list[str]
    cells: list[Cell]
    other: int = Field(description="The noisy count of the rows outside the declared keys")


class DataKeyCountsAnswer(_Closed):
    """count_by with keys from the data: the keys counted above the threshold."""

    columns: list[str]
    cells: list[Cell]
    threshold: int
    withheld: int = Field(description="Released keys withheld because they hold an identifier")


class SumAnswer(_Closed):
    sum: float


class MeanAnswer(_Closed):
    mean: float = Field(description="The noisy sum over the noisy count, within the bounds")
    sum: float
    count: int
    interval: list[float] | None = Field(
        description="Holds the exact mean with probability at least the confidence (None: the "
        "noisy count is too small to say)"
    )


class QuantileValue(_Closed):
    quantile: float
    value: float


class QuantilesAnswer(_Closed):
    quantiles: list[QuantileValue]


Answer = (
    CountAnswer
    | DeclaredCountsAnswer
    | DataKeyCountsAnswer
    | SumAnswer
    | MeanAnswer
    | QuantilesAnswer
)


class StoredRelease(BaseModel):
    """An aggregate release: what it spends, its queries and, once released, their answers.

    Version 1 (the first aggregate releases, f6a3e7e, 2026-11-26, up to this model's
    ``schema_version`` 2) had neither ``schema_version`` nor ``queries``: its ``answers`` held each
    planned query's document, with its ``result`` once released. :meth:`_from_version_1` reads
    such a row as version 2: the documents without their results are the ``queries``, the
    results the ``answers`` (None when not released).
    """

    schema_version: Literal[2] = SCHEMA_VERSION
    epsilon: str = Field(description="The epsilon the release spends, in decimal", examples=["1"])
    epsilon_exact: str = Field(description="The same, exactly, as num/den", examples=["1/1"])
    delta: str = Field(description="The delta it spends", examples=["0.000001"])
    delta_exact: str = Field(examples=["1/1000000"])
    spent: bool = Field(
        description="True when the release was approved and its epsilon and delta are counted "
        "against the budgets; a refusal or a dry run spends nothing"
    )
    released: bool = Field(description="True when `answers` hold the released values")
    dataset_key: str | None = Field(
        None,
        description="The dataset's key in the budget ledger (a hash of its content, so the "
        "same table in another format or order meets the same budget); not shown to the "
        "destination",
    )
    queries: list[PlannedQuery] = Field(
        description="Each query with its mechanism, share of the budget and accuracy"
    )
    answers: list[Answer] | None = Field(
        description="Each query's released answer, in the order of `queries`; null unless "
        "released (a refusal or a dry run answers nothing)"
    )

    @model_validator(mode="before")
    @classmethod
    def _from_version_1(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "schema_version" in data or "queries" in data:
            return data
        documents = data.get("answers") or []
        queries = [{k: v for k, v in d.items() if k != "result"} for d in documents]
        answers = [d.get("result") for d in documents] if data.get("released") else None
        return {**data, "schema_version": SCHEMA_VERSION, "queries": queries, "answers": answers}

    @model_validator(mode="after")
    def _an_answer_per_query(self) -> StoredRelease:
        if self.answers is not None and len(self.answers) != len(self.queries):
            raise ValueError(
                f"{len(self.answers)} answers for {len(self.queries)} queries: one each"
            )
        return self

    @classmethod
    def of(cls, stored: Any) -> StoredRelease | None:
        """The release of a stored ``Transfer.aggregate`` (None: not an aggregate release)."""
        return None if stored is None else cls.model_validate(stored)

    def stored(self) -> dict[str, Any]:
        """What ``Transfer.aggregate`` holds: this model's JSON."""
        return self.model_dump(mode="json")

    def seen_by_destination(self) -> StoredRelease:
        """The release without the dataset's key in the privacy budget ledger."""
        return self.model_copy(update={"dataset_key": None})

    def delivered_answers(self) -> list[dict[str, Any]]:
        """The destination's ``answers``: each query's document with its ``result``."""
        if self.answers is None:
            raise ValueError("A release that was not released delivers nothing")
        return [
            {**query.model_dump(mode="json"), "result": answer.model_dump(mode="json")}
            for query, answer in zip(self.queries, self.answers, strict=True)
        ]

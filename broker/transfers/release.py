"""An aggregate release's stored document (``Transfer.aggregate``): written, served and read
back by this model.

Pure (pydantic only). The decision of an aggregate release (:mod:`broker.transfers.aggregate`)
writes it as :meth:`StoredRelease.stored`; the API serves it (``TransferRead.aggregate``,
:class:`broker.transfers.schemas.AggregateRead` derives from it: the same fields), the
destination without ``dataset_key``. Its fields have not changed since the first aggregate
releases (f6a3e7e, 2026-11-26), so no older row needs a default; ``answers`` stays a list of
the answers' own documents (:meth:`broker.privacy.release.Plan.as_dict` before a release, the
released answers after).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class StoredRelease(BaseModel):
    """An aggregate release: what it spends and, once released, each query's answer."""

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
    answers: list[dict[str, Any]] = Field(
        description="One entry per query: `query`, `mechanism`, `epsilon`, `delta`, `scale`, "
        "`accuracy` (`confidence`, `half_width`, `meaning`) and, once released, `result` "
        "(`count`; `cells` with `key` and `count`, `other`, `threshold`; `sum`; `mean` with its "
        "`interval`; `quantiles`)"
    )

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

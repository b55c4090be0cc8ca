"""The federation overview as the API answers it (and as :mod:`broker.federation.overview`
builds it). Each section is one field of :class:`FederationOverview`."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, Field

from broker.members.schemas import MemberHealthRead
from broker.wire.statuses import MemberStatus


class StatusCounts(BaseModel):
    """Transfers per decision status."""

    approved: int = 0
    anonymization_required: int = 0
    rejected: int = 0
    total: int = 0


class MemberOverview(BaseModel):
    id: str
    name: str
    jurisdiction: str
    status: MemberStatus
    health: MemberHealthRead


class HealthCounts(BaseModel):
    """Active members per health state (suspended members are not checked)."""

    up: int = 0
    down: int = 0
    unknown: int = 0


class PairOverview(BaseModel):
    source_jurisdiction: str
    destination_jurisdiction: str | None = Field(
        description="None for transfers to a destination that is not a member (rejected)"
    )
    decisions: StatusCounts


class DayOverview(BaseModel):
    day: date = Field(description="A UTC day")
    decisions: StatusCounts


class DecisionsOverTime(BaseModel):
    days: int = Field(description="The window, in days, today (UTC) included")
    first_day: date
    last_day: date
    per_day: list[DayOverview] = Field(description="Every day of the window, oldest first")
    decisions: StatusCounts = Field(description="The window's decisions together")


class DeliveryCounts(BaseModel):
    """Approved transfers' deliveries per state (`held`: pending, to a member that is down)."""

    pending: int = 0
    held: int = 0
    delivered: int = 0
    failed: int = 0
    total: int = 0


class MarketCounts(BaseModel):
    """The data market: catalogued datasets, negotiations, agreements (see "The data market")."""

    datasets_listed: int = Field(0, description="In the catalog: not withdrawn")
    datasets_measured: int = Field(0, description="Listed, their current version measured")
    datasets_withdrawn: int = 0
    negotiations_open: int = Field(0, description="Not FINALIZED nor TERMINATED")
    negotiations: dict[str, int] = Field(
        default_factory=dict, description="Every negotiation, per Dataspace Protocol state"
    )
    agreements_active: int = 0
    agreements_suspended: int = Field(0, description="An F-SLA change broke their terms")


class FederationOverview(BaseModel):
    """The federation at a glance, for its administrators."""

    generated_at: datetime
    members: list[MemberOverview] = Field(description="Every member, by id")
    member_health: HealthCounts
    transfers_by_jurisdiction_pair: list[PairOverview] = Field(
        description="Every decision ever made, per (source, destination) jurisdiction pair; "
        "most transfers first"
    )
    decisions_over_time: DecisionsOverTime
    deliveries: DeliveryCounts
    market: MarketCounts = Field(default_factory=MarketCounts)

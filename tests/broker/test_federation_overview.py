"""The federation overview: the pure function on hand-made rows, then the route on a real
database (SQLite and PostgreSQL) against hand-computed numbers, and who may read it."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta

import pytest
from sqlalchemy import insert, text, update
from sqlalchemy.orm import Session

from broker.federation import repository
from broker.federation.overview import (
    DayRow,
    DeliveryRow,
    MemberRow,
    OverviewRows,
    PairRow,
    overview,
    window,
)
from broker.transfers.models import Transfer
from tests.broker.conftest import ADMIN, bearer
from tests.broker.test_delivery import QI

NOW = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
TODAY = NOW.date()
PROBLEM = "application/problem+json"


# --- the pure function ------------------------------------------------------------------------


def test_members_and_their_health_counted_per_state_active_members_only():
    since = datetime(2026, 11, 26, tzinfo=UTC)
    rows = OverviewRows(
        members=[
            MemberRow("sn", "SN hospital", "SN", "active", "up", since, since),
            MemberRow("fr", "FR lab", "FR", "active", "down", since, since, "could not connect"),
            MemberRow("ng", "NG", "NG", "active", "unknown", since),
            MemberRow("ke", "KE", "KE", "suspended", "down", since),
            MemberRow("aa", "no health row", "SN", "active"),
        ]
    )
    found = overview(rows, now=NOW)
    assert [m.id for m in found.members] == ["aa", "fr", "ke", "ng", "sn"]
    assert found.members[1].health.reason == "could not connect"  # admins see why
    assert found.members[0].health.state == "unknown"
    assert found.member_health.model_dump() == {"up": 1, "down": 1, "unknown": 2}


def test_transfers_per_pair_of_jurisdictions_busiest_first():
    rows = OverviewRows(
        pairs=[
            PairRow("SN", "FR", "approved", 4),
            PairRow("SN", "FR", "rejected", 1),
            PairRow("FR", "SN", "anonymization_required", 2),
            PairRow("SN", None, "rejected", 3),
            PairRow("SN", "FR", "approved", 2),  # the same pair from other members
            PairRow("FR", "SN", "some_future_status", 5),  # in the total only
        ]
    )
    found = [p.model_dump() for p in overview(rows, now=NOW).transfers_by_jurisdiction_pair]
    assert found == [
        {
            "source_jurisdiction": "FR",
            "destination_jurisdiction": "SN",
            "decisions": {"approved": 0, "anonymization_required": 2, "rejected": 0, "total": 7},
        },
        {
            "source_jurisdiction": "SN",
            "destination_jurisdiction": "FR",
            "decisions": {"approved": 6, "anonymization_required": 0, "rejected": 1, "total": 7},
        },
        {
            "source_jurisdiction": "SN",
            "destination_jurisdiction": None,
            "decisions": {"approved": 0, "anonymization_required": 0, "rejected": 3, "total": 3},
        },
    ]


def test_decisions_over_time_every_day_of_the_window_and_nothing_else():
    rows = OverviewRows(
        days=[
            DayRow(TODAY, "approved", 2),
            DayRow(TODAY, "rejected", 1),
            DayRow(TODAY - timedelta(days=2), "anonymization_required", 4),
            DayRow(TODAY - timedelta(days=3), "approved", 9),  # before a 3-day window
            DayRow(TODAY + timedelta(days=1), "approved", 9),  # a clock ahead: not in it
        ]
    )
    found = overview(rows, now=NOW, days=3).decisions_over_time
    assert (found.days, found.first_day, found.last_day) == (3, date(2026, 11, 25), TODAY)
    assert [(d.day, d.decisions.total) for d in found.per_day] == [
        (date(2026, 11, 25), 4),
        (date(2026, 11, 26), 0),
        (date(2026, 11, 27), 3),
    ]
    assert found.per_day[2].decisions.approved == 2
    assert found.decisions.model_dump() == {
        "approved": 2,
        "anonymization_required": 4,
        "rejected": 1,
        "total": 7,
    }


def test_deliveries_per_state_held_split_from_pending():
    rows = OverviewRows(
        deliveries=[
            DeliveryRow("pending", False, 3),
            DeliveryRow("pending", True, 2),
            DeliveryRow("delivered", False, 10),
            DeliveryRow("failed", False, 1),
        ]
    )
    assert overview(rows, now=NOW).deliveries.model_dump() == {
        "pending": 3,
        "held": 2,
        "delivered": 10,
        "failed": 1,
        "total": 16,
    }


def test_an_empty_federation_has_an_overview_of_zeros():
    found = overview(OverviewRows(), now=NOW, days=1)
    assert found.members == [] and found.transfers_by_jurisdiction_pair == []
    assert [d.day for d in found.decisions_over_time.per_day] == [TODAY]
    assert found.deliveries.total == 0


@pytest.mark.parametrize("days", [0, -1, 367])
def test_the_window_is_bounded(days):
    with pytest.raises(ValueError, match="days must be between 1 and 366"):
        window(TODAY, days)


# --- the route, on a real database -------------------------------------------------------------


def send(federation, source, destination, fixture="patients_published.csv", **form):
    answer = federation.send(source, fixture, destination=destination, **QI, **form)
    assert answer.status_code == 200, answer.text
    return answer.json()


def days_ago(connection, transfer_id, days, at=time(12, 0)):
    moment = datetime.combine(datetime.now(UTC).date() - timedelta(days=days), at, tzinfo=UTC)
    connection.execute(update(Transfer).where(Transfer.id == transfer_id).values(created_at=moment))


@pytest.fixture
def traffic(federation, connection):
    """Seven decisions with known outcomes, on known days (0: today, UTC):

    ====  ==============================  ========================  =======
    day   from -> to                      status                    deliv.
    ====  ==============================  ========================  =======
    0     sn-hospital -> fr-research      approved                  pending
    0     sn-hospital -> fr-research      anonymization_required
    2     sn-hospital -> ng-health        rejected (purpose)
    2     sn-hospital -> nobody           rejected (not a member)
    5     fr-research -> sn-hospital      approved (anonymized)     held
    40    sn-hospital -> fr-research      approved                  delivered
    0     sn-lab -> sn-hospital           approved (domestic)       failed
    ====  ==============================  ========================  =======
    """
    ids = [
        send(federation, "sn-hospital", "fr-research")["id"],
        send(federation, "sn-hospital", "fr-research", "patients_original.csv")["id"],
        send(federation, "sn-hospital", "ng-health", purpose="marketing")["id"],
        send(federation, "sn-hospital", "nobody")["id"],
        send(federation, "fr-research", "sn-hospital", anonymize="auto")["id"],
        send(federation, "sn-hospital", "fr-research")["id"],
        send(federation, "sn-lab", "sn-hospital")["id"],
    ]
    statuses = [federation.client.get(f"/v1/transfers/{i}", headers=ADMIN).json() for i in ids]
    assert [s["status"] for s in statuses] == [
        "approved",
        "anonymization_required",
        "rejected",
        "rejected",
        "approved",
        "approved",
        "approved",
    ]
    for transfer_id, days in zip(ids, [0, 0, 2, 2, 5, 40, 0], strict=True):
        days_ago(connection, transfer_id, days)
    connection.execute(
        text("UPDATE deliveries SET status = 'delivered' WHERE transfer_id = :t"), {"t": ids[5]}
    )
    connection.execute(
        text("UPDATE deliveries SET status = 'failed' WHERE transfer_id = :t"), {"t": ids[6]}
    )
    connection.execute(
        text("UPDATE member_health SET state = 'down' WHERE member_id = 'sn-hospital'")
    )
    connection.execute(text("UPDATE member_health SET state = 'up' WHERE member_id = 'ng-health'"))
    return ids


def counts(approved=0, required=0, rejected=0):
    return {
        "approved": approved,
        "anonymization_required": required,
        "rejected": rejected,
        "total": approved + required + rejected,
    }


def test_the_overview_counts_what_was_decided_and_delivered(client, traffic):
    answer = client.get("/v1/federation/overview?days=7", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert [
        (m["id"], m["jurisdiction"], m["status"], m["health"]["state"]) for m in found["members"]
    ] == [
        ("fr-research", "FR", "active", "unknown"),
        ("ng-health", "NG", "active", "up"),
        ("sn-hospital", "SN", "active", "down"),
        ("sn-lab", "SN", "active", "unknown"),
    ]
    assert found["member_health"] == {"up": 1, "down": 1, "unknown": 2}
    pairs = {
        (p["source_jurisdiction"], p["destination_jurisdiction"]): p["decisions"]
        for p in found["transfers_by_jurisdiction_pair"]
    }
    assert pairs == {
        ("SN", "FR"): counts(approved=2, required=1),  # the 40-day-old one too: all time
        ("SN", "NG"): counts(rejected=1),
        ("SN", None): counts(rejected=1),
        ("FR", "SN"): counts(approved=1),
        ("SN", "SN"): counts(approved=1),
    }
    assert next(iter(pairs)) == ("SN", "FR")  # busiest first
    over_time = found["decisions_over_time"]
    today = datetime.now(UTC).date()
    assert over_time["first_day"] == str(today - timedelta(days=6))
    per_day = {d["day"]: d["decisions"] for d in over_time["per_day"]}
    assert len(per_day) == 7
    assert per_day[str(today)] == counts(approved=2, required=1)
    assert per_day[str(today - timedelta(days=2))] == counts(rejected=2)
    assert per_day[str(today - timedelta(days=5))] == counts(approved=1)
    assert sum(d["total"] for d in per_day.values()) == 6  # not the 40-day-old one
    assert over_time["decisions"] == counts(approved=3, required=1, rejected=2)
    assert found["deliveries"] == {
        "pending": 1,
        "held": 1,  # to sn-hospital, which is down
        "delivered": 1,
        "failed": 1,
        "total": 4,
    }


def test_the_window_is_a_query_parameter_with_a_default_and_a_bound(client, traffic):
    default = client.get("/v1/federation/overview", headers=ADMIN).json()["decisions_over_time"]
    assert default["days"] == 30 and len(default["per_day"]) == 30
    assert default["decisions"]["total"] == 6
    year = client.get("/v1/federation/overview?days=366", headers=ADMIN).json()
    assert year["decisions_over_time"]["decisions"]["total"] == 7
    one = client.get("/v1/federation/overview?days=1", headers=ADMIN).json()
    assert one["decisions_over_time"]["decisions"] == counts(approved=2, required=1)
    for days in ("0", "367", "a week"):
        answer = client.get(f"/v1/federation/overview?days={days}", headers=ADMIN)
        assert answer.status_code == 422
        assert answer.headers["content-type"] == PROBLEM
        assert answer.json()["errors"][0]["field"].endswith("days")


def test_days_are_utc_days_whatever_the_databases_time_zone(client, federation, connection):
    """A decision at 23:30 UTC belongs to its UTC day, even where it is already tomorrow."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SET TIME ZONE 'Pacific/Auckland'"))  # UTC+13 in November
    late = send(federation, "sn-hospital", "fr-research")["id"]
    days_ago(connection, late, 1, at=time(23, 30))
    found = client.get("/v1/federation/overview?days=3", headers=ADMIN).json()
    per_day = {d["day"]: d["decisions"]["total"] for d in found["decisions_over_time"]["per_day"]}
    today = datetime.now(UTC).date()
    assert per_day == {str(today - timedelta(days=n)): 1 if n == 1 else 0 for n in (2, 1, 0)}


@pytest.mark.parametrize("path", ["/v1/federation/overview", "/v1/federation/overview.html"])
def test_the_overview_is_for_administrators_only(client, federation, path):
    anonymous = client.get(path)
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"] == PROBLEM
    assert anonymous.json()["type"] == "urn:fedbroker:problem:not-authenticated"
    member = client.get(path, headers=bearer(federation.keys["sn-hospital"]))
    assert member.status_code == 403
    assert member.headers["content-type"] == PROBLEM
    assert member.json()["detail"] == "This route is for the federation's administrators"
    wrong = client.get(path, headers=bearer("fbk_not-a-key"))
    assert wrong.status_code == 401 and wrong.headers["content-type"] == PROBLEM


def test_the_overview_page_shows_the_same_figures_with_the_report_headers(client, traffic):
    pytest.importorskip("matplotlib", reason="the 'reports' extra is not installed")
    answer = client.get("/v1/federation/overview.html?days=7", headers=ADMIN)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    assert answer.headers["cache-control"] == "no-store"
    page = answer.text
    assert "<script" not in page
    assert "4 active members: 1 up, 1 down, 2 unknown" in page
    assert "1 delivery is held for members that are down" in page
    assert "6 decisions over the last 7 days: 3 approved, 1 anonymization required, 2 rejected" in (
        page
    )
    assert 'id="decisions"' in page and 'id="pairs"' in page and 'id="deliveries"' in page


def test_aggregates_hold_for_many_transfers(client, federation, connection):
    """3,000 decisions written in one statement: the repository's rows stay one per group."""
    template = send(federation, "sn-hospital", "fr-research")
    row = (
        connection.execute(text("SELECT * FROM transfers WHERE id = :t"), {"t": template["id"]})
        .mappings()
        .one()
    )
    now = datetime.now(UTC)
    statuses = ["approved", "rejected", "anonymization_required"]
    sources = ["sn-hospital", "fr-research"]
    rows = [
        {
            **row,
            "id": str(uuid.uuid4()),
            "idempotency_key": None,
            "status": statuses[n % 3],
            "source_id": sources[n % 2],
            "destination_id": "ng-health" if n % 5 else "fr-research",
            "created_at": now - timedelta(days=n % 10),
        }
        for n in range(3000)
    ]
    connection.execute(insert(Transfer), rows)
    with Session(bind=connection) as session:
        pairs = repository.pair_rows(session)
        days = repository.day_rows(session, now - timedelta(days=30))
    assert len(pairs) <= 2 * 2 * 3 + 1 and len(days) <= 10 * 3
    assert sum(p.count for p in pairs) == 3001
    assert sum(d.count for d in days) == 3001
    expected_sn_ng = sum(1 for n in range(3000) if n % 2 == 0 and n % 5)
    found = {(p.source_jurisdiction, p.destination_jurisdiction, p.status): p.count for p in pairs}
    assert sum(n for (s, d, _), n in found.items() if (s, d) == ("SN", "NG")) == expected_sn_ng
    assert found[("SN", "FR", "approved")] == 1 + sum(
        1 for n in range(3000) if n % 2 == 0 and n % 5 == 0 and n % 3 == 0
    )


def test_the_market_counts_datasets_negotiations_and_agreements(client, federation):
    from tests.broker.test_catalog import measure, publish
    from tests.broker.test_negotiations import agree, request

    listed = publish(federation).json()["id"]
    measure(federation, listed)
    withdrawn = publish(federation, title="old").json()["id"]
    client.delete(
        f"/v1/catalog/datasets/{withdrawn}", headers=bearer(federation.keys["sn-hospital"])
    )
    request(federation, listed)  # REQUESTED
    request(federation, listed, purpose="marketing")  # TERMINATED at once
    agreement = agree(federation, listed)["agreement_id"]  # FINALIZED
    found = client.get("/v1/federation/overview", headers=ADMIN).json()["market"]
    assert (found["datasets_listed"], found["datasets_measured"], found["datasets_withdrawn"]) == (
        1,
        1,
        1,
    )
    assert found["negotiations_open"] == 1
    assert {s: n for s, n in found["negotiations"].items() if n} == {
        "REQUESTED": 1,
        "FINALIZED": 1,
        "TERMINATED": 1,
    }
    assert (found["agreements_active"], found["agreements_suspended"]) == (1, 0)
    assert agreement
    catalog = client.get("/v1/catalog", headers=bearer(federation.keys["fr-research"])).json()
    assert catalog["dcat:dataset"][0]["fedbroker:providerHealth"] == "unknown"  # never checked

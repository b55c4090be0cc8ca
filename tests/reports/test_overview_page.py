"""The federation overview's page: the figures of the JSON answer, drawn and tabled, escaped."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from broker.federation.overview import DayRow, DeliveryRow, MemberRow, OverviewRows, PairRow
from broker.federation.overview import overview as build
from broker.reports import overview_page
from broker.reports.overview import verdict
from tests.reports.conftest import HOSTILE
from tests.reports.test_page import SVG, Page, bar_ids, svgs

pytest.importorskip("matplotlib", reason="the 'reports' extra (matplotlib) is not installed")
pytest.importorskip("jinja2", reason="the 'reports' extra (Jinja2) is not installed")

NOW = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
SINCE = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)


def federation(days: int = 7, **changes) -> dict:
    rows = OverviewRows(
        members=[
            MemberRow("sn-hospital", "Hôpital", "SN", "active", "up", SINCE, NOW),
            MemberRow("fr-lab", HOSTILE, "FR", "active", "down", SINCE, NOW, HOSTILE),
        ],
        pairs=[
            PairRow("SN", "FR", "approved", 5),
            PairRow("SN", "FR", "rejected", 2),
            PairRow("FR", "SN", "anonymization_required", 1),
        ],
        days=[
            DayRow(date(2026, 11, 27), "approved", 3),
            DayRow(date(2026, 11, 25), "rejected", 2),
        ],
        deliveries=[
            DeliveryRow("delivered", False, 4),
            DeliveryRow("pending", True, 1),
            DeliveryRow("failed", False, 1),
        ],
    )
    return build(rows, now=NOW, days=days).model_dump(mode="json") | changes


def table(page: str, table_id: str) -> list[list[str]]:
    """The rows of a table of the page, cells as text."""
    start = page.index(f'<table id="{table_id}">')
    body = page[start : page.index("</table>", start)]
    rows = []
    for chunk in body.split("<tr>")[1:]:
        cells = [
            c.split(">", 1)[1].split("</t", 1)[0].strip()
            for c in chunk.split("<t")[1:]
            if c[:1] in "dh"
        ]
        rows.append(cells)
    return rows


def test_the_verdict_says_who_is_down_and_what_waits():
    found = verdict(federation())
    assert found.headline == "2 active members: 1 up, 1 down"
    assert found.tone == "bad"
    assert found.sentences == [
        "Down (their deliveries wait): fr-lab.",
        "1 delivery is held for members that are down: sent once they are up, no attempt "
        "spent meanwhile.",
        "1 delivery failed: the source or an admin can redeliver "
        "(POST /v1/transfers/{id}/redeliver).",
        "5 decisions over the last 7 days: 3 approved, 0 anonymization required, 2 rejected.",
    ]
    calm = federation(member_health={"up": 2, "down": 0, "unknown": 0}, members=[])
    calm["deliveries"] = {**calm["deliveries"], "failed": 0, "held": 0}
    assert verdict(calm).tone == "good"


def test_every_figure_of_the_answer_is_on_the_page_and_in_its_tables():
    page = overview_page(federation())
    assert table(page, "members-table")[1:] == [  # by id
        ["fr-lab", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;", "FR", "active", "down",
         "2026-11-26 08:00 UTC", "2026-11-27 15:00 UTC",
         "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"],
        ["sn-hospital", "Hôpital", "SN", "active", "up", "2026-11-26 08:00 UTC",
         "2026-11-27 15:00 UTC", ""],
    ]  # fmt: skip
    assert table(page, "pairs-table")[1:] == [
        ["SN → FR", "5", "0", "2", "7"],
        ["FR → SN", "0", "1", "0", "1"],
    ]
    decisions = table(page, "decisions-table")
    assert len(decisions) == 1 + 7 + 1  # header, every day of the window, the total
    assert decisions[3] == ["2026-11-23", "0", "0", "0", "0"]
    assert decisions[5] == ["2026-11-25", "0", "0", "2", "2"]
    assert decisions[-1] == ["total", "3", "0", "2", "5"]
    assert table(page, "deliveries-table")[1:] == [
        ["delivered", "4"],
        ["pending", "0"],
        ["held (member down)", "1"],
        ["failed", "1"],
        ["total", "6"],
    ]
    assert "<script>" not in page and "<script" not in page.replace("&lt;script", "")


def test_the_plots_draw_each_count_as_a_bar_of_its_height():
    charts = svgs(overview_page(federation()))
    assert set(charts) == {"decisions", "pairs", "deliveries"}
    # one bar per day and status; a bar of 0 has no height
    assert len(bar_ids(charts["decisions"], "decisions-approved-")) == 7
    heights = {
        g.get("id"): _height(g)
        for g in charts["decisions"].iter(f"{SVG}g")
        if (g.get("id") or "").startswith("decisions-") and g.get("id").split("-")[-1].isdigit()
    }
    approved_today, rejected_25th = heights["decisions-approved-6"], heights["decisions-rejected-4"]
    assert approved_today > 0 and rejected_25th > 0
    assert approved_today / rejected_25th == pytest.approx(3 / 2, rel=0.02)
    assert heights["decisions-approved-0"] == 0
    assert len(bar_ids(charts["pairs"], "pairs-approved-")) == 2
    assert len(bar_ids(charts["deliveries"], "deliveries-held-")) == 4


def test_a_year_of_days_keeps_its_labels_readable():
    page = overview_page(federation(days=366))
    chart = svgs(page)["decisions"]
    labels = [t for t in chart.itertext() if t.strip()[:2].isdigit() and "-" in t]
    assert 12 <= len(labels) <= 31


def test_an_empty_federation_renders_without_plots_of_nothing():
    empty = build(OverviewRows(), now=NOW, days=3).model_dump(mode="json")
    page = overview_page(empty)
    assert "0 active members: 0 up" in page
    assert "No transfer yet." in page
    assert set(svgs(page)) == {"decisions"}  # three days of zeros; nothing else to draw
    Page(page)  # parses


def test_a_section_the_answer_lacks_is_left_out():
    partial = {k: v for k, v in federation().items() if k != "transfers_by_jurisdiction_pair"}
    page = overview_page(partial)
    assert 'id="pairs-title"' not in page and 'id="members-title"' in page


def _height(group) -> float:
    """The height of a bar: the path of its rectangle, from its vertices' y."""
    path = next(group.iter(f"{SVG}path"))
    numbers = [float(n) for n in path.get("d").replace("M", " ").replace("L", " ").replace(
        "z", " ").split()]  # fmt: skip
    ys = numbers[1::2]
    return round(max(ys) - min(ys), 3)

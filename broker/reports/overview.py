"""The federation overview as a page: ``overview_page(overview)`` renders the JSON answer of
``GET /v1/federation/overview`` (pure: a dict in, an HTML string out).

The same figures as the JSON, each plot with its table: the members with their health, the
decisions per day, per pair of jurisdictions, and the deliveries per state. One self-contained
page, as the reports are (inline SVG and CSS, no script, nothing fetched); every value is
escaped by Jinja2's autoescaping and matplotlib's SVG writer. A section the answer lacks is left
out, so an overview with more sections still renders, and a new section is a block of the
template fed by a function here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from broker.reports.page import environment, require
from broker.reports.verdict import Verdict

DECISIONS = {  # status -> (label, colour)
    "approved": ("approved", "#2e8b57"),
    "anonymization_required": ("anonymization required", "#d68910"),
    "rejected": ("rejected", "#c0392b"),
}
DELIVERIES = {
    "delivered": ("delivered", "#2e8b57"),
    "pending": ("pending", "#3b6ea8"),
    "held": ("held (member down)", "#d68910"),
    "failed": ("failed", "#c0392b"),
}
MAX_PAIRS_DRAWN = 40  # the busiest pairs; the table lists them all


def overview_page(overview: Mapping[str, Any]) -> str:
    """The HTML page of a federation overview (the JSON answer, as a dict)."""
    charts = require()
    over_time = overview.get("decisions_over_time")
    context = {
        "title": "Federation overview",
        "subtitle": f"as of {_moment(overview.get('generated_at'))}",
        "verdict": verdict(overview),
        "members": _members(overview.get("members")),
        "decisions": _decisions(over_time, charts) if over_time else None,
        "pairs": _pairs(overview.get("transfers_by_jurisdiction_pair"), charts),
        "deliveries": _deliveries(overview.get("deliveries"), charts),
        "market": _market(overview.get("market")),
    }
    template = environment().get_template("overview.html")
    return template.render(**context, tone=context["verdict"].tone)


def verdict(overview: Mapping[str, Any]) -> Verdict:
    """The headline: how many members are up, down, unknown; then what needs an admin.

    Examples
    --------
    >>> verdict({"member_health": {"up": 2, "down": 1, "unknown": 0},
    ...          "members": [{"id": "fr-lab", "status": "active", "health": {"state": "down"}}],
    ...          "deliveries": {"held": 3, "failed": 0}}).headline
    '3 active members: 2 up, 1 down'
    """
    health = overview.get("member_health") or {}
    up, down, unknown = (health.get(k, 0) for k in ("up", "down", "unknown"))
    parts = [f"{up} up"] + [f"{n} {k}" for n, k in ((down, "down"), (unknown, "unknown")) if n]
    total = up + down + unknown
    headline = f"{total} active member{'s' if total != 1 else ''}: " + ", ".join(parts)
    sentences = []
    members = overview.get("members") or []
    down_ids = [
        m["id"]
        for m in members
        if m.get("status") == "active" and (m.get("health") or {}).get("state") == "down"
    ]
    if down_ids:
        sentences.append("Down (their deliveries wait): " + ", ".join(down_ids) + ".")
    deliveries = overview.get("deliveries") or {}
    if deliveries.get("held"):
        sentences.append(
            f"{deliveries['held']:,} deliver{'ies are' if deliveries['held'] != 1 else 'y is'} "
            "held for members that are down: sent once they are up, no attempt spent meanwhile."
        )
    if deliveries.get("failed"):
        sentences.append(
            f"{deliveries['failed']:,} deliver{'ies' if deliveries['failed'] != 1 else 'y'} "
            "failed: the source or an admin can redeliver (POST /v1/transfers/{id}/redeliver)."
        )
    over_time = overview.get("decisions_over_time")
    if over_time:
        counts = over_time["decisions"]
        sentences.append(
            f"{counts['total']:,} decision{'s' if counts['total'] != 1 else ''} over the last "
            f"{over_time['days']} day{'s' if over_time['days'] != 1 else ''}: "
            + ", ".join(f"{counts[s]:,} {label}" for s, (label, _) in DECISIONS.items())
            + "."
        )
    tone = "bad" if down else "warn" if unknown or deliveries.get("failed") else "good"
    return Verdict(headline, tone, sentences)


def _members(members: Sequence[Mapping[str, Any]] | None) -> list[tuple] | None:
    if members is None:
        return None
    return [
        (
            m["id"],
            m["name"],
            m["jurisdiction"],
            m["status"],
            (m.get("health") or {}).get("state", "unknown"),
            _moment((m.get("health") or {}).get("since")),
            _moment((m.get("health") or {}).get("checked_at")) or "never",
            (m.get("health") or {}).get("reason") or "",
        )
        for m in members
    ]


def _decisions(over_time: Mapping[str, Any], charts) -> dict[str, Any]:
    days = over_time["per_day"]
    labels = [day["day"][5:] for day in days]  # MM-DD; the table has the year
    series = {s: [day["decisions"][s] for day in days] for s in DECISIONS}
    return {
        "days": over_time["days"],
        "svg": charts.stacked(
            "decisions",
            labels,
            series,
            {s: colour for s, (_, colour) in DECISIONS.items()},
            names={s: label for s, (label, _) in DECISIONS.items()},
            axis="decisions per day (UTC)",
        ),
        "rows": [_counts_row(day["day"], day["decisions"]) for day in days],
        "total": _counts_row("total", over_time["decisions"]),
    }


def _pairs(pairs: Sequence[Mapping[str, Any]] | None, charts) -> dict[str, Any] | None:
    if pairs is None:
        return None
    rows = [
        _counts_row(
            f"{p['source_jurisdiction']} → {p['destination_jurisdiction'] or '?'}", p["decisions"]
        )
        for p in pairs
    ]
    drawn = pairs[:MAX_PAIRS_DRAWN]  # the answer lists the busiest first
    svg = None
    if drawn:
        svg = charts.stacked(
            "pairs",
            [row[0] for row in rows[: len(drawn)]],
            {s: [p["decisions"][s] for p in drawn] for s in DECISIONS},
            {s: colour for s, (_, colour) in DECISIONS.items()},
            names={s: label for s, (label, _) in DECISIONS.items()},
            axis="decisions",
            horizontal=True,
        )
    return {"svg": svg, "rows": rows, "drawn": len(drawn)}


def _deliveries(deliveries: Mapping[str, Any] | None, charts) -> dict[str, Any] | None:
    if deliveries is None:
        return None
    svg = None
    if deliveries.get("total"):
        svg = charts.stacked(
            "deliveries",
            [label for label, _ in DELIVERIES.values()],
            {
                state: [deliveries.get(state, 0) if s == state else 0 for s in DELIVERIES]
                for state in DELIVERIES
            },
            {state: colour for state, (_, colour) in DELIVERIES.items()},
            axis="deliveries",
            legend=False,  # one bar per state, named on its axis
        )
    rows = [(label, f"{deliveries.get(state, 0):,}") for state, (label, _) in DELIVERIES.items()]
    return {"svg": svg, "rows": [*rows, ("total", f"{deliveries.get('total', 0):,}")]}


def _market(market: Mapping[str, Any] | None) -> list[tuple[str, str]] | None:
    """The data market's counts as (what, how many) rows."""
    if market is None:
        return None
    rows = [
        ("datasets in the catalog", market.get("datasets_listed", 0)),
        ("of them measured by the broker", market.get("datasets_measured", 0)),
        ("datasets withdrawn", market.get("datasets_withdrawn", 0)),
        ("negotiations open", market.get("negotiations_open", 0)),
        *(
            (f"negotiations {state}", n)
            for state, n in (market.get("negotiations") or {}).items()
            if n
        ),
        ("agreements in force", market.get("agreements_active", 0)),
        ("agreements suspended by an F-SLA change", market.get("agreements_suspended", 0)),
    ]
    return [(label, f"{n:,}") for label, n in rows]


def _pair(pair: Mapping[str, Any]) -> str:
    return f"{pair['source_jurisdiction']} → {pair['destination_jurisdiction'] or '?'}"


def _counts_row(label: str, counts: Mapping[str, int]) -> tuple:
    return (label, *(f"{counts[s]:,}" for s in DECISIONS), f"{counts['total']:,}")


def _moment(value: str | None) -> str:
    """An ISO timestamp as a person reads it: ``2026-11-27 09:30 UTC``."""
    if not value:
        return ""
    return value[:16].replace("T", " ") + " UTC"

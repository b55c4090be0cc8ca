"""The HTML page of a report: the verdict in words, then the plots, each with its figures.

``analysis_page(report)`` renders a measurement report (``AnalysisReport.as_dict()``, what
``fedbroker analyze --format json`` prints); ``transfer_page(transfer)`` a transfer answer
(``TransferRead`` as JSON), adding the decision, and for an anonymized transfer the figures
before and after and the information kept per attribute. Both return one self-contained HTML
string: inline SVG and CSS, no script, nothing fetched (a Content-Security-Policy in the page says
so to the browser too). Every value from the data (column names, values, details) is escaped by
Jinja2's autoescaping; matplotlib escapes the text it writes in the SVG.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

from broker.anonymize.steps import shown_parameters
from broker.fsla.stored import RemedyAfter, RemedyStep, StoredRemedy
from broker.reports import figures
from broker.reports.verdict import Verdict, analysis_verdict, percent, transfer_verdict

EXTRA = "reports"
INSTALL_HINT = f"pip install 'fedbroker[{EXTRA}]'"
# The headers every page is served with: no script, nothing fetched, not framed, not cached (a
# report describes personal data; the overview, a federation's members and traffic).
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# Most bars in a per-attribute plot (a dataset may have 1,000 columns); the tables list them all.
MAX_ATTRIBUTES_DRAWN = 50


class ReportUnavailable(RuntimeError):
    """The HTML report needs the ``reports`` extra (matplotlib and Jinja2)."""


def analysis_page(report: Mapping[str, Any], *, title: str = "dataset") -> str:
    """The HTML report of a measured dataset (no policy: the verdict describes, never judges)."""
    charts = require()
    context = _data_sections(report, charts)
    return _render(
        title=f"Privacy report: {title}",
        subtitle=_shape(report),
        verdict=analysis_verdict(report),
        **context,
    )


def transfer_page(transfer: Mapping[str, Any]) -> str:
    """The HTML report of a transfer decision, as the caller may see it (a destination's view
    carries no report: its page has the decision and no figures of the upload)."""
    charts = require()
    report = transfer.get("report")
    context = _data_sections(report, charts) if report else {}
    remedy = StoredRemedy.of(transfer.get("remedy"))
    before_after = _before_after(transfer, remedy, charts) if remedy else None
    loss = remedy and remedy.information_loss
    utility = None
    if loss and loss.attribute_utility_percent:
        per_attribute = loss.attribute_utility_percent
        drawn = _largest(list(per_attribute.items()), lambda item: -item[1])  # least kept
        utility = {
            "svg": charts.utility(dict(drawn)),
            "drawn": len(drawn),
            "overall": f"{loss.utility_percent:.1f} %",
            "rows": [(name, f"{value:.1f} %") for name, value in per_attribute.items()],
            "suppressed_rows": loss.suppressed_rows,
            "suppressed_cells": percent(loss.suppressed_cell_share),
            "applied": remedy.applied,
        }
    versions = ", ".join(f"{j} v{v}" for j, v in (transfer.get("policy_versions") or {}).items())
    dataset = transfer.get("dataset") or {}
    facts = [
        ("transfer", transfer.get("id") or "dry run"),
        ("from", transfer.get("source")),
        ("to", transfer.get("destination")),
        ("purpose", transfer.get("purpose")),
        ("decided", transfer.get("created_at")),
        ("policies", versions or "none"),
        ("delivery", (transfer.get("delivery") or {}).get("status", "not applicable")),
    ]
    return _render(
        title=f"Transfer report: {transfer.get('source')} to {transfer.get('destination')}",
        subtitle=_shape(report) if report else _dataset_shape(dataset),
        verdict=transfer_verdict(transfer),
        transfer_facts=facts,
        before_after=before_after,
        utility=utility,
        **context,
    )


def _data_sections(report: Mapping[str, Any], charts) -> dict[str, Any]:
    qi = report.get("quasi_identifiers")
    context: dict[str, Any] = {"attributes": _attributes(report, charts)}
    if report.get("suda"):
        context["suda"] = _suda(report["suda"])
    if qi is None:
        return context
    histogram = figures.histogram_of(qi)
    bars = figures.class_size_bars(histogram)
    risk = qi["prosecutor_risk"]
    context["quasi_identifiers"] = {
        "names": qi["attributes"],
        "facts": [
            ("k (smallest class)", f"{qi['k']:,}"),
            ("equivalence classes", f"{qi['equivalence_classes']:,}"),
            ("largest risk of a record", percent(risk["max"])),
            ("average risk over records", percent(risk["average"])),
            ("records unique on the quasi-identifiers", percent(risk["unique_share"])),
        ],
    }
    context["class_sizes"] = {
        "svg": charts.class_sizes(bars),
        "rows": [(bar.label, f"{int(bar.value):,}", f"{bar.records:,}") for bar in bars],
        "grouped": len(bars) < len(histogram),
    }
    risk_bars = figures.risk_bars(histogram)
    context["risk"] = {
        "svg": charts.risk_per_record({"": risk_bars}),
        "rows": [(bar.label, f"{int(bar.value):,}") for bar in risk_bars],
    }
    return context


def _suda(suda: Mapping[str, Any]) -> dict[str, Any]:
    """The riskiest records by DIS-SUDA, as sdcMicro's report lists them, and each key's share."""
    return {
        "names": suda["quasi_identifiers"],
        "facts": [
            ("records with special uniques", f"{suda['records_with_msus']:,}"),
            ("largest SUDA score", f"{suda['max_score']:.6g}"),
            ("largest DIS-SUDA score", f"{suda['max_dis_score']:.4g}"),
            ("DIS sampling fraction", f"{suda['dis_fraction']:g}"),
            ("largest MSU searched", f"{suda['max_msu_size']} keys"),
        ],
        "riskiest": [
            (f"{r['row']:,}", f"{r['msus']:,}", f"{r['score']:.6g}", f"{r['dis_score']:.4g}")
            for r in suda["riskiest"]
        ],
        "contributions": [
            (name, f"{share:.1f} %") for name, share in suda["attribute_contributions"].items()
        ],
    }


def _attributes(report: Mapping[str, Any], charts) -> dict[str, Any] | None:
    attributes = report.get("attributes") or []
    if not attributes:
        return None
    drawn = _largest(attributes, lambda a: a["qir_risk_percent"])
    return {
        "svg": charts.attribute_risk(drawn),
        "drawn": len(drawn),
        "rows": [
            (
                a["name"],
                f"{a['categories']:,}",
                f"{a['qir_risk_percent']:.3g} %",
                a.get("qir_class", ""),
                a["mmaq"],
                f"{a['mmaq_index']:.4f}",
                charts.CLASS_LABELS.get(a["class"], a["class"]),
                a.get("direct_identifier") or "",
            )
            for a in attributes
        ],
    }


def _before_after(transfer: Mapping[str, Any], remedy: StoredRemedy, charts):
    """Rows, k, classes and risk before and after the remedy; for an applied remedy the
    transfer's report is the after and ``remedy.before.report`` the before; for one only
    offered, the report is the before and ``remedy.after`` the after."""
    after = remedy.after
    if after is None:
        return None
    if remedy.applied:
        before_report = remedy.before.report.model_dump(mode="json") if remedy.before else {}
        after_report = transfer.get("report") or {}
    else:
        before_report, after_report = transfer.get("report") or {}, {}
    before = _summary(before_report)
    if not before:
        return None
    measured_after = _summary(after_report) or _summary_of_after(after)
    rows = [
        ("records", f"{before['rows']:,}", f"{measured_after['rows']:,}"),
        ("k (smallest class)", f"{before['k']:,}", f"{measured_after['k']:,}"),
        ("equivalence classes", f"{before['classes']:,}", f"{measured_after['classes']:,}"),
        ("largest risk of a record", percent(before["max"]), percent(measured_after["max"])),
        ("average risk", percent(before["average"]), percent(measured_after["average"])),
    ]
    svg = None
    after_qi = after_report.get("quasi_identifiers")
    before_qi = before_report.get("quasi_identifiers")
    if before_qi and after_qi:
        before_hist = figures.histogram_of(before_qi)
        after_hist = figures.histogram_of(after_qi)
        bands = max(figures.band_of(max(h)) for h in (before_hist, after_hist) if h) + 1
        svg = charts.risk_per_record(
            {
                "before": figures.risk_bars(before_hist, bands),
                "after": figures.risk_bars(after_hist, bands),
            },
            chart="compare",
        )
    steps = [_step_text(step) for step in remedy.steps]
    return {"rows": rows, "svg": svg, "applied": remedy.applied, "steps": steps}


def _summary(report: Mapping[str, Any]) -> dict[str, Any] | None:
    qi = report.get("quasi_identifiers")
    if not qi:
        return None
    risk = qi["prosecutor_risk"]
    return {
        "rows": report["rows"],
        "k": qi["k"],
        "classes": qi["equivalence_classes"],
        "max": risk["max"],
        "average": risk["average"],
    }


def _summary_of_after(after: RemedyAfter) -> dict[str, Any]:
    """The remedy's ``after`` (rows, k, classes): the risks follow (max 1/k, average
    classes / rows)."""
    rows, k, classes = after.rows, after.k or 0, after.equivalence_classes or 0
    return {
        "rows": rows,
        "k": k,
        "classes": classes,
        "max": 1 / k if k else 0.0,
        "average": classes / rows if rows else 0.0,
    }


def _largest(items: list, key) -> list:
    """At most :data:`MAX_ATTRIBUTES_DRAWN` items, those with the largest ``key``, in their
    order."""
    if len(items) <= MAX_ATTRIBUTES_DRAWN:
        return items
    kept = sorted(range(len(items)), key=lambda i: key(items[i]), reverse=True)
    return [items[i] for i in sorted(kept[:MAX_ATTRIBUTES_DRAWN])]


def _step_text(step: RemedyStep) -> str:
    shown = shown_parameters(step.parameters)
    column = f" {step.column}" if step.column else ""
    text = f"{step.method}{column}" + (f" ({shown})" if shown else "")
    return text + (f": {step.reason}" if step.reason else "")


def _shape(report: Mapping[str, Any]) -> str:
    attributes = len(report.get("attributes") or [])
    return f"{report.get('rows', 0):,} records, {attributes} attributes"


def _dataset_shape(dataset: Mapping[str, Any]) -> str:
    rows = dataset.get("delivered_rows") or dataset.get("rows") or 0
    columns = dataset.get("delivered_columns") or dataset.get("columns") or 0
    return f"{rows:,} records, {columns} attributes delivered"


def require():
    """The plotting module, or :class:`ReportUnavailable` naming the extra to install."""
    try:
        import_module("jinja2")
        return import_module("broker.reports.charts")
    except ImportError as error:
        raise ReportUnavailable(
            f"The HTML report needs matplotlib and Jinja2 ({error.name} is not installed): "
            f"{INSTALL_HINT}"
        ) from None


def environment():
    """The Jinja2 environment of the pages: autoescaping on, the ``svg`` filter for our charts."""
    import jinja2
    from markupsafe import Markup

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("broker.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["svg"] = Markup  # our charts' SVG; its text is escaped by matplotlib
    return environment


def _render(**context: Any) -> str:
    defaults = {
        "quasi_identifiers": None,
        "class_sizes": None,
        "risk": None,
        "attributes": None,
        "suda": None,
        "transfer_facts": None,
        "before_after": None,
        "utility": None,
    }
    verdict: Verdict = context["verdict"]
    template = environment().get_template("report.html")
    return template.render(**(defaults | context), tone=verdict.tone)

"""The report's plots, drawn with matplotlib (Agg, no pyplot) and returned as inline SVG.

Text stays text (``svg.fonttype: none``): labels are searchable, selectable and escaped by
matplotlib's SVG writer (``<`` becomes ``&lt;``), and mathtext is off, so a ``$`` in a column
name is printed as written. Each bar is an SVG group whose id names what it stands for
(``class-sizes-size-3``, ``risk-band-0``, ``attributes-bar-2``); every other id matplotlib
writes is prefixed with the chart's name too, so several charts share one page without clashes.

matplotlib's settings are global: building and saving a figure is done under one lock.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Mapping, Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from broker.reports.figures import Bar

matplotlib.use("Agg")  # never a window, whatever the environment says

BLUE, RED, AMBER, GREEN, GREY = "#3b6ea8", "#c0392b", "#d68910", "#2e8b57", "#9aa5b1"
CLASS_COLOURS = {"identifier": RED, "quasi_identifier": AMBER, "anonymous": GREEN}
CLASS_LABELS = {
    "identifier": "identifier",
    "quasi_identifier": "quasi-identifier",
    "anonymous": "anonymous",
}
_SETTINGS = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "svg.hashsalt": "fedbroker",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
MAX_TICKS = 31  # labels on a horizontal axis (a year of days shows one label a fortnight)
_LOCK = threading.Lock()
_ID = re.compile(r'\bid="([^"]+)"')
_REFERENCE = re.compile(r'(url\(#|href="#)([^")]+)')


def class_sizes(bars: Sequence[Bar]) -> str:
    """Number of equivalence classes per class size; classes of one record in red."""

    def draw(figure: Figure) -> None:
        axes = figure.add_subplot()
        positions = range(len(bars))
        colours = [RED if bar.label == "1" else BLUE for bar in bars]
        drawn = axes.bar(positions, [bar.value for bar in bars], color=colours, width=0.7)
        _name(drawn, bars)
        axes.set_xticks(list(positions), [bar.label for bar in bars])
        _rotate_if_crowded(axes, bars)
        _keep_bars_narrow(axes, len(bars))
        axes.set_xlabel("class size (records sharing all quasi-identifier values)")
        axes.set_ylabel("number of classes")
        axes.yaxis.get_major_locator().set_params(integer=True)

    return _svg("class-sizes", draw, (7, 3.2))


def risk_per_record(series: Mapping[str, Sequence[Bar]], chart: str = "risk") -> str:
    """Records per band of prosecutor risk; one series (``{"": bars}``) or several side by side
    (``{"before": ..., "after": ...}``); ``chart`` names the SVG (its id and its ids' prefix)."""
    names = list(series)
    colours = [GREY, BLUE] if len(names) == 2 else [BLUE]

    def draw(figure: Figure) -> None:
        axes = figure.add_subplot()
        labels = list(series[names[0]])
        width = 0.8 / len(names)
        for number, name in enumerate(names):
            offset = (number - (len(names) - 1) / 2) * width
            bars = series[name]
            colour = colours[number % len(colours)]
            drawn = axes.bar(
                [i + offset for i in range(len(bars))],
                [bar.value for bar in bars],
                width=width * 0.95,
                # one series: unique records (the first band) in red, as in the class sizes
                color=[RED if i == 0 and len(names) == 1 else colour for i in range(len(bars))],
                label=name or None,
            )
            _name(drawn, bars, prefix=f"{name}-" if name else "")
        axes.set_xticks(list(range(len(labels))), [bar.label for bar in labels])
        _keep_bars_narrow(axes, len(labels))
        axes.set_xlabel("risk of re-identification of a record (1 / its class size)")
        axes.set_ylabel("number of records")
        axes.yaxis.get_major_locator().set_params(integer=True)
        if len(names) > 1:
            axes.legend(frameon=False)

    return _svg(chart, draw, (7, 3.2))


def attribute_risk(attributes: Sequence[Mapping]) -> str:
    """Each attribute's QIR risk (distinct values per 100 records), coloured by Mmaq class."""

    def draw(figure: Figure) -> None:
        axes = figure.add_subplot()
        positions = list(range(len(attributes)))[::-1]  # first attribute on top
        values = [float(a["qir_risk_percent"]) for a in attributes]
        colours = [CLASS_COLOURS.get(a.get("class"), GREY) for a in attributes]
        drawn = axes.barh(positions, values, color=colours, height=0.7)
        for number, patch in enumerate(drawn):
            patch.set_gid(f"bar-{number}")
        axes.bar_label(drawn, fmt="%.3g %%", padding=3)
        axes.set_yticks(positions, [_short(str(a["name"])) for a in attributes])
        axes.set_xlim(0, 115)
        axes.set_xticks([0, 20, 40, 60, 80, 100])
        axes.set_xlabel("QIR risk, % (distinct values per 100 records)")
        present = [c for c in CLASS_COLOURS if any(a.get("class") == c for a in attributes)]
        axes.legend(
            handles=[Patch(color=CLASS_COLOURS[c], label=CLASS_LABELS[c]) for c in present],
            title="Mmaq class",
            frameon=False,
            loc="upper left",
            bbox_to_anchor=(1.01, 1),
        )

    return _svg("attributes", draw, (7, 0.9 + 0.32 * max(len(attributes), 2)))


def utility(per_attribute: Mapping[str, float]) -> str:
    """Information kept per attribute (non-uniform entropy), in percent."""
    names = list(per_attribute)

    def draw(figure: Figure) -> None:
        axes = figure.add_subplot()
        positions = list(range(len(names)))[::-1]
        drawn = axes.barh(positions, [per_attribute[n] for n in names], color=GREEN, height=0.7)
        for number, patch in enumerate(drawn):
            patch.set_gid(f"bar-{number}")
        axes.bar_label(drawn, fmt="%.1f %%", padding=3)
        axes.set_yticks(positions, [_short(str(n)) for n in names])
        axes.set_xlim(0, 115)
        axes.set_xticks([0, 20, 40, 60, 80, 100])
        axes.set_xlabel("information kept, % (non-uniform entropy)")

    return _svg("utility", draw, (7, 0.9 + 0.32 * max(len(names), 2)))


def stacked(
    chart: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    colours: Mapping[str, str],
    *,
    axis: str,
    names: Mapping[str, str] | None = None,
    horizontal: bool = False,
    legend: bool = True,
) -> str:
    """Bars stacked by series (``{"approved": [per label...], ...}``, keys fit for an id), one
    bar per label; each bar is an SVG group ``<chart>-<series>-<i>``. ``names``: the series as
    the legend writes them; ``axis`` names the value axis. Horizontal bars list the first label
    on top."""

    def draw(figure: Figure) -> None:
        axes = figure.add_subplot()
        positions = list(range(len(labels)))[::-1] if horizontal else list(range(len(labels)))
        base = [0.0] * len(labels)
        for name, values in series.items():
            values = [float(v) for v in values]
            label = (names or {}).get(name, name)
            if horizontal:
                drawn = axes.barh(
                    positions, values, left=base, height=0.7, color=colours[name], label=label
                )
            else:
                drawn = axes.bar(
                    positions, values, bottom=base, width=0.8, color=colours[name], label=label
                )
            for number, patch in enumerate(drawn):
                patch.set_gid(f"{name}-{number}")
                # Bars lie inside the axes: the layout need not measure each of them (with a
                # year of days, three series, that was a quarter of the page's time).
                patch.set_in_layout(False)
            base = [b + v for b, v in zip(base, values, strict=True)]
        ticks = [_short(str(label)) for label in labels]
        if horizontal:
            axes.set_yticks(positions, ticks)
            axes.set_xlabel(axis)
            axes.xaxis.get_major_locator().set_params(integer=True)
        else:
            step = -(-len(labels) // MAX_TICKS)  # a label every step-th bar at most
            axes.set_xticks(positions[::step], ticks[::step])
            _rotate_if_crowded(axes, ticks[::step])
            _keep_bars_narrow(axes, len(labels))
            axes.set_ylabel(axis)
            axes.yaxis.get_major_locator().set_params(integer=True)
        if legend and len(series) > 1:
            axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))

    height = 0.9 + 0.32 * max(len(labels), 2) if horizontal else 3.2
    return _svg(chart, draw, (7, height))


def _name(drawn, bars: Sequence[Bar], prefix: str = "") -> None:
    for patch, bar in zip(drawn, bars, strict=True):
        patch.set_gid(f"{prefix}{bar.key}")


def _rotate_if_crowded(axes, bars: Sequence[Bar]) -> None:
    if len(bars) > 15:
        for label in axes.get_xticklabels():
            label.set_rotation(90)


def _keep_bars_narrow(axes, count: int, least: int = 6) -> None:
    """With few bars, leave room around them rather than stretch each to a block."""
    if count < least:
        pad = (least - count) / 2
        axes.set_xlim(-0.5 - pad, count - 0.5 + pad)


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _svg(chart: str, draw, size: tuple[float, float]) -> str:
    """The figure ``draw`` fills, as an ``<svg>`` element with every id prefixed by ``chart``."""
    with _LOCK, matplotlib.rc_context(_SETTINGS):
        figure = Figure(figsize=size, layout="constrained")
        draw(figure)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    text = out.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    text = _ID.sub(lambda m: f'id="{chart}-{m.group(1)}"', text)
    text = _REFERENCE.sub(lambda m: f"{m.group(1)}{chart}-{m.group(2)}", text)
    return text.replace("<svg ", f'<svg role="img" class="chart" id="{chart}" ', 1)

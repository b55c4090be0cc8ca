"""The numbers each plot draws, computed from the report alone (pure, no plotting library).

- **Class sizes.** An equivalence class is the set of records sharing all their
  quasi-identifier values; ``class_size_histogram`` maps a class size to the number of classes of
  that size. Up to :data:`MAX_BARS` distinct sizes get one bar each; beyond, sizes are grouped in
  powers of two (1, 2, 3-4, 5-8, ...) so that the plot stays readable.
- **Risk per record.** A record in a class of size s is re-identified by a prosecutor (who knows
  the person is in the data and knows their quasi-identifiers) with probability 1/s. Records are
  counted per band of risk: 100 % (unique), 50 %, 33 %, 25 %, then classes of 5-9, 10-19, 20-49,
  50-99 and 100 or more records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MAX_BARS = 40
# Risk bands as ranges of class sizes, inclusive; None: no upper bound.
RISK_BANDS: tuple[tuple[int, int | None], ...] = (
    (1, 1),
    (2, 2),
    (3, 3),
    (4, 4),
    (5, 9),
    (10, 19),
    (20, 49),
    (50, 99),
    (100, None),
)


@dataclass(frozen=True)
class Bar:
    """One bar: its label on the axis, its key (used in the SVG element's id), its height, and
    the records it stands for."""

    label: str
    key: str
    value: float
    records: int = 0


def histogram_of(report_qi: Mapping) -> dict[int, int]:
    """``class_size_histogram`` with integer sizes, in increasing order."""
    histogram = report_qi.get("class_size_histogram") or {}
    return {int(size): int(count) for size, count in sorted(histogram.items(), key=_size)}


def class_size_bars(histogram: Mapping[int, int]) -> list[Bar]:
    """Number of classes per class size: one bar per size, or per power-of-two range of sizes
    when there are more than :data:`MAX_BARS` distinct sizes."""
    sizes = sorted(histogram)
    if len(sizes) <= MAX_BARS:
        return [Bar(str(s), f"size-{s}", histogram[s], s * histogram[s]) for s in sizes]
    bars: dict[tuple[int, int], list[int]] = {}
    for size in sizes:
        classes_records = bars.setdefault(_power_of_two_range(size), [0, 0])
        classes_records[0] += histogram[size]
        classes_records[1] += size * histogram[size]
    return [
        Bar(str(low) if low == high else f"{low}–{high}", f"size-{low}-{high}", count, records)
        for (low, high), (count, records) in bars.items()
    ]


def risk_bars(histogram: Mapping[int, int], bands: int | None = None) -> list[Bar]:
    """Records per band of prosecutor risk (1 / class size); ``bands``: how many bands to show
    (default: up to the band of the largest class)."""
    counts = [0] * len(RISK_BANDS)
    for size, classes in histogram.items():
        counts[band_of(size)] += size * classes
    shown = bands if bands is not None else (band_of(max(histogram)) + 1 if histogram else 1)
    shown = min(shown, len(RISK_BANDS))
    return [Bar(band_label(i), f"band-{i}", counts[i], counts[i]) for i in range(shown)]


def band_of(size: int) -> int:
    """The index in :data:`RISK_BANDS` of a class size."""
    for index, (low, high) in enumerate(RISK_BANDS):
        if size >= low and (high is None or size <= high):
            return index
    raise ValueError(f"a class size is at least 1, got {size}")


def band_label(index: int) -> str:
    """The risk of a band, in percent: ``"100 %"``, ``"11–20 %"``, ``"≤ 1 %"``."""
    low, high = RISK_BANDS[index]
    if high is None:
        return f"≤ {_pct(1 / low)} %"
    if low == high:
        return f"{_pct(1 / low)} %"
    return f"{_pct(1 / high)}–{_pct(1 / low)} %"


def _pct(risk: float) -> str:
    value = 100 * risk
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def _power_of_two_range(size: int) -> tuple[int, int]:
    if size <= 2:
        return size, size
    high = 1 << (size - 1).bit_length()
    return high // 2 + 1, high


def _size(item: tuple[str, int]) -> int:
    return int(item[0])

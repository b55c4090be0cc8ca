"""The numbers behind the plots, from class-size histograms computed by hand."""

import pytest

from broker.reports.figures import (
    MAX_BARS,
    RISK_BANDS,
    band_label,
    band_of,
    class_size_bars,
    histogram_of,
    risk_bars,
)


def test_one_bar_per_class_size_with_its_classes_and_records():
    bars = class_size_bars({1: 1, 2: 3, 3: 1})
    assert [(b.label, b.key, b.value, b.records) for b in bars] == [
        ("1", "size-1", 1, 1),
        ("2", "size-2", 3, 6),
        ("3", "size-3", 1, 3),
    ]


def test_many_class_sizes_are_grouped_by_powers_of_two():
    histogram = {size: 1 for size in range(1, MAX_BARS + 10)}
    bars = class_size_bars(histogram)
    assert [b.label for b in bars][:5] == ["1", "2", "3–4", "5–8", "9–16"]
    assert bars[2].value == 2 and bars[2].records == 3 + 4
    assert sum(b.value for b in bars) == len(histogram)
    assert sum(b.records for b in bars) == sum(histogram)


def test_records_per_risk_band():
    # 1 unique record, 3 classes of 2 (6 records), 1 class of 3, 2 classes of 12 (24 records)
    bars = risk_bars({1: 1, 2: 3, 3: 1, 12: 2})
    assert [(b.label, b.value) for b in bars] == [
        ("100 %", 1),
        ("50 %", 6),
        ("33 %", 3),
        ("25 %", 0),
        ("11–20 %", 0),
        ("5.3–10 %", 24),
    ]
    assert len(risk_bars({1: 1}, bands=4)) == 4


@pytest.mark.parametrize(
    ("size", "band"), [(1, 0), (4, 3), (5, 4), (9, 4), (10, 5), (99, 7), (100, 8), (10**9, 8)]
)
def test_every_class_size_has_one_band(size, band):
    assert band_of(size) == band


def test_band_labels_and_a_size_of_zero():
    assert [band_label(i) for i in range(len(RISK_BANDS))][-2:] == ["1–2 %", "≤ 1 %"]
    with pytest.raises(ValueError, match="at least 1"):
        band_of(0)


def test_histogram_keys_are_sorted_as_numbers():
    assert list(histogram_of({"class_size_histogram": {"10": 1, "2": 4, "1": 3}})) == [1, 2, 10]

"""The HTML page: its structure, the numbers it shows, and escaping of everything from the data."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

import pandas as pd
import pytest

from broker.reports import ReportUnavailable, analysis_page, require, transfer_page
from broker.reports.page import MAX_ATTRIBUTES_DRAWN as MAX
from tests.reports.conftest import HOSTILE, classes_frame, measured

pytest.importorskip("matplotlib", reason="the 'reports' extra (matplotlib) is not installed")
pytest.importorskip("jinja2", reason="the 'reports' extra (Jinja2) is not installed")

SVG = "{http://www.w3.org/2000/svg}"


class Page(HTMLParser):
    """The page's elements in document order (tag, attributes) and its text per element id."""

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def ids(self) -> list[str]:
        return [attrs["id"] for _, attrs in self.elements if "id" in attrs]

    def position(self, element_id: str) -> int:
        return self.ids().index(element_id)


def svgs(html: str) -> dict[str, ElementTree.Element]:
    """Every inline SVG of the page, parsed as XML (it must be well-formed), by its id."""
    found = {}
    start = html.find("<svg")
    while start != -1:
        end = html.index("</svg>", start) + len("</svg>")
        element = ElementTree.fromstring(html[start:end])
        found[element.get("id")] = element
        start = html.find("<svg", end)
    return found


def bar_ids(svg: ElementTree.Element, prefix: str) -> list[str]:
    return [g.get("id") for g in svg.iter(f"{SVG}g") if (g.get("id") or "").startswith(prefix)]


def texts(svg: ElementTree.Element) -> list[str]:
    return [t.text for t in svg.iter(f"{SVG}text") if t.text]


def test_verdict_comes_first_then_the_plots(classes_report):
    html = analysis_page(classes_report, title="ten.csv")
    page = Page(html)
    assert html.startswith("<!DOCTYPE html>")
    ids = page.ids()
    assert ids.index("verdict") < ids.index("class-sizes") < ids.index("risk")
    assert ids.index("risk") < ids.index("attributes")
    assert len(ids) == len(set(ids)), "an id is used twice on the page"
    text = " ".join(page.text)
    assert "Some records can be singled out" in text
    assert "1 of 10 records (10 %) are unique on age and sex" in text
    assert "at most 100 % and 50 % on average (5 classes over 10 records)" in text
    assert "Privacy report: ten.csv" in text
    # Nothing runs, nothing is fetched: no script and a policy that forbids both.
    assert "<script" not in html.lower()
    assert not [a for _, a in page.elements if "src" in a or a.get("rel") == "stylesheet"]
    csp = next(a for t, a in page.elements if a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp["content"]


def test_class_size_histogram_has_one_bar_per_size_with_its_label(classes_report):
    charts = svgs(analysis_page(classes_report))
    assert set(charts) == {"class-sizes", "risk", "attributes"}
    sizes = charts["class-sizes"]
    assert bar_ids(sizes, "class-sizes-size-") == [
        "class-sizes-size-1",
        "class-sizes-size-2",
        "class-sizes-size-3",
    ]
    assert {"1", "2", "3", "number of classes"} <= set(texts(sizes))
    risk = charts["risk"]
    assert bar_ids(risk, "risk-band-") == ["risk-band-0", "risk-band-1", "risk-band-2"]
    assert {"100 %", "50 %", "33 %"} <= set(texts(risk))


def test_tables_under_the_plots_hold_the_numbers(classes_report):
    text = " ".join(Page(analysis_page(classes_report)).text)
    # class size, classes, records
    for row in (("1", "1", "1"), ("2", "3", "6"), ("3", "1", "3")):
        assert " ".join(row) in " ".join(text.split())
    # k, the QIR risk of age (4 values / 10 records) and its Mmaq
    age = next(a for a in classes_report["attributes"] if a["name"] == "age")
    assert "40 %" in text and age["mmaq"] in text
    assert "k (smallest class)" in text


def test_every_value_from_the_data_is_escaped():
    frame = classes_frame().rename(columns={"sex": HOSTILE, "disease": "$\\frac{1}{0}$ & co"})
    report = measured(frame, ["age", HOSTILE], ["$\\frac{1}{0}$ & co"])
    html = analysis_page(report, title=HOSTILE)
    assert "<script" not in html.lower()
    assert html.count("&lt;script&gt;") >= 3  # title, verdict, table, chart label
    chart = svgs(html)["attributes"]
    assert HOSTILE in texts(chart)  # drawn as text, as written (XML-escaped in the file)
    assert "$\\frac{1}{0}$ &amp; co" in html  # no mathtext: the dollars stay
    assert "$\\frac{1}{0}$ & co" in texts(chart)


def test_without_quasi_identifiers_only_the_attributes_are_drawn():
    report = measured(pd.DataFrame({"a": ["1", "2", "3"], "b": ["x", "x", "x"]}))
    html = analysis_page(report)
    assert set(svgs(html)) == {"attributes"}
    assert "No quasi-identifiers were declared" in html
    assert "a identifies people on their own" in html  # three distinct values in three rows


def test_identifiers_lead_the_verdict_but_declared_sensitive_attributes_do_not():
    frame = classes_frame().assign(nin=[str(i) for i in range(10)], disease=list("abcdefghij"))
    html = analysis_page(measured(frame, ["age", "sex"], ["disease"]))
    assert "Not anonymized" in html
    assert "nin identifies people" in html
    assert "disease identifies" not in html


def _anonymized_transfer() -> dict:
    before = measured(classes_frame(), ["age", "sex"], ["disease"])
    anonymized = classes_frame().assign(age="30-60")
    after = measured(anonymized, ["age", "sex"], ["disease"])  # classes F (5) and M (5)
    return {
        "id": "7c9e",
        "status": "approved",
        "source": "sn-hospital",
        "destination": "fr-research",
        "purpose": "research",
        "created_at": "2026-11-23T10:00:00Z",
        "report": after,
        "rules": [],
        "remedy": {
            "verified": True,
            "applied": True,
            "steps": [
                {"column": None, "method": "mondrian", "parameters": {"k": 3}, "reason": None}
            ],
            "information_loss": {
                "utility_percent": 40.0,
                "attribute_utility_percent": {"age": 0.0, HOSTILE: 80.0},
                "discernibility": 50,
                "suppressed_rows": 0,
                "suppressed_cell_share": 0.25,
            },
            "after": {"rows": 10, "k": 5, "equivalence_classes": 2},
            "before": {"report": before, "rules": []},
        },
        "policy_versions": {"SN": 1, "FR": 2},
        "dataset": {"anonymized": True},
        "delivery": {"status": "pending"},
    }


def test_anonymized_transfer_shows_before_after_and_utility():
    html = transfer_page(_anonymized_transfer())
    page = Page(html)
    text = " ".join(" ".join(page.text).split())
    assert "Approved after anonymization by the broker" in text
    ids = page.ids()
    assert ids.index("verdict") < ids.index("before-after-table") < ids.index("utility-table")
    assert "k (smallest class) 1 5" in text
    assert "equivalence classes 5 2" in text
    assert "largest risk of a record 100 % 20 %" in text
    assert "SN v1, FR v2" in text
    assert "40.0 %" in text and "80.0 %" in text and "25 % of the cells" in text
    charts = svgs(html)
    assert list(charts) == ["class-sizes", "risk", "attributes", "compare", "utility"]
    # records per risk band, before and after side by side, up to the band of the largest class
    assert bar_ids(charts["compare"], "compare-before-") == [
        f"compare-before-band-{i}" for i in range(5)
    ]
    assert bar_ids(charts["compare"], "compare-after-") == [
        f"compare-after-band-{i}" for i in range(5)
    ]
    assert {"before", "after"} <= set(texts(charts["compare"]))
    ids = Page(html).ids()
    assert len(ids) == len(set(ids)), "an id is used twice on the page"
    assert "<script" not in html.lower()
    assert HOSTILE in texts(charts["utility"])


def test_a_remedy_only_offered_compares_with_its_after_figures():
    transfer = _anonymized_transfer()
    remedy = transfer["remedy"]
    transfer |= {
        "status": "anonymization_required",
        "report": remedy.pop("before")["report"],
        "rules": [
            {
                "rule": "min_k",
                "scope": scope,
                "jurisdiction": jurisdiction,
                "attribute": "age, sex",
                "passed": False,
                "detail": f"the quasi-identifiers age, sex give k = 1; {jurisdiction} requires 3",
            }
            for scope, jurisdiction in (("export", "SN"), ("import", "FR"))
        ],
    }
    remedy["applied"] = False
    text = " ".join(" ".join(Page(transfer_page(transfer)).text).split())
    assert "Anonymization required" in text
    # the two failed rules on one subject make one sentence: the decision's summary entry
    assert text.count("Failed: ") == 1
    assert "Rules failed: min_k" in text and "SN (export)" in text and "FR (import)" in text
    assert "To do: " in text
    assert "Remedy (verified on this data): k-anonymize the quasi-identifiers with k = 3" in text
    assert "k (smallest class) 1 5" in text and "average risk 50 % 20 %" in text


def test_the_destination_view_has_the_decision_and_no_figures():
    transfer = _anonymized_transfer() | {"report": None, "remedy": None}
    html = transfer_page(transfer)
    assert svgs(html) == {}
    assert "Approved" in html and "anonymized the data before delivering it" in html
    assert "shown to its source and to admins only" in html


def test_without_matplotlib_the_error_says_what_to_install(monkeypatch, classes_report):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    monkeypatch.delitem(sys.modules, "broker.reports.charts", raising=False)
    with pytest.raises(
        ReportUnavailable, match=r"matplotlib is not installed.*fedbroker\[reports\]"
    ):
        require()
    with pytest.raises(ReportUnavailable):
        analysis_page(classes_report)


def test_a_wide_table_draws_its_riskiest_attributes_and_lists_them_all():
    columns = {f"c{i:03d}": [str(j % (i + 1)) for j in range(120)] for i in range(MAX + 10)}
    report = measured(pd.DataFrame(columns))
    html = analysis_page(report)
    drawn = bar_ids(svgs(html)["attributes"], "attributes-bar-")
    assert len(drawn) == MAX
    assert f"the {MAX} riskiest of {MAX + 10} attributes" in html
    names = texts(svgs(html)["attributes"])
    assert "c000" not in names and "c059" in names  # c000 is constant, c059 most varied
    assert html.count("<td>c0") == MAX + 10

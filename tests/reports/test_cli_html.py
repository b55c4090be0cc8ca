"""``fedbroker analyze --format html``: the page on stdout or in a file."""

from __future__ import annotations

import sys

import pytest

from broker.cli import main
from tests.reports.conftest import HOSTILE, classes_frame

pytest.importorskip("matplotlib", reason="the 'reports' extra (matplotlib) is not installed")
pytest.importorskip("jinja2", reason="the 'reports' extra (Jinja2) is not installed")


def test_analyze_writes_the_html_report_to_a_file(tmp_path, capsys):
    data = tmp_path / "ten.csv"
    classes_frame().rename(columns={"sex": HOSTILE}).to_csv(data, index=False)
    out = tmp_path / "report.html"
    args = ["analyze", str(data), "--qi", f"age,{HOSTILE}", "--sensitive", "disease"]
    assert main([*args, "--format", "html", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Privacy report: ten.csv" in html
    assert 'id="class-sizes-size-2"' in html and "Some records can be singled out" in html
    assert "<script" not in html.lower() and "&lt;script&gt;" in html


def test_analyze_prints_html_to_stdout_and_json_to_a_file(tmp_path, capsys):
    data = tmp_path / "ten.csv"
    classes_frame().to_csv(data, index=False)
    assert main(["analyze", str(data), "--qi", "age,sex", "--format", "html"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("</html>")
    out = tmp_path / "report.json"
    assert main(["analyze", str(data), "--qi", "age,sex", "--format", "json", "-o", str(out)]) == 0
    assert '"class_size_histogram"' in out.read_text()


def test_without_the_reports_extra_the_error_is_one_line_before_measuring(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.delitem(sys.modules, "broker.reports.charts", raising=False)
    missing = tmp_path / "not-read.csv"  # never opened: the extra is checked first
    assert main(["analyze", str(missing), "--format", "html"]) == 2
    error = capsys.readouterr().err
    assert "pip install 'fedbroker[reports]'" in error and "Traceback" not in error
    assert "not-read.csv" not in error

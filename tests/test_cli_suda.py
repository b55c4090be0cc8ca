"""``fedbroker analyze --suda`` as a user runs it: real files, real processes, exit codes.

The expected scores are the figures sdcMicro's own tests state for this table (its SDC guideline
example), checked by hand: M = 4 keys weigh an MSU of 1, 2, 3 keys 3! = 6, 2! = 2, 1! = 1.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from broker.cli import main

GUIDELINE = pd.DataFrame(
    {
        "residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
        "gender": ["F", "F", "F", "M", "F", "M", "F", "M", "F", "F"],
        "education": ["SI", "SI", "PI", "SC", "SC", "SC", "PC", "PS", "SI", "SI"],
        "labor": ["E", "E", "N", "E", "U", "E", "N", "U", "N", "N"],
    }
)
QI = "residence,gender,education,labor"


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "guideline.csv"
    GUIDELINE.to_csv(path, index=False)
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_json_has_every_record_in_input_order(data):
    result = run("analyze", str(data), "--qi", QI, "--suda", "--format", "json")
    assert result.returncode == 0, result.stderr
    suda = json.loads(result.stdout)["suda"]
    assert [r["row"] for r in suda["records"]] == list(range(10))
    assert [r["score"] for r in suda["records"]] == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]
    # Row 4: Rural alone, and {F, U}, {SC, U}, {F, SC}; row 7: PS alone, {M, U}, {Urban, U}.
    assert [r["msus"] for r in suda["records"]] == [0, 0, 1, 0, 4, 0, 1, 3, 0, 0]
    assert suda["dis_fraction"] == 0.01 and suda["max_msu_size"] == 4
    # U = 4 unique records (rows 2, 4, 6, 7); P = 6 records in pairs (rows 0 and 1, 3 and 5,
    # 8 and 9 share all four values).
    u, p, f, q = 4, 6, 0.01, 1 + (8 - 4) / 20
    dis = u * f / (u * f + p * (1 - f))
    adjustment = 2 * 6**-q + 12**-q + 10**-q
    expected = 1 / (1 + (u / dis - u) / (12**q * adjustment))
    assert suda["records"][4]["dis_score"] == pytest.approx(expected, rel=1e-12)
    assert suda["riskiest"][0]["row"] == 4
    # Keys in MSUs, weighted, over the total score 34: residence 6 + 2 (row 7's {Urban, U}).
    assert suda["attribute_contributions"]["residence"] == pytest.approx(100 * 8 / 34)


def test_a_bounded_search_keeps_the_small_msus_and_their_weights(data, capsys):
    args = ["analyze", str(data), "--qi", QI, "--suda", "--suda-max-msu", "1"]
    assert main([*args, "--suda-dis-fraction", "0.5", "--format", "json"]) == 0
    suda = json.loads(capsys.readouterr().out)["suda"]
    assert [r["score"] for r in suda["records"]] == [0, 0, 6, 0, 6, 0, 6, 6, 0, 0]
    assert suda["max_msu_size"] == 1 and suda["dis_fraction"] == 0.5


def test_the_table_shows_the_riskiest_records(data, capsys):
    assert main(["analyze", str(data), "--qi", QI, "--suda"]) == 0
    out = capsys.readouterr().out
    assert "4 of 10 records have minimal sample uniques" in out
    lines = out[out.index("Riskiest records") :].splitlines()
    assert lines[3].split()[:3] == ["4", "4", "12"]  # row, MSUs, score


def test_the_html_report_lists_the_riskiest_records(data, tmp_path):
    pytest.importorskip("jinja2", reason="the 'reports' extra is not installed")
    pytest.importorskip("matplotlib", reason="the 'reports' extra is not installed")
    out = tmp_path / "report.html"
    assert main(["analyze", str(data), "--qi", QI, "--suda", "-f", "html", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    table = html[html.index('id="suda-riskiest"') : html.index("</table>", html.index("suda-r"))]
    assert table.count("<tr>") == 5  # the header and the 4 scoring records
    assert '<td class="num">12</td>' in table


def test_the_html_report_escapes_key_names(tmp_path):
    pytest.importorskip("jinja2", reason="the 'reports' extra is not installed")
    pytest.importorskip("matplotlib", reason="the 'reports' extra is not installed")
    hostile = "<script>alert('x')</script>"
    path = tmp_path / "hostile.csv"
    GUIDELINE.rename(columns={"labor": hostile}).to_csv(path, index=False)
    out = tmp_path / "report.html"
    qi = f"residence,gender,education,{hostile}"
    assert main(["analyze", str(path), "--qi", qi, "--suda", "-f", "html", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert 'id="suda-contributions"' in html and "&lt;script&gt;" in html
    assert "<script" not in html.lower()


def test_duckdb_reads_the_same_records(data, capsys):
    pytest.importorskip("duckdb")
    args = ["analyze", str(data), "--qi", QI, "--suda", "--format", "json"]
    assert main([*args, "--engine", "duckdb"]) == 0
    out_of_core = json.loads(capsys.readouterr().out)["suda"]
    assert [r["score"] for r in out_of_core["records"]] == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--suda"], "--suda needs --qi"),
        (["--qi", QI, "--suda-max-msu", "2"], "need --suda"),
        (["--qi", QI, "--suda", "--suda-max-msu", "0"], "between 1 and the 4"),
        (["--qi", QI, "--suda", "--suda-max-msu", "5"], "between 1 and the 4"),
        (["--qi", QI, "--suda", "--suda-dis-fraction", "0"], "in (0, 1], got 0"),
        (["--qi", QI, "--suda", "--suda-dis-fraction", "1.5"], "in (0, 1], got 1.5"),
        (["--qi", QI, "--suda", "--suda-dis-fraction", "abc"], "in (0, 1], got abc"),
        (["--qi", "gender,gender", "--suda"], "'gender' is named more than once"),
    ],
)
def test_bad_values_are_one_line(data, extra, message):
    result = run("analyze", str(data), *extra)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_a_search_beyond_its_budget_is_one_line(tmp_path):
    path = tmp_path / "wide.csv"
    pd.DataFrame({f"k{j}": [0, 1, 2] for j in range(15)}).to_csv(path, index=False)
    qi = ",".join(f"k{j}" for j in range(15))
    result = run("analyze", str(path), "--qi", qi, "--suda", "--combinations", "0")
    assert result.returncode == 2
    assert "bound the MSU size" in result.stderr and "Traceback" not in result.stderr

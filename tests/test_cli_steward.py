"""The data steward at the command line: the verdict, --fail-if, stdin, pipes, -o, --drop.

Real processes where the exit status or a pipe matters; ``main`` in-process elsewhere.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from broker.cli import main
from broker.cli.app import build_parser
from broker.cli.verdict import condition
from tests.conftest import serve_env

FIXTURES = Path(__file__).parent / "fixtures"
ORIGINAL = str(FIXTURES / "patients_original.csv")
ANONYMIZED = str(FIXTURES / "patients_anonymized.csv")


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", *args],
        capture_output=True,
        input=stdin,
        timeout=120,
    )


def test_the_report_leads_with_a_verdict_in_words(capsys):
    assert main(["analyze", ORIGINAL, "--qi", "Age,Gender", "--sensitive", "Disease"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Not anonymous enough: k = 1 (9 of 9 rows are unique on Age, Gender)"
    assert lines[1] == (
        "  - 3 attributes single out rows on their own (identifiers in the values, or every "
        "value distinct): NIN, Name, Age"
    )
    assert lines[2].startswith("  - Disease: a class of rows holds one value only (l = 1)")


def test_the_verdict_names_what_the_json_and_the_decision_call_identifying(tmp_path, capsys):
    """One definition: a phone column whose values repeat (two patients share a phone) is not
    all distinct, but its values are direct identifiers; the table verdict, the JSON verdict
    and the JSON attributes name it alike, as a transfer's rules would."""
    table = tmp_path / "phones.csv"
    table.write_text(
        "patient_id,phone,region,disease\n"
        + "".join(
            f"P{i:03d},+221 77 {100 + i // 2:03d} 45 67,{'Dakar' if i % 2 else 'Thies'},"
            f"{'flu' if i % 3 else 'malaria'}\n"
            for i in range(12)
        )
    )
    assert main(["analyze", str(table), "--qi", "region", "--sensitive", "disease"]) == 0
    text = capsys.readouterr().out
    verdict_lines = " ".join(text.split("\n\n")[0].splitlines())
    assert "phone" in verdict_lines and "patient_id" in verdict_lines
    assert main(["analyze", str(table), "--qi", "region", "-s", "disease", "-f", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    flagged = {a["name"] for a in document["attributes"] if a["direct_identifier"]}
    assert "phone" in flagged
    problems = " ".join([document["verdict"]["headline"], *document["verdict"]["problems"]])
    assert "phone" in problems and "patient_id" in problems


def test_a_k_anonymous_table_gets_a_plain_verdict(capsys):
    assert main(["analyze", ANONYMIZED, "--qi", "Age,Gender", "--sensitive", "Disease"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("k = 3 on Age, Gender: every row shares its values with at least 2")


def test_the_json_report_carries_the_verdict(capsys):
    assert main(["analyze", ORIGINAL, "--qi", "Age,Gender", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"]["anonymous_enough"] is False
    assert document["verdict"]["headline"].startswith("Not anonymous enough: k = 1")
    assert document["rows"] == 9 and document["notes"] == [] and document["fail_if"] == []


@pytest.mark.parametrize(
    ("conditions", "status", "held"),
    [
        (["k<5"], 1, "k < 5"),
        (["k<1"], 0, None),
        (["risk>0.2"], 1, "risk > 0.2"),
        (["risk > 0.5", "k >= 2"], 1, "risk > 0.5"),
        (["l<2"], 1, "l < 2"),
        (["t>0.95"], 0, None),
        (["identifiers>=3"], 1, "identifiers >= 3"),
        (["unique==1"], 1, "unique == 1"),
    ],
)
def test_fail_if_exits_1_when_a_condition_holds(conditions, status, held):
    args = ["analyze", ORIGINAL, "--qi", "Age,Gender", "--sensitive", "Disease"]
    for text in conditions:
        args += ["--fail-if", text]
    result = run(*args)
    assert result.returncode == status, result.stderr
    assert result.stdout.startswith(b"Not anonymous enough")  # the report is printed either way
    stderr = result.stderr.decode()
    if held:
        [line] = stderr.strip().splitlines()
        assert line.startswith("fedbroker analyze: --fail-if: ") and held in line
    else:
        assert stderr == ""


def test_fail_if_on_the_json_report_says_which_held():
    result = run(
        "analyze", ANONYMIZED, "--qi", "Age,Gender", "--fail-if", "k<3", "--fail-if", "k<5",
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["fail_if"] == [
        {"condition": "k < 3", "value": 3, "holds": False},
        {"condition": "k < 5", "value": 3, "holds": True},
    ]
    assert document["verdict"]["fail_if_held"] == ["k < 5"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("k<<5", "'k<<5' is not a condition: write NAME OP NUMBER"),
        ("k<", "'k<' is not a condition"),
        ("k<5 and risk>1", "is not a condition"),
        ("k=5", "is not a condition"),
        ("k<-1", "is not a condition"),
        ("K<5", "is not a condition"),
        ("zip<5", "unknown measure 'zip'; the measures are k, risk, unique, l, t, identifiers"),
    ],
)
def test_a_bad_condition_is_one_line_and_status_2(text, message):
    result = run("analyze", ORIGINAL, "--qi", "Age", "--fail-if", text)
    assert result.returncode == 2
    [line] = result.stderr.decode().strip().splitlines()
    assert message in line and line.startswith("fedbroker analyze: error: argument --fail-if")


def test_a_condition_on_what_is_not_measured_names_the_option():
    result = run("analyze", ORIGINAL, "--fail-if", "k<5")
    assert result.returncode == 2
    assert result.stderr.decode().strip() == (
        "fedbroker analyze: error: --fail-if 'k < 5' needs --qi (k and risk are measured on it)"
    )
    result = run("analyze", ORIGINAL, "--qi", "Age", "--fail-if", "t>0.2")
    assert result.returncode == 2 and "needs --sensitive" in result.stderr.decode()


def test_conditions_are_parsed_strictly():
    assert condition(" risk >= .25 ").text == "risk >= 0.25"
    assert condition("k<5").limit == 5.0
    assert condition("t<=0.10").text == "t <= 0.1"


def test_version():
    result = run("--version")
    assert result.returncode == 0
    assert re.fullmatch(rb"fedbroker \S+\n", result.stdout), result.stdout


def test_a_closed_pipe_is_no_traceback():
    """`fedbroker analyze x | head -1`: the reader goes away; no traceback, no 'Exception
    ignored' line, the shell's status for SIGPIPE."""
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    writer = subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "analyze", str(FIXTURES / "census_sample.csv"),
         "--format", "json"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    reader.stdin.close()
    reader.stdout.read()
    reader.wait()
    _, stderr = writer.communicate(timeout=120)
    assert stderr == b"", stderr.decode()
    assert writer.returncode in (0, 141)


def test_the_closed_pipe_with_a_shell():
    command = (
        f"{sys.executable} -m broker.cli analyze {FIXTURES / 'census_sample.csv'} --qi Age "
        "| head -1"
    )
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], capture_output=True, timeout=120
    )
    assert result.stdout.decode().startswith("Not anonymous enough")
    assert result.stderr == b""


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_dash_reads_stdin_in_any_format(tmp_path, fmt):
    frame = pd.read_csv(ORIGINAL, dtype=str)
    path = tmp_path / f"in.{fmt}"
    {"csv": lambda: frame.to_csv(path, index=False), "json": lambda: frame.to_json(
        path, orient="records"), "parquet": lambda: frame.to_parquet(path)}[fmt]()  # fmt: skip
    sniffed = run("analyze", "-", "--qi", "Age,Gender", "--format", "json", stdin=path.read_bytes())
    assert sniffed.returncode == 0, sniffed.stderr
    named = run(
        "analyze", "-", "--input-format", fmt, "--qi", "Age,Gender", "--format", "json",
        stdin=path.read_bytes(),
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    for result in (sniffed, named):
        assert json.loads(result.stdout)["quasi_identifiers"]["k"] == 1


def test_stdin_in_the_wrong_format_is_one_line():
    result = run("analyze", "-", "--input-format", "parquet", stdin=Path(ORIGINAL).read_bytes())
    assert result.returncode == 2
    assert result.stderr.decode().strip() == "fedbroker analyze: error: stdin is not a Parquet file"


def test_input_format_is_for_stdin_only():
    result = run("analyze", ORIGINAL, "--input-format", "csv")
    assert result.returncode == 2 and "for DATA read from standard input" in result.stderr.decode()


def test_anonymize_reads_stdin(tmp_path):
    out = tmp_path / "out.csv"
    result = run(
        "anonymize", "-", "--qi", "Age,Gender", "--k", "3", "--drop", "NIN,Name", "-o", str(out),
        stdin=Path(ORIGINAL).read_bytes(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert list(pd.read_csv(out).columns) == ["Age", "Gender", "Disease"]


def _anonymize(out: Path, *extra: str) -> int:
    return main(["anonymize", ORIGINAL, "--qi", "Age,Gender", "--k", "3", "-o", str(out), *extra])


def test_output_is_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    assert _anonymize(out) == 2
    assert capsys.readouterr().err.strip() == (
        f"fedbroker anonymize: error: {out} exists (a file): choose another output or add --force"
    )
    assert out.read_text() == "precious\n"
    assert _anonymize(out, "--force") == 0
    assert out.read_text().startswith("NIN,Name,Age,Gender,Disease\n")


def test_an_analysis_report_file_is_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "report.json"
    out.write_text("precious\n")
    analyze = ["analyze", ORIGINAL, "--qi", "Age,Gender", "--format", "json", "-o", str(out)]
    assert main(analyze) == 2
    assert "choose another output or add --force" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    assert main([*analyze, "--force"]) == 0
    assert json.loads(out.read_text())["verdict"]


def test_a_partition_folder_that_is_not_empty_is_kept_without_force(tmp_path, capsys):
    folder = tmp_path / "linked"
    folder.mkdir()
    assert main([
        "anonymize", ORIGINAL, "--qi", "Age,Gender", "--sensitive", "Disease", "--k", "3",
        "--method", "partition", "-o", str(folder),
    ]) == 0  # fmt: skip
    capsys.readouterr()
    again = ["anonymize", ORIGINAL, "--qi", "Age,Gender", "--sensitive", "Disease", "--k", "3",
             "--method", "partition", "-o", str(folder)]  # fmt: skip
    assert main(again) == 2
    assert "a folder that is not empty" in capsys.readouterr().err
    assert main([*again, "--force"]) == 0


def test_audit_head_keeps_an_existing_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BROKER_DATABASE_URL", f"sqlite:///{tmp_path / 'b.db'}")
    anchor = tmp_path / "head.json"
    anchor.write_text("{}")
    assert main(["audit", "head", "-o", str(anchor)]) == 2
    assert "choose another output or add --force" in capsys.readouterr().err
    assert anchor.read_text() == "{}"


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("nin", "Column to drop 'nin' is not a column of the dataset (did you mean 'NIN'?); its "
         "5 columns: 'NIN', 'Name', 'Age', 'Gender', 'Disease'"),
        ("NIN,Zip", "Column to drop 'Zip' is not a column of the dataset; its 5 columns: 'NIN',"),
    ],
)  # fmt: skip
def test_unknown_or_wrong_case_drop_is_an_error_like_qi(tmp_path, drop, message):
    out = tmp_path / "out.csv"
    result = run("anonymize", ORIGINAL, "--qi", "Age,Gender", "--k", "2", "--drop", drop,
                 "-o", str(out))  # fmt: skip
    assert result.returncode == 2
    [line] = result.stderr.decode().strip().splitlines()
    assert line == f"fedbroker anonymize: error: {message}" or message in line
    assert not out.exists()
    qi = run("anonymize", ORIGINAL, "--qi", "age", "--k", "2", "-o", str(out))
    assert "Quasi-identifier 'age' is not a column of the dataset (did you mean 'Age'?)" in (
        qi.stderr.decode()
    )


def test_anonymize_says_what_changed_and_which_checks_ran(tmp_path, capsys):
    """The reported case: --k 3 --t 0.1 ran with k = 6 and kept nothing, said nowhere."""
    out = tmp_path / "out.csv"
    assert main([
        "anonymize", ORIGINAL, "--qi", "Age,Gender", "--sensitive", "Disease", "--k", "3",
        "--t", "0.1", "--drop", "NIN,Name", "-o", str(out),
    ]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"Anonymized: wrote {out}; k = 9 on Age, Gender (asked 3; the method ran with k = 6); "
        "5 of 5 checks passed on the output, measured again; utility kept 0.00%"
    )
    # The planner's own words: the k it tried and what failed there.
    assert lines[1].startswith("  - k raised from 3 to 6 because at k = 3 the result still failed")
    assert "t of 'Disease' is 0.5556, limit 0.1" in lines[1]
    assert any("every row is in one class" in line for line in lines[2:4])
    assert any("only 0.00% of the information is kept" in line for line in lines[2:4])
    checks = lines[lines.index("Checks (on the output, measured again)") + 1 :][:5]
    assert checks == [
        "  NIN dropped: passed",
        "  Name dropped: passed",
        "  suppressed share <= 0.05: 0, passed",
        "  k >= 3: 9, passed",
        "  t of Disease <= 0.1: 0, passed",
    ]


def test_anonymize_json_carries_the_summary(tmp_path, capsys):
    assert main([
        "anonymize", ORIGINAL, "--qi", "Age,Gender", "--sensitive", "Disease", "--k", "2",
        "--l", "3", "--drop", "NIN,Name", "-o", str(tmp_path / "o.csv"), "--format", "json",
    ]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["k_asked"] == 2 and summary["k_used"] == 3
    assert "each class holds at least 3 distinct values of Disease" in summary["k_reason"]
    assert summary["k_output"] >= 3 and len(summary["checks"]) == 5


def test_a_pandas_default_csv_is_read_and_the_report_says_so(tmp_path, capsys):
    path = tmp_path / "default.csv"
    pd.read_csv(ORIGINAL, dtype=str).to_csv(path)
    assert main(["analyze", str(path), "--qi", "Age,Gender"]) == 0
    out = capsys.readouterr().out
    assert "9 rows, 5 attributes" in out
    assert "Note: the first column had no name and held the row numbers 0..8" in out
    out_path = tmp_path / "out.csv"
    assert main(["anonymize", str(path), "--qi", "Age,Gender", "--k", "3", "-o", str(out_path),
                 "--drop", "NIN,Name"]) == 0  # fmt: skip
    assert "Note: the first column had no name" in capsys.readouterr().out
    assert out_path.read_text().startswith("Age,Gender,Disease\n")  # the index is not delivered


def test_help_has_no_rest_markup_and_one_spelling_per_class():
    parser = build_parser()
    texts = [parser.format_help()]
    for action in parser._subparsers._group_actions:
        for name, sub in action.choices.items():
            texts.append(sub.format_help())
            for inner in sub._subparsers._group_actions if sub._subparsers else ():
                texts += [leaf.format_help() for leaf in inner.choices.values()]
            assert name
    every = "\n".join(texts)
    assert len(texts) > 8
    for markup in ("``", ":func:", ":mod:", ":class:", "`"):
        assert markup not in every, markup
    assert "quasi_identifier" not in every and "QI " not in every


def test_tables_spell_each_class_one_way(capsys):
    assert main(["analyze", ORIGINAL, "--qi", "Age,Gender"]) == 0
    out = capsys.readouterr().out
    assert "quasi-identifier" in out
    for other in ("quasi_identifier", "IDENTIFIER", "non_sensitive"):
        assert other not in out


@pytest.mark.skipif(not hasattr(os, "dup2"), reason="POSIX")
def test_argparse_errors_are_one_line():
    result = run("analyze", ORIGINAL, "--combinations", "many")
    assert result.returncode == 2
    [line] = result.stderr.decode().strip().splitlines()
    assert "invalid int value: 'many'" in line and line.endswith("(see fedbroker analyze --help)")


@pytest.mark.parametrize("workers", ["1", "2"])  # 2: the checks run in a process of their own
def test_serve_refuses_a_busy_port_in_one_line(tmp_path, workers):
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        env = serve_env(tmp_path, BROKER_WORKERS=workers)
        result = subprocess.run(
            [sys.executable, "-m", "broker.cli", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"fedbroker serve: error: port {port} on 127.0.0.1 is in use by another process: "
        "choose another with --port or BROKER_PORT"
    )


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc (Linux)")
def test_the_process_supervising_the_workers_does_not_load_the_broker(tmp_path):
    """With several workers, the first process only supervises them: its checks at start run in
    a process that exits, so it never holds pandas and the rest of the app (it held a whole
    copy, 218 MiB, that never served)."""
    import socket
    import time

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = serve_env(tmp_path, BROKER_SPOOL_DIR=str(tmp_path / "spool"), BROKER_WORKERS="2")
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "serve", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/livez", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.3)
        mapped = Path(f"/proc/{server.pid}/maps").read_text()
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    assert "pandas" not in mapped and "numpy" not in mapped

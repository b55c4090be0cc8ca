"""Progress of long commands: a bar when stderr is a terminal, plain lines when it is not, never
a byte on stdout. The commands run as real processes, stderr on a pseudo-terminal or a pipe."""

import io
import json
import os
import pty
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from broker.cli.progress import LARGE_INPUT_ROWS, Steps

ROWS = LARGE_INPUT_ROWS + 20_000
LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] ")
ESCAPE = "\x1b["
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours, cursor moves: not what is read


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """A table of more than LARGE_INPUT_ROWS rows: the commands show their progress."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("progress") / "large.parquet"
    frame = pd.DataFrame({"age": rng.integers(18, 90, ROWS), "sex": rng.choice(["F", "M"], ROWS)})
    frame.to_parquet(path)
    return path


def on_terminal(*args: str) -> tuple[int, str, str]:
    """Exit status, stdout (a pipe) and what the terminal showed (stderr on a pseudo-terminal)."""
    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "broker.cli", *args],
        stdout=subprocess.PIPE,
        stderr=terminal,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"},
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    stdout = child.stdout.read().decode()
    child.stdout.close()
    return child.wait(timeout=120), stdout, CONTROL.sub("", shown.decode(errors="replace"))


def piped(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_analyze_draws_a_bar_with_the_report_steps_on_a_terminal(large):
    status, stdout, shown = on_terminal("analyze", str(large), "--qi", "age,sex", "--format=json")
    assert status == 0, shown
    assert json.loads(stdout)["rows"] == ROWS  # the report alone on stdout
    # Known up front: the attributes, the quasi-identifiers, combinations of 1 and 2 columns.
    assert "1/4" in shown and "measuring quasi-identifiers" in shown
    assert "combinations of 2 attributes" in shown
    assert re.search(r"done .*━.* 4/4", shown)
    assert f"read {ROWS:,} rows x 2 columns" in shown


def test_analyze_piped_writes_one_plain_line_a_step(large):
    result = piped("analyze", str(large), "--qi", "age,sex", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rows"] == ROWS
    lines = result.stderr.splitlines()
    assert all(LINE.match(line) for line in lines) and ESCAPE not in result.stderr
    assert [LINE.sub("", line) for line in lines] == [
        f"read {ROWS:,} rows x 2 columns from {large}",
        "measuring attributes",
        "measuring quasi-identifiers",
        "combinations of 1 attributes",
        "combinations of 2 attributes",
    ]


def test_anonymize_draws_a_bar_of_its_steps_on_a_terminal(large, tmp_path):
    out = tmp_path / "out.csv"
    status, stdout, shown = on_terminal(
        "anonymize", str(large), "--qi", "age,sex", "--k", "5", "-o", str(out), "--format", "json"
    )
    assert status == 0, shown
    assert json.loads(stdout)["after"]["quasi_identifiers"]["k"] >= 5
    # measuring the input, anonymizing, writing, measuring the output (reading came before the
    # size was known)
    assert "anonymizing: mondrian, k = 5" in shown and f"writing {out}" in shown
    assert re.search(r"done .*━.* 4/4", shown)


def test_a_failed_anonymization_leaves_the_bar_where_it_stopped(large, tmp_path):
    status, stdout, shown = on_terminal(
        "anonymize", str(large), "--qi", "age", "--k", str(ROWS + 1), "-o", str(tmp_path / "o.csv")
    )
    assert status == 1 and stdout == ""
    assert re.search(rf"anonymizing: mondrian, k = {ROWS + 1} .* 1/4", shown)
    assert "done" not in shown
    assert "cannot reach the target" in shown


def test_a_small_input_shows_nothing(tmp_path):
    path = tmp_path / "small.csv"
    path.write_text("age,sex\n30,F\n40,M\n")
    status, stdout, shown = on_terminal("analyze", str(path), "--qi", "age,sex", "--format", "json")
    assert status == 0 and json.loads(stdout)["rows"] == 2
    assert shown == ""


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_steps_fill_the_bar_when_a_search_stops_early():
    stream = FakeTerminal()
    with Steps(shown=True, stream=stream) as steps:
        steps("opening")
        steps.expect(3)
        steps("first")
        steps("second")  # the third step was not needed
    assert re.search(r"done .* 4/4", CONTROL.sub("", stream.getvalue()))


def test_steps_that_are_not_shown_write_nothing():
    stream = FakeTerminal()
    with Steps(shown=False, stream=stream) as steps:
        steps.expect(1)
        steps("first")
        steps.note("a note")
    assert stream.getvalue() == ""

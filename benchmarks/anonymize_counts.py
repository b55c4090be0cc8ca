"""Generalization of a large CSV: planned on DuckDB's count tables vs planned on the rows.

    .venv/bin/python benchmarks/anonymize_counts.py --rows 3000000

Writes an Adult-like CSV (``adult_like`` of ``benchmarks/adult.py``, the six columns used: the
command's in-memory path reads at most 20 million cells) of ``--rows`` rows to a temporary
folder, then runs ``fedbroker anonymize`` on it twice, each in a fresh process, with the same
target (k = 10 on age, sex, race, education, marital-status, l = 2 on occupation,
``--method generalization``):

- ``--engine duckdb --memory-limit 1GB``: plans on the count tables and writes by DuckDB's COPY;
- ``--engine pandas`` (the baseline): reads the file into memory, plans on the rows.

It prints each run's wall time and peak resident memory (the child's ``ru_maxrss``), whether both
chose the same steps, and the k each output has. The machine is shared, so figures are noisy:
read them as orders of magnitude.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adult import adult_like

COLUMNS = ["age", "sex", "race", "education", "marital-status", "occupation"]
TARGET = (
    *("--qi", "age,sex,race,education,marital-status", "--sensitive", "occupation"),
    *("--k", "10", "--l", "2", "--method", "generalization", "--format", "json"),
)


def run(arguments: list[str], folder: Path) -> tuple[float, float, dict]:
    """Wall seconds, peak RSS in MiB and the JSON report of one ``fedbroker`` process."""
    out, err = folder / "stdout", folder / "stderr"
    start = time.perf_counter()
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "broker.cli", *arguments], stdout=stdout, stderr=stderr
        )
        _pid, status, usage = os.wait4(process.pid, 0)  # this child's own resource usage
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"fedbroker failed: {err.read_text().strip().splitlines()[-1]}")
    return seconds, usage.ru_maxrss / 1024, json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fedbroker-bench-") as folder:
        source = Path(folder) / "adult.csv"
        adult_like(args.rows)[COLUMNS].to_csv(source, index=False)
        size = source.stat().st_size / 2**20
        print(f"{args.rows:,} rows, {size:,.0f} MiB CSV")
        results = {}
        for name, engine in (
            ("duckdb", ["--engine", "duckdb", "--memory-limit", "1GB"]),
            ("pandas", ["--engine", "pandas"]),
        ):
            output = Path(folder) / f"out-{name}.csv"
            arguments = ["anonymize", str(source), *TARGET, *engine, "-o", str(output)]
            results[name] = run(arguments, Path(folder))
        steps = {name: report["remedy"]["steps"] for name, (_s, _m, report) in results.items()}
        print("same steps:", steps["duckdb"] == steps["pandas"], steps["duckdb"])
        for name, (seconds, peak, report) in results.items():
            k = report["after"]["quasi_identifiers"]["k"]
            print(f"{name:>7}: {seconds:7.1f} s  peak RSS {peak:7.0f} MiB  k after {k}")


if __name__ == "__main__":
    main()

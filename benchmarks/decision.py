"""The decision's pure computation: ``broker.fsla.decide.measure`` on load.py's table, per call.

The table is the one ``load.py`` sends (:func:`load._table`, 1,000 rows by default), read once
by the canonical reader; each run is a fresh process that calls ``measure`` ``--calls`` times
(after ``--warm`` calls not counted) and prints the CPU milliseconds (user + system, of the
process) and the wall milliseconds of one call. With ``--against PATH`` (another checkout of
the repository), the runs alternate between this checkout and that one, ``--repeats`` each, and
the medians are compared: on a machine shared with other work, a change is only seen that way.

    .venv/bin/python benchmarks/decision.py --repeats 7
    .venv/bin/python benchmarks/decision.py --against /tmp/before --repeats 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from load import ROOT, _table

_RUN = """
import sys, time
from broker.datasets import read_dataset
from broker.engines.pandas import PandasEngine
from broker.fsla.decide import measure
path, calls, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
frame = read_dataset(open(path, "rb").read(), "load.csv").frame
for _ in range(warm):
    measure(PandasEngine(frame), ("age", "region"), ("disease",))
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(calls):
    measure(PandasEngine(frame), ("age", "region"), ("disease",))
print(1000 * (time.process_time() - cpu) / calls, 1000 * (time.perf_counter() - wall) / calls)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300, help="timed calls a run")
    parser.add_argument("--warm", type=int, default=10, help="calls a run makes first, untimed")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each checkout")
    parser.add_argument("--against", metavar="PATH", help="another checkout, run alternately")
    args = parser.parse_args()
    checkouts = {"this checkout": ROOT}
    if args.against:
        other = Path(args.against).resolve()
        checkouts[other.name or str(other)] = other
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "load.csv"
        path.write_bytes(_table(args.rows))
        for _ in range(args.repeats):
            for name, root in checkouts.items():
                figures[name].append(_run(root, path, args.calls, args.warm))
    print(f"measure() on load.py's {args.rows}-row table, {args.calls} calls a run")
    print(f"{'checkout':>14} | {'median CPU ms':>13} | {'median wall ms':>14} | runs (CPU/wall)")
    for name, runs in figures.items():
        cpu = statistics.median(c for c, _ in runs)
        wall = statistics.median(w for _, w in runs)
        shown = ", ".join(f"{c:.2f}/{w:.2f}" for c, w in runs)
        print(f"{name[:14]:>14} | {cpu:13.2f} | {wall:14.2f} | {shown}")


def _run(root: Path, path: Path, calls: int, warm: int) -> tuple[float, float]:
    """CPU and wall milliseconds a call, in a fresh process importing ``root``'s package."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-c", _RUN, str(path), str(calls), str(warm)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=root, env=env, check=False)
    if result.returncode != 0:
        sys.exit(f"{root}: {result.stderr.strip().splitlines()[-1]}")
    cpu, wall = result.stdout.split()
    return float(cpu), float(wall)


if __name__ == "__main__":
    main()

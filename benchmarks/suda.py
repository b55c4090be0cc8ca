"""Benchmark SUDA's search against the exhaustive search it replaces, on generated keys.

Run ``.venv/bin/python benchmarks/suda.py`` (``--quick`` for a smoke run).

The table: ``--rows`` records with ``--keys`` categorical keys of skewed (Zipf-like, exponent 0.8)
values, cardinalities cycling through 91 (an age), 2, 20, 5, 10, 15, 8, 10, 30 and 6.

- ``ours``: :func:`broker.metrics.suda.suda_of_frame`, the depth-first walk that counts each key
  set's classes from its prefix's and drops the records already unique;
- ``exhaustive`` (the named baseline): the same definitions with one pandas ``groupby`` over all
  records for each of the 2**M - 1 key sets, then the same bitwise minimality; what a direct
  implementation does.

Both run on the same frame, interleaved (ours, then the baseline, ``--repeats`` times), after a
check that they give the same MSUs and scores; the figures are medians of CPU seconds (the
process's, which a busy machine distorts less than wall time) and of wall seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker.metrics.suda import suda_of_frame, weights

CARDINALITIES = [91, 2, 20, 5, 10, 15, 8, 10, 30, 6]


def table(rows: int, keys: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    columns = {}
    for j in range(keys):
        width = CARDINALITIES[j % len(CARDINALITIES)]
        p = 1 / np.arange(1, width + 1) ** 0.8
        columns[f"k{j}"] = rng.choice(width, size=rows, p=p / p.sum())
    return pd.DataFrame(columns)


def exhaustive(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """MSUs by size and scores, every key set grouped over every record."""
    names = list(frame.columns)
    keys, rows = len(names), len(frame)
    unique: dict[int, np.ndarray] = {}
    for size in range(1, keys + 1):
        for chosen in combinations(range(keys), size):
            held = frame.groupby([names[j] for j in chosen], sort=False)[names[chosen[0]]]
            sizes = held.transform("size").to_numpy()
            unique[sum(1 << j for j in chosen)] = np.packbits(sizes == 1)
    by_size = np.zeros((rows, keys), np.int64)
    for mask, bits in unique.items():
        below = np.zeros_like(bits)
        for j in range(keys):
            if mask >> j & 1 and mask != 1 << j:
                below |= unique[mask ^ (1 << j)]
        by_size[:, mask.bit_count() - 1] += np.unpackbits(bits & ~below, count=rows)
    return by_size, by_size @ np.array(weights(keys), np.float64)


def timed(run, *args) -> tuple[float, float, object]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = run(*args)
    return time.process_time() - cpu, time.perf_counter() - wall, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000", help="comma-separated row counts")
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20260)
    parser.add_argument("--quick", action="store_true", help="10,000 rows, 2 repeats")
    args = parser.parse_args()
    counts = [10_000] if args.quick else [int(r) for r in args.rows.split(",")]
    repeats = 2 if args.quick else args.repeats
    print(f"{'rows':>8} | keys | ours cpu s | ours wall s | exhaustive cpu s | wall s |  ratio cpu")
    for rows in counts:
        frame = table(rows, args.keys, args.seed)
        names = list(frame.columns)
        ours_cpu, ours_wall, base_cpu, base_wall = [], [], [], []
        for repeat in range(repeats):
            cpu, wall, ours = timed(suda_of_frame, frame, names)
            ours_cpu.append(cpu)
            ours_wall.append(wall)
            cpu, wall, (by_size, scores) = timed(exhaustive, frame)
            base_cpu.append(cpu)
            base_wall.append(wall)
            if repeat == 0:
                assert np.array_equal(ours.msus_by_size, by_size), "MSUs differ"
                assert np.array_equal(ours.scores, scores), "scores differ"
        mine, theirs = statistics.median(ours_cpu), statistics.median(base_cpu)
        print(
            f"{rows:>8} | {args.keys:>4} | {mine:>10.2f} | {statistics.median(ours_wall):>11.2f}"
            f" | {theirs:>16.2f} | {statistics.median(base_wall):>6.2f} | {theirs / mine:>9.1f}x"
        )
        print(
            f"  same MSUs and scores; {int((ours.msus > 0).sum()):,} records with MSUs, "
            f"{int(ours.msus.sum()):,} MSUs, largest score {ours.scores.max():g}"
        )


if __name__ == "__main__":
    main()

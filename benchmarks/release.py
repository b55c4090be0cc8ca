"""A contingency table under differential privacy, next to the same exact count in pandas.

Generated Adult-shaped rows (``adult.adult_like``); the table counts three columns together
(sex, race, education: 2 x 5 x 16 = 160 cells). Timed in the same run, each best of
``--repeats`` (a fresh engine each time, so nothing is counted twice):

- pandas: the exact table, ``frame.groupby(columns).size()`` (the baseline);
- ours, declared keys: ``broker.privacy.release`` with every column's keys declared (the
  cells OpenDP's ``make_count_by_categories`` would count, plus the other cell): the engine's
  count table, then OpenDP's Laplace measurement on the 161 counts, the plan (OpenDP's binary
  search for the scale) included;
- ours, keys from the data: the same with OpenDP's thresholded histogram (delta 1e-6);
- OpenDP on the rows: the whole chain, ``make_count_by_categories >> then_laplace``, invoked
  on the 1M row keys (one string a row across the library's boundary): what the broker would
  cost if it handed OpenDP the rows instead of counts (one run, the rows' keys made first and
  not timed).

Also checks that our exact count vector equals pandas' table, cell for cell.

    .venv/bin/python benchmarks/release.py [--rows 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction

from adult import EDUCATION, RACE, adult_like
from harness import machine, timed

from broker.engines.pandas import PandasEngine
from broker.privacy import mechanisms
from broker.privacy.queries import parse_queries
from broker.privacy.release import cell_names, compute, declared_counts, plan

COLUMNS = ["sex", "race", "education"]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rows", type=int, default=1_000_000)
    options.add_argument("--repeats", type=int, default=5)
    args = options.parse_args()
    frame = adult_like(args.rows)[COLUMNS]
    keys = {"sex": ["Female", "Male"], "race": list(RACE), "education": list(EDUCATION)}
    declared = parse_queries([{"type": "count_by", "columns": COLUMNS, "keys": keys}])
    from_data = parse_queries([{"type": "count_by", "columns": COLUMNS}])
    epsilon, delta = Fraction(1), Fraction(1, 10**6)
    print(machine())
    print(f"{args.rows:,} rows; contingency table of {', '.join(COLUMNS)}; epsilon 1")

    pandas_exact = timed(lambda: frame.groupby(COLUMNS).size(), args.repeats)
    ours_declared = timed(
        lambda: compute(PandasEngine(frame), plan(declared, epsilon)), args.repeats
    )
    ours_data = timed(
        lambda: compute(PandasEngine(frame), plan(from_data, epsilon, delta)), args.repeats
    )
    planned = plan(declared, epsilon)
    [part] = planned.parts
    exact = declared_counts(PandasEngine(frame), part.query)
    names = cell_names(part.query)
    table = pandas_exact.result
    expected = [int(table.get(tuple(json.loads(name)), 0)) for name in names]
    agree = exact[:-1] == expected and exact[-1] == 0
    rows = [json.dumps(list(values)) for values in frame.itertuples(index=False, name=None)]
    start = time.perf_counter()
    chain = mechanisms._count_by_categories(names) >> mechanisms.dp.m.then_laplace(
        part.mechanisms[0].scale
    )
    chain(rows)
    opendp_rows = time.perf_counter() - start

    cells = len(ours_data.result[0]["result"]["cells"])
    print(f"{'run':>34} | {'best s':>8} | {'median s':>8} | vs pandas")
    for label, timing in (
        ("pandas exact groupby().size()", pandas_exact),
        ("ours, declared keys (161 cells)", ours_declared),
        (f"ours, keys from the data ({cells} kept)", ours_data),
    ):
        ratio = timing.best / pandas_exact.best
        print(f"{label:>34} | {timing.best:8.3f} | {timing.median:8.3f} | {ratio:6.1f}x")
    ratio = opendp_rows / pandas_exact.best
    print(
        f"{'OpenDP chain on the rows (1 run)':>34} | {opendp_rows:8.3f} | {'':>8} | {ratio:6.1f}x"
    )
    print(f"exact counts agree with pandas, cell for cell: {'yes' if agree else 'NO'}")
    print(
        f"accuracy: each count within ±{part.mechanisms[0].half_width:.2f} of the exact one "
        "with probability 95 %"
    )


if __name__ == "__main__":
    main()

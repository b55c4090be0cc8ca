"""Benchmark counting people in the worst case and reading identifying precision, next to the
report that does both, on a table where each person is sent several times.

Run ``.venv/bin/python benchmarks/people.py`` (``--rows 100000`` for a quick look).

The table: people with a birth date, a 5-digit postcode and a sex each (dates written three ways,
postcodes sometimes with a blank), each sent 1 to 5 times with a diagnosis per row, and an age
band; quasi-identifiers birth date, postcode, sex, sensitive the diagnosis. For the pandas engine
and DuckDB (the frame registered, counted out of core), best of ``--repeats``:

- ``precision``: every column's values read as dates, postcodes or ages (``ColumnPrecision.of``
  on each column's distinct values, told as the report tells it whether the content detector
  found only numbers), what the F-SLA precision rules judge;
- ``rare tuples``: the quasi-identifiers' rare tuples found (``rare_tuples``) and, for pandas,
  each row labelled with its possible person;
- ``report``: the whole report without the combination search (``report_of``), which includes
  both; the baseline the two are a share of;
- ``without s``: the same report from an engine that ignores the quasi-identifiers it is told
  (``assume_worst`` does nothing: people as identical rows, the count before the worst case).

``--adult ROWS`` adds the same figures for the Adult-shaped table of ``benchmarks/adult.py``
(quasi-identifiers age, sex, race, native-country; sensitive income and occupation): no dates or
postcodes, ages up to 90, so the rows aged 90 that repeat a tuple count as one person.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness

from broker.columns.precision import ColumnPrecision
from broker.engines.duckdb import DuckDBEngine
from broker.engines.pandas import PandasEngine
from broker.engines.people import rare_tuples
from broker.metrics.content import NUMBER, content_of, sample_distinct
from broker.metrics.report import ReportOptions, report_of

QUASI_IDENTIFIERS = ["birth_date", "zip", "sex"]
SENSITIVE = ["diagnosis"]


def repeated_people(rows: int, seed: int) -> pd.DataFrame:
    """About ``rows`` rows: each person sent 1 to 5 times (3 on average)."""
    rng = np.random.default_rng(seed)
    people = rows // 3
    days = pd.Timestamp("1930-01-01") + pd.to_timedelta(rng.integers(0, 70 * 365, people), "D")
    iso = days.strftime("%Y-%m-%d").to_numpy(dtype=object)
    zips = np.char.mod("%05d", rng.integers(10000, 10500, people)).astype(object)
    sexes = rng.choice(np.array(["F", "M"], dtype=object), people)
    times = rng.integers(1, 6, people)
    who = np.repeat(np.arange(people), times)
    way = rng.integers(0, 3, who.size)
    day_first = days.strftime("%d/%m/%Y").to_numpy(dtype=object)[who]
    dated = np.where(way == 0, iso[who], np.where(way == 1, day_first, iso[who] + " 00:00"))
    spaced = zips[who].copy()
    blank = rng.random(who.size) < 0.2
    spaced[blank] = [z[:2] + " " + z[2:] for z in zips[who][blank]]
    bands = np.array(["20-29", "30-39", "40-49", "50-59", "60-69", "70-79"], dtype=object)
    return pd.DataFrame(
        {
            "birth_date": dated,
            "zip": spaced,
            "sex": sexes[who],
            "age_band": rng.choice(bands, who.size),
            "diagnosis": rng.choice(np.array(["flu", "asthma", "malaria", "hiv"]), who.size),
        }
    )


class _RowsAsPeople:
    """An engine's class that assumes nothing: people as identical rows."""

    def assume_worst(self, quasi_identifiers) -> None:
        return None


def without_worst(make):
    engine_class = make if isinstance(make, type) else type(make(pd.DataFrame({"a": ["x"]})))
    ignoring = type(f"{engine_class.__name__}RowsAsPeople", (_RowsAsPeople, engine_class), {})
    return ignoring if make is engine_class else lambda frame: ignoring.from_frame(frame)


def best(function, repeats: int) -> float:
    found = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        found.append(time.perf_counter() - start)
    return min(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000,1000000", help="comma-separated row counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=harness.SEED)
    parser.add_argument("--adult", type=int, default=0, help="rows of the Adult-shaped table")
    args = parser.parse_args(argv)
    print(f"{harness.machine()}, load average {os.getloadavg()[0]:.2f}; QI {QUASI_IDENTIFIERS}")
    table = harness.Table(
        ("engine", "<7"),
        ("rows", ">9"),
        ("rare tuples", ">11"),
        ("their rows", ">10"),
        ("precision s", ">11"),
        ("rare tuples s", ">13"),
        ("report s", ">8"),
        ("share", ">6"),
        ("without s", ">9"),
    )
    print(table.header())
    engines = {"pandas": PandasEngine, "duckdb": DuckDBEngine.from_frame}
    tables = [
        (repeated_people(rows, args.seed), QUASI_IDENTIFIERS, SENSITIVE)
        for rows in (int(r) for r in args.rows.split(","))
    ]
    if args.adult:
        from adult import adult_like

        adult = ["age", "sex", "race", "native-country"], ["income", "occupation"]
        tables.append((adult_like(args.adult, args.seed), *adult))
    for frame, quasi, sensitive in tables:
        for name, make in engines.items():
            engine = make(frame)
            report_of(engine, quasi, sensitive, ReportOptions(max_combination_size=0))  # warm
            found = engine.rare
            dictionaries = {c: engine.dictionary(c) for c in engine.columns}

            numbers = {  # as the report has the content detector say (its sample aside)
                c: content_of(sample_distinct(v)).values == NUMBER for c, v in dictionaries.items()
            }

            def precision(dictionaries=dictionaries, numbers=numbers):
                for column, values in dictionaries.items():
                    ColumnPrecision.of(column, values, numbers[column])

            def rare(engine=engine, quasi=quasi):
                rare_tuples(engine, quasi)
                if isinstance(engine, PandasEngine):
                    engine.__dict__.pop("people", None)
                    _ = engine.people.labellings()

            def report(make=make, frame=frame, quasi=quasi, sensitive=sensitive):
                report_of(make(frame), quasi, sensitive, ReportOptions(max_combination_size=0))

            ignoring = without_worst(make)

            def before(make=ignoring, frame=frame, quasi=quasi, sensitive=sensitive):
                report_of(make(frame), quasi, sensitive, ReportOptions(max_combination_size=0))

            reading = best(precision, args.repeats)
            finding = best(rare, args.repeats)
            whole = best(report, args.repeats)
            without = best(before, args.repeats)
            share = f"{(reading + finding) / whole:.0%}"
            print(
                table.row(
                    name,
                    len(frame),
                    found.people if found else 0,
                    found.rows if found else 0,
                    f"{reading:.2f}",
                    f"{finding:.2f}",
                    f"{whole:.2f}",
                    share,
                    f"{without:.2f}",
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark the identifier detector: recall per kind and disguise, false positives on clean
data, and its cost per decision, next to the detector the broker had before (baseline).

Run ``.venv/bin/python benchmarks/detector.py``. It reads:

- the labelled corpus ``tests/fixtures/identifiers/identifiers.csv`` (synthetic identifiers with
  valid check digits in every disguise, and well-known people's names held out from the name
  lists), written by ``python -m tests.fixtures.identifiers.corpus``;
- the clean corpus ``tests/fixtures/identifiers/clean.csv`` (dates, ICD-10 codes, amounts,
  postcodes, codes, column names, catalog text, the demo's published data);
- UCI Adult in place (``/work/shared/data/arx-adult/adult.csv`` or ``$ADULT_CSV``; skipped,
  said so, when absent): every distinct value alone, and every column's sample.

The baseline is ``broker/metrics/content.py`` as it was before the detector (commit
``07cf876``), loaded from git into a temporary module. A value counts as found when the
column verdict on that value alone (``content_of([value]).direct_identifier``) is set; text
published alone (a catalog description) is judged by ``contact_in_text``.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from broker.columns.numbers import _HUGE_EXPONENT as HUGE_EXPONENT  # noqa: E402
from broker.metrics import content as ours  # noqa: E402
from broker.metrics.report import ReportOptions, analyze  # noqa: E402

BASELINE_COMMIT = "07cf876"
FIXTURES = ROOT / "tests" / "fixtures" / "identifiers"
ADULT = Path(os.environ.get("ADULT_CSV", "/work/shared/data/arx-adult/adult.csv"))


def baseline():
    source = subprocess.run(
        ["git", "show", f"{BASELINE_COMMIT}:broker/metrics/content.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "content_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("content_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["content_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def rows(name: str) -> list[dict]:
    with open(FIXTURES / name, encoding="utf-8") as file:
        return list(csv.DictReader(file))


def found(module, text: str) -> bool:
    if module is not ours and HUGE_EXPONENT.search(text):
        return False  # the baseline's pandas parse crashes the process on it: not found
    return module.content_of([text]).direct_identifier is not None


def share(hits: int, total: int) -> str:
    return f"{hits / total:6.1%} ({hits}/{total})" if total else "  n/a"


def recall(before) -> None:
    labelled = rows("identifiers.csv")
    by = {"kind": defaultdict(lambda: [0, 0, 0]), "disguise": defaultdict(lambda: [0, 0, 0])}
    names = defaultdict(lambda: [0, 0, 0])
    for row in labelled:
        new, old = found(ours, row["text"]), found(before, row["text"])
        keys = [("kind", row["kind"]), ("disguise", row["disguise"])]
        for axis, key in keys:
            counts = by[axis][key]
            counts[0] += 1
            counts[1] += new
            counts[2] += old
        if row["kind"] == "person_name":
            counts = names[f"{row['country']}, {row['disguise']}"]
            counts[0] += 1
            counts[1] += new
            counts[2] += old
    for axis, title in (("kind", "kind"), ("disguise", "disguise (every kind)")):
        print(f"\nRecall by {title}: ours | before")
        for key, (total, new, old) in sorted(by[axis].items()):
            print(f"  {key:24} {share(new, total):>18} | {share(old, total):>18}")
    print("\nRecall on held-out names of well-known people, by country: ours | before")
    for key, (total, new, old) in sorted(names.items()):
        print(f"  {key:24} {share(new, total):>18} | {share(old, total):>18}")
    total = len(labelled)
    new = sum(found(ours, r["text"]) for r in labelled)
    old = sum(found(before, r["text"]) for r in labelled)
    print(f"  {'all':24} {share(new, total):>18} | {share(old, total):>18}")


def false_positives(before) -> None:
    clean = rows("clean.csv")
    print("\nFalse positives on clean values (each value alone): ours | before")
    by = defaultdict(lambda: [0, 0, 0])
    for row in clean:
        counts = by[row["source"]]
        counts[0] += 1
        counts[1] += found(ours, row["text"])
        counts[2] += found(before, row["text"])
    for key, (total, new, old) in sorted(by.items()):
        print(f"  {key:30} {share(new, total):>14} | {share(old, total):>14}")
    texts = [r["text"] for r in clean if r["source"] == "catalog text"]
    line("catalog text, as published", texts, lambda m, t: m.contact_in_text(t), before)
    if not ADULT.exists():
        print(f"\nUCI Adult: skipped ({ADULT} is absent)")
        return
    adult = pd.read_csv(ADULT, sep=";", dtype=str, keep_default_na=False)
    values = sorted({v for c in adult.columns for v in adult[c].unique()})
    line("UCI Adult distinct values", values, lambda m, v: found(m, v) or None, before)
    samples = [list(adult[c].unique()) for c in adult.columns]
    line("UCI Adult columns", samples, lambda m, s: m.content_of(s).direct_identifier, before)
    report = analyze(adult, options=ReportOptions(max_combination_size=0))
    flagged = [a.name for a in report.attributes if a.content.direct_identifier] or "none"
    print(f"  UCI Adult report, adjacent columns read together too: flagged {flagged}")


def line(label: str, items: list, flagged, before) -> None:
    new = sum(flagged(ours, item) is not None for item in items)
    old = sum(flagged(before, item) is not None for item in items)
    print(f"  {label:30} {share(new, len(items)):>14} | {share(old, len(items)):>14}")


def cost(before) -> None:
    print("\nCost per decision (best of 5)")
    if ADULT.exists():
        adult = pd.read_csv(ADULT, sep=";", dtype=str, keep_default_na=False).head(1000)
        samples = [list(adult[c].unique()) for c in adult.columns]
        for label, module in (("ours", ours), ("before", before)):
            seconds = best(lambda m=module: [m.content_of(s) for s in samples])
            print(f"  content of UCI Adult's 1k rows, {label:6}: {seconds * 1e3:8.1f} ms")
        baseline_tree = Path(tempfile.mkdtemp())
        archive = subprocess.run(
            ["git", "archive", BASELINE_COMMIT, "broker"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline_tree)], input=archive, check=True)
        for rows in (1_000, 1_000_000):
            for label, tree in (("ours", ROOT), ("before", baseline_tree)):
                seconds = _report_seconds(tree, rows)
                print(f"  whole report, UCI Adult as {rows:>9,} rows, {label:6}: {seconds:8.3f} s")
    rng = np.random.default_rng(7)
    numbers = rng.integers(0, 10**9, 1_000_000)
    days = rng.choice(["Mon", "Tue"], 1_000_000)
    column = pd.Series([f"REF-{n:09d} seen {d}" for n, d in zip(numbers, days, strict=True)])
    sample = ours.sample_distinct(pd.Series(column.unique()))
    for label, module in (("ours", ours), ("before", before)):
        seconds = best(lambda m=module: m.content_of(sample))
        print(f"  1M-row text column, {len(sample)} sampled, {label:6}: {seconds * 1e3:8.1f} ms")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from broker.identifiers.people import lists; lists()"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    print(
        f"  a fresh interpreter importing the detector and loading the name lists: "
        f"{time.perf_counter() - start:.2f} s"
    )
    for probe in ("x@" * 5000, "1 " * 5000, "A1" * 5000, "%41" * 3333, "<" * 10000):
        seconds = best(lambda p=probe: ours.content_of([p] * 10))
        print(f"  10 cells of 10,000 characters ({probe[:3]!r}...), ours: {seconds * 1e3:8.1f} ms")


REPORT = """
import sys, time
import pandas as pd
from broker.metrics.report import ReportOptions, analyze
adult = pd.read_csv(sys.argv[1], sep=";", dtype=str, keep_default_na=False)
rows = int(sys.argv[2])
frame = pd.concat([adult] * (rows // len(adult) + 1), ignore_index=True).head(rows)
analyze(frame.head(100), options=ReportOptions(max_combination_size=0))  # loads the name lists
times = []
for _ in range(3 if rows <= 10_000 else 1):
    start = time.perf_counter()
    analyze(frame, options=ReportOptions(max_combination_size=0))
    times.append(time.perf_counter() - start)
print(min(times))
"""


def _report_seconds(tree: Path, rows: int) -> float:
    """The whole report (no combination search) of UCI Adult repeated to ``rows`` rows, with the
    broker of ``tree``, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", REPORT, str(ADULT), str(rows)],
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def best(function, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    before = baseline()
    recall(before)
    false_positives(before)
    cost(before)


if __name__ == "__main__":
    main()

"""Benchmark the full measurement report against pycanon on data shaped like UCI Adult.

Run ``.venv/bin/python benchmarks/analyze.py`` (or ``--quick`` for a smoke run of a few seconds).

The data are generated, not downloaded: 15 columns named and typed like the Adult census table
(ints for numeric columns, Python ``str`` objects for categorical ones), with Adult's cardinalities
and skewed marginals, drawn from a seeded numpy generator so every run measures the same frame.

For each row count the script times, in the same process and on the same in-memory frame:

- ours: ``broker.metrics.report.analyze`` with quasi-identifiers, two sensitive attributes and
  ``max_combination_size=0`` (every attribute's Mmaq and QIR risk, the QI set's k, classes, risk and
  Mmaq, l and t of each sensitive attribute), best and median of several repeats; then, as an extra
  line, the same report with the combination search up to 3 attributes;
- pycanon: ``k_anonymity`` + ``l_diversity`` + ``t_closeness`` on the same QI and sensitive
  attributes, once, in a child process killed when it exceeds its time budget. A killed run gives a
  lower bound (``>= X s``) on pycanon's time and so a lower bound on the speed ratio.

pycanon computes much less than our report (no per-attribute measures, no entropy l, no risk), so
the ratio understates the difference in work. Where pycanon finished, our k, l and t are checked
against its values (l is the minimum over the sensitive attributes and t the maximum, as pycanon
combines several sensitive attributes). With age and country in the QI, k and l are 1 on both
sides, so on the smallest table the check is repeated with the coarse QI (sex, race).

Memory of ours is measured in separate, untimed runs, two ways: the ``tracemalloc`` peak (Python
and numpy allocations; pandas' C hash tables are not traced) and the growth of the resident set's
high-water mark (``VmHWM`` after ``malloc_trim`` and a reset through ``/proc/self/clear_refs``),
which sees every allocation.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pickle
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker.metrics.anonymity import sensitive_measure
from broker.metrics.report import AnalysisReport, analyze

QUASI_IDENTIFIERS = ["age", "sex", "race", "native-country"]
SENSITIVE = ["income", "occupation"]
# With age and country in the QI nearly every table is 1-anonymous and 1-diverse, which any
# implementation gets right; this coarser QI gives k, l > 1 for a check that can fail.
COARSE_QUASI_IDENTIFIERS = ["sex", "race"]
TARGET_SECONDS = 0.5
TARGET_ROWS = 1_000_000
TARGET_RATIO = 20.0

# Marginal counts of the Adult training table (32,561 rows), "?" being its missing-value mark.
WORKCLASS = {
    "Private": 22696,
    "Self-emp-not-inc": 2541,
    "Local-gov": 2093,
    "?": 1836,
    "State-gov": 1298,
    "Self-emp-inc": 1116,
    "Federal-gov": 960,
    "Without-pay": 14,
    "Never-worked": 7,
}
# education -> (count, education-num)
EDUCATION = {
    "HS-grad": (10501, 9),
    "Some-college": (7291, 10),
    "Bachelors": (5355, 13),
    "Masters": (1723, 14),
    "Assoc-voc": (1382, 11),
    "11th": (1175, 7),
    "Assoc-acdm": (1067, 12),
    "10th": (933, 6),
    "7th-8th": (646, 4),
    "Prof-school": (576, 15),
    "9th": (514, 5),
    "12th": (433, 8),
    "Doctorate": (413, 16),
    "5th-6th": (333, 3),
    "1st-4th": (168, 2),
    "Preschool": (51, 1),
}
MARITAL_STATUS = {
    "Married-civ-spouse": 14976,
    "Never-married": 10683,
    "Divorced": 4443,
    "Separated": 1025,
    "Widowed": 993,
    "Married-spouse-absent": 418,
    "Married-AF-spouse": 23,
}
OCCUPATION = {
    "Prof-specialty": 4140,
    "Craft-repair": 4099,
    "Exec-managerial": 4066,
    "Adm-clerical": 3770,
    "Sales": 3650,
    "Other-service": 3295,
    "Machine-op-inspct": 2002,
    "?": 1843,
    "Transport-moving": 1597,
    "Handlers-cleaners": 1370,
    "Farming-fishing": 994,
    "Tech-support": 928,
    "Protective-serv": 649,
    "Priv-house-serv": 149,
    "Armed-Forces": 9,
}
RELATIONSHIP = {
    "Husband": 13193,
    "Not-in-family": 8305,
    "Own-child": 5068,
    "Unmarried": 3446,
    "Wife": 1568,
    "Other-relative": 981,
}
RACE = {
    "White": 27816,
    "Black": 3124,
    "Asian-Pac-Islander": 1039,
    "Amer-Indian-Eskimo": 311,
    "Other": 271,
}
NATIVE_COUNTRY = {
    "United-States": 29170,
    "Mexico": 643,
    "?": 583,
    "Philippines": 198,
    "Germany": 137,
    "Canada": 121,
    "Puerto-Rico": 114,
    "El-Salvador": 106,
    "India": 100,
    "Cuba": 95,
    "England": 90,
    "Jamaica": 81,
    "South": 80,
    "China": 75,
    "Italy": 73,
    "Dominican-Republic": 70,
    "Vietnam": 67,
    "Guatemala": 64,
    "Japan": 62,
    "Poland": 60,
    "Columbia": 59,
    "Taiwan": 51,
    "Haiti": 44,
    "Iran": 43,
    "Portugal": 37,
    "Nicaragua": 34,
    "Peru": 31,
    "France": 29,
    "Greece": 29,
    "Ecuador": 28,
    "Ireland": 24,
    "Hong": 20,
    "Cambodia": 19,
    "Trinadad&Tobago": 19,
    "Laos": 18,
    "Thailand": 18,
    "Yugoslavia": 16,
    "Outlying-US(Guam-USVI-etc)": 14,
    "Honduras": 13,
    "Hungary": 13,
    "Scotland": 12,
    "Holand-Netherlands": 1,
}


def _draw(rng: np.random.Generator, counts: dict, rows: int) -> np.ndarray:
    """Category labels as Python ``str`` objects, drawn with the given marginal counts."""
    labels = np.array(list(counts), dtype=object)
    weights = np.array([c[0] if isinstance(c, tuple) else c for c in counts.values()], float)
    return labels[rng.choice(labels.size, size=rows, p=weights / weights.sum())]


def _sparse_amounts(rng, rows, zero_share, distinct, low, high) -> np.ndarray:
    """Mostly zero; otherwise one of ``distinct`` fixed amounts with Zipf-like frequencies."""
    amounts = np.unique(np.exp(rng.uniform(np.log(low), np.log(high), distinct * 2)).astype(int))
    amounts = rng.permutation(amounts)[:distinct]
    weights = 1.0 / np.arange(1, amounts.size + 1) ** 1.1
    values = amounts[rng.choice(amounts.size, size=rows, p=weights / weights.sum())]
    return np.where(rng.random(rows) < zero_share, 0, values).astype(np.int64)


def adult_like(rows: int, seed: int = 20240601) -> pd.DataFrame:
    """A frame with Adult's 15 columns, dtypes, cardinalities and skewed marginals.

    Numeric columns are int64; categorical ones are object columns of Python ``str`` (each label
    one shared object, as pandas' CSV reader produces). education-num follows education, and
    Husband/Wife fix the sex, as in the real table; other columns are drawn independently.
    """
    rng = np.random.default_rng(seed)
    age = np.clip(17 + rng.gamma(2.5, 8.6, rows), 17, 90).astype(np.int64)
    fnlwgt = np.clip(rng.lognormal(12.02, 0.52, rows), 12_285, 1_484_705).astype(np.int64)
    education = _draw(rng, EDUCATION, rows)
    number = {name: num for name, (_count, num) in EDUCATION.items()}
    education_num = pd.Series(education).map(number).to_numpy(np.int64)
    relationship = _draw(rng, RELATIONSHIP, rows)
    # Husbands are men and wives women; of the other Adult rows 8,597 of 17,800 are men.
    male = (rng.random(rows) < 8597 / 17800) | (relationship == "Husband")
    male &= relationship != "Wife"
    sex = np.array(["Female", "Male"], dtype=object)[male.astype(np.int64)]
    hours = np.where(
        rng.random(rows) < 0.467, 40, np.clip(np.round(rng.normal(40, 13, rows)), 1, 99)
    ).astype(np.int64)
    income = np.array(["<=50K", ">50K"], dtype=object)[
        (rng.random(rows) < 7841 / 32561).astype(np.int64)
    ]
    return pd.DataFrame(
        {
            "age": age,
            "workclass": _draw(rng, WORKCLASS, rows),
            "fnlwgt": fnlwgt,
            "education": education,
            "education-num": education_num,
            "marital-status": _draw(rng, MARITAL_STATUS, rows),
            "occupation": _draw(rng, OCCUPATION, rows),
            "relationship": relationship,
            "race": _draw(rng, RACE, rows),
            "sex": sex,
            "capital-gain": _sparse_amounts(rng, rows, 0.917, 119, 100, 99_999),
            "capital-loss": _sparse_amounts(rng, rows, 0.953, 92, 150, 4_356),
            "hours-per-week": hours,
            "native-country": _draw(rng, NATIVE_COUNTRY, rows),
            "income": income,
        }
    )


def our_report(
    frame: pd.DataFrame, max_combination_size: int = 0, quasi_identifiers=QUASI_IDENTIFIERS
) -> AnalysisReport:
    return analyze(
        frame,
        quasi_identifiers=quasi_identifiers,
        sensitive=SENSITIVE,
        max_combination_size=max_combination_size,
    )


def timed(function, repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return seconds


def _status_kib(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def rss_peak_growth(function) -> float | None:
    """MiB the resident set's high-water mark rose above the RSS at the start of ``function``.

    Memory freed by earlier runs stays resident in malloc's arenas and would be reused without
    raising the mark, so it is handed back to the system first (glibc ``malloc_trim``).
    """
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return None
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        return None
    before = _status_kib("VmRSS")
    function()
    after = _status_kib("VmHWM")
    return None if before is None or after is None else (after - before) / 1024


def tracemalloc_peak(function) -> float:
    """MiB of the tracemalloc peak while ``function`` runs (Python and numpy allocations)."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@dataclass
class PycanonRun:
    seconds: float  # total when finished, else the time it had run when killed
    finished: bool
    values: dict  # measure name -> value, for the measures that finished
    error: str | None = None


def pycanon_worker(path: str, quasi_identifiers: list[str]) -> None:
    """Child process: load the pickled frame, then time k, l and t one after the other."""
    from pycanon import anonymity

    frame = pd.read_pickle(path)
    print(json.dumps({"event": "start"}), flush=True)
    qi = quasi_identifiers
    steps = [
        ("k", lambda: anonymity.k_anonymity(frame, qi)),
        ("l", lambda: anonymity.l_diversity(frame, qi, SENSITIVE)),
        ("t", lambda: anonymity.t_closeness(frame, qi, SENSITIVE)),
    ]
    for name, step in steps:
        start = time.perf_counter()
        value = step()
        seconds = time.perf_counter() - start
        print(json.dumps({"measure": name, "value": float(value), "seconds": seconds}), flush=True)


def run_pycanon(
    frame: pd.DataFrame, budget: float, quasi_identifiers=QUASI_IDENTIFIERS
) -> PycanonRun:
    """pycanon's k + l + t in a child process, killed after ``budget`` seconds of computing."""
    with (
        tempfile.TemporaryDirectory() as directory,
        open(os.path.join(directory, "stderr"), "w+") as errors,
    ):
        path = os.path.join(directory, "frame.pkl")
        frame.to_pickle(path, protocol=pickle.HIGHEST_PROTOCOL)
        # stderr goes to a file: a stream of warnings must not fill a pipe and stall the child.
        child = subprocess.Popen(
            [sys.executable, __file__, "--pycanon-worker", path, *quasi_identifiers],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in child.stdout], daemon=True).start()

        values, spent, started = {}, 0.0, None
        load_deadline = time.monotonic() + 120  # loading the pickle is not pycanon's time
        while True:
            now = time.monotonic()
            deadline = load_deadline if started is None else started + budget
            try:
                event = json.loads(lines.get(timeout=max(deadline - now, 0.01)))
            except queue.Empty:
                if child.poll() is not None and lines.empty():
                    errors.seek(0)
                    error = errors.read().strip().splitlines()
                    return PycanonRun(spent, False, values, error[-1] if error else "child died")
                if time.monotonic() < deadline:
                    continue
                child.kill()
                child.wait()
                elapsed = 0.0 if started is None else time.monotonic() - started
                return PycanonRun(elapsed, False, values)
            if event.get("event") == "start":
                started = time.monotonic()
                continue
            values[event["measure"]] = event["value"]
            spent += event["seconds"]
            if len(values) == 3:
                child.wait()
                return PycanonRun(spent, True, values)


def single_sensitive(frame: pd.DataFrame, quasi_identifiers) -> dict[str, float]:
    """l and t of each sensitive attribute within the QI classes alone: pycanon's definition.

    The report measures each of several sensitive attributes within the classes of the QIs and
    the other sensitive attributes (multi-attribute l-diversity), which pycanon does not.
    """
    measures = [sensitive_measure(frame, quasi_identifiers, s) for s in SENSITIVE]
    return {
        "l": min(m.l_diversity for m in measures),
        "t": max(m.t_closeness for m in measures),
    }


def agreement(
    report: AnalysisReport, pycanon: PycanonRun, frame: pd.DataFrame, quasi_identifiers
) -> str:
    """``agree`` / ``DISAGREE`` per measure pycanon finished, e.g. ``k agree, l agree, t -``."""
    ours = {
        "k": report.quasi_identifiers.anonymity.k,
        **single_sensitive(frame, quasi_identifiers),
    }
    words = []
    for name, value in ours.items():
        if name not in pycanon.values:
            words.append(f"{name} -")
        else:
            same = abs(value - pycanon.values[name]) <= 1e-9
            words.append(f"{name} {'agree' if same else 'DISAGREE'}")
            if not same:
                words[-1] += f" ({value!r} vs {pycanon.values[name]!r})"
    return ", ".join(words)


def check_coarse(frame: pd.DataFrame, budget: float) -> str:
    """Our k, l, t against pycanon's on the coarse QI, where they are not all trivially 1."""
    report = our_report(frame, quasi_identifiers=COARSE_QUASI_IDENTIFIERS)
    pycanon = run_pycanon(frame, budget, COARSE_QUASI_IDENTIFIERS)
    single = single_sensitive(frame, COARSE_QUASI_IDENTIFIERS)
    ours = f"k={report.quasi_identifiers.anonymity.k}, l={single['l']}, t={single['t']:.6f}"
    return (
        f"check on QI {COARSE_QUASI_IDENTIFIERS}: ours {ours}; pycanon "
        f"{'finished' if pycanon.finished else 'stopped'} after {pycanon.seconds:.1f} s: "
        f"{agreement(report, pycanon, frame, COARSE_QUASI_IDENTIFIERS)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=None, help="comma-separated row counts")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats of ours")
    parser.add_argument(
        "--pycanon-budget",
        type=float,
        default=None,
        help="seconds of pycanon computing allowed in total over all row counts (default 300); "
        "time a smaller table leaves unused passes to the next",
    )
    parser.add_argument("--no-combinations", action="store_true", help="skip the extra line")
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--pycanon-worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pycanon_worker:
        pycanon_worker(args.pycanon_worker[0], args.pycanon_worker[1:])
        return 0

    rows_list = [
        int(r) for r in (args.rows or ("2000,20000" if args.quick else "32000,1000000")).split(",")
    ]
    repeats = args.repeats or (2 if args.quick else 7)
    budget_left = args.pycanon_budget or (20.0 if args.quick else 300.0)
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pd.__version__}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (other processes "
        f"compete for the cores); QI {QUASI_IDENTIFIERS}, sensitive {SENSITIVE}"
    )
    print(f"ours: best and median of {repeats} runs; pycanon: one run, budget {budget_left:g} s")

    results = []
    for index, rows in enumerate(rows_list):
        frame = adult_like(rows, args.seed)
        categories = frame.nunique(dropna=False).to_dict()
        print(f"\n{rows} rows x {frame.shape[1]} columns; distinct values: {categories}")
        report = our_report(frame)  # warm-up, and the values checked against pycanon
        seconds = timed(lambda frame=frame: our_report(frame), repeats)
        best, median = min(seconds), statistics.median(seconds)
        print(f"  ours full report (no combinations): best {best:.3f} s, median {median:.3f} s")
        traced = tracemalloc_peak(lambda frame=frame: our_report(frame))
        rss = rss_peak_growth(lambda frame=frame: our_report(frame))
        combos = None
        if not args.no_combinations:
            combos = min(timed(lambda frame=frame: our_report(frame, 3), max(1, repeats // 3)))
            print(f"  ours report + combinations up to 3 attributes: best {combos:.3f} s")
        share = budget_left / (len(rows_list) - index)
        print(f"  pycanon k + l + t (budget {share:.0f} s) ...", flush=True)
        pycanon = run_pycanon(frame, share)
        budget_left -= min(pycanon.seconds, share)
        if pycanon.error:
            print(f"  pycanon failed: {pycanon.error}")
        check = agreement(report, pycanon, frame, QUASI_IDENTIFIERS)
        print(
            f"  pycanon {'finished' if pycanon.finished else 'stopped'} after "
            f"{pycanon.seconds:.1f} s; values {pycanon.values}; ours vs pycanon: {check}"
        )
        results.append((rows, best, median, combos, traced, rss, pycanon, check))
        if index == 0:
            coarse_check = check_coarse(frame, 20.0 if args.quick else 60.0)
            print(f"  {coarse_check}")

    print()
    header = (
        f"{'rows':>9} | {'ours best s':>11} | {'ours median s':>13} | {'pycanon s':>10} | "
        f"{'ratio':>8} | {'tracemalloc MiB':>15} | {'RSS peak +MiB':>13} | "
        f"{'+combos s':>9} | k/l/t vs pycanon"
    )
    print(header)
    print("-" * len(header))
    for rows, best, median, combos, traced, rss, pycanon, check in results:
        bound = "" if pycanon.finished else ">="
        pyc = f"{bound}{pycanon.seconds:.1f}" if pycanon.seconds else "-"
        ratio = f"{bound}{pycanon.seconds / best:.0f}x" if pycanon.seconds else "-"
        print(
            f"{rows:>9} | {best:>11.3f} | {median:>13.3f} | {pyc:>10} | {ratio:>8} | "
            f"{traced:>15.0f} | {'-' if rss is None else f'{rss:.0f}':>13} | "
            f"{'-' if combos is None else f'{combos:.2f}':>9} | {check}"
        )
    print(
        "\nratio = pycanon seconds / ours best seconds; '>=' marks a pycanon run stopped at its "
        "budget (a lower bound). tracemalloc MiB = Python/numpy allocation peak; RSS peak +MiB = "
        "rise of the resident high-water mark (all allocations)."
    )

    print(f"\n{rows_list[0]} rows, {coarse_check}")
    print("\nTargets:")
    at_target = [r for r in results if r[0] == TARGET_ROWS]
    if not at_target:
        print(f"  not measured: the targets are for {TARGET_ROWS} rows (run without --quick)")
        return 0
    rows, best, _median, _c, _t, _r, pycanon, check = at_target[0]
    met = "MET" if best <= TARGET_SECONDS else "NOT MET"
    print(f"  full report of {rows} rows x 15 columns <= {TARGET_SECONDS} s: {best:.3f} s -> {met}")
    ratio = pycanon.seconds / best
    if pycanon.finished:
        verdict = "MET" if ratio >= TARGET_RATIO else "NOT MET"
        print(f"  >= {TARGET_RATIO:.0f}x faster than pycanon: {ratio:.0f}x -> {verdict}")
    elif ratio >= TARGET_RATIO:
        print(
            f"  >= {TARGET_RATIO:.0f}x faster than pycanon: at least {ratio:.0f}x (pycanon "
            f"stopped after {pycanon.seconds:.0f} s) -> MET"
        )
    else:
        print(
            f"  >= {TARGET_RATIO:.0f}x faster than pycanon: UNKNOWN, pycanon stopped after "
            f"{pycanon.seconds:.0f} s, which only shows >= {ratio:.0f}x; raise --pycanon-budget"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

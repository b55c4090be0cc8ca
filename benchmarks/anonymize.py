"""Benchmark our Mondrian k-anonymity against anjana's k-anonymity on data shaped like UCI Adult.

Run ``.venv/bin/python benchmarks/anonymize.py`` (or ``--quick`` for a smoke run of a few seconds).

The data are generated, not downloaded, by ``adult_like`` of ``benchmarks/adult.py``: Adult's 15
columns, dtypes, cardinalities and skewed marginals from a seeded numpy generator. Both methods
k-anonymize the same frame on the same six quasi-identifiers (age, sex, race, education,
marital-status, native-country) with the same k:

- ours: :func:`broker.anonymize.mondrian` (strict multidimensional Mondrian, local recoding into
  ranges and sets; no suppression needed), best of several repeats in this process;
- anjana (``anjana.anonymity.k_anonymity``, a peer library): full-domain generalization along
  hierarchies, one quasi-identifier at a time (the one with the most distinct values), then
  suppression of the classes still under k within ``supp_level`` (5 % here). It needs a hierarchy
  per quasi-identifier; the ones built here are simple and usual: age to 5-, 10- and 20-year
  ranges then ``*``; race to White / Non-white then ``*``; education to five levels of schooling
  then ``*``; marital status to Married / Not-married then ``*``; native country to
  United-States / ? / Other then ``*``; sex to ``*``. One run, in a child process killed when it
  exceeds its time budget: a killed run gives a lower bound (``>= X s``).

The two algorithms differ (local multidimensional recoding vs global full-domain recoding with
suppression), so the comparison is of what a user gets for the same k: seconds, and the same
information-loss measures computed by our code (:func:`broker.anonymize.information_loss`) on both
outputs against the same original: non-uniform entropy kept on the quasi-identifiers, the
discernibility metric (suppressed rows cost N each), suppressed rows, and the k that
:mod:`broker.metrics` measures on each output (suppressed rows excluded).
"""

from __future__ import annotations

import contextlib
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness
from adult import adult_like

from broker.anonymize import information_loss
from broker.anonymize.mondrian import mondrian
from broker.metrics import k_anonymity

QUASI_IDENTIFIERS = ["age", "sex", "race", "education", "marital-status", "native-country"]
SUPPRESSION_PERCENT = 5.0
TARGET_SECONDS_1M = 10.0
DEFAULTS = harness.Defaults(rows="100000,1000000", repeats=3, budget=600.0, quick_budget=30.0)

EDUCATION_LEVEL = {
    "Preschool": "No-diploma",
    "1st-4th": "No-diploma",
    "5th-6th": "No-diploma",
    "7th-8th": "No-diploma",
    "9th": "No-diploma",
    "10th": "No-diploma",
    "11th": "No-diploma",
    "12th": "No-diploma",
    "HS-grad": "HS-grad",
    "Some-college": "College",
    "Assoc-voc": "College",
    "Assoc-acdm": "College",
    "Bachelors": "Bachelors",
    "Masters": "Graduate",
    "Prof-school": "Graduate",
    "Doctorate": "Graduate",
}


def anjana_hierarchies(frame: pd.DataFrame) -> dict:
    """anjana's format: per QI, {level: array aligned with level 0 (the distinct values)}."""

    def levels(values, *mappings):
        values = np.asarray(values, dtype=object)
        result = {0: values}
        for mapping in mappings:
            result[len(result)] = np.array([mapping(v) for v in values], dtype=object)
        result[len(result)] = np.array(["*"] * len(values), dtype=object)
        return result

    def decade(width):
        return lambda a: f"[{a // width * width}, {a // width * width + width})"

    ages = np.sort(frame["age"].unique())
    hierarchy = {"age": levels(ages, decade(5), decade(10), decade(20))}
    distinct = {name: sorted(frame[name].unique()) for name in QUASI_IDENTIFIERS[1:]}
    hierarchy["sex"] = levels(distinct["sex"])
    hierarchy["race"] = levels(distinct["race"], lambda v: v if v == "White" else "Non-white")
    hierarchy["education"] = levels(distinct["education"], EDUCATION_LEVEL.__getitem__)
    hierarchy["marital-status"] = levels(
        distinct["marital-status"],
        lambda v: "Married" if v.startswith("Married") else "Not-married",
    )
    hierarchy["native-country"] = levels(
        distinct["native-country"], lambda v: v if v in ("United-States", "?") else "Other"
    )
    return hierarchy


def anjana_worker(path: str, k: int, out_path: str) -> None:
    """Child process: load the pickled frame, run anjana once, pickle its output."""
    from anjana.anonymity import k_anonymity as anjana_k_anonymity

    frame = pd.read_pickle(path)
    hierarchies = anjana_hierarchies(frame)
    harness.worker_started()
    with contextlib.redirect_stdout(sys.stderr):  # anjana prints progress lines
        timing = harness.timed(
            lambda: anjana_k_anonymity(
                frame, [], QUASI_IDENTIFIERS, k, SUPPRESSION_PERCENT, hierarchies
            ),
            1,
        )
    timing.result.to_pickle(out_path, protocol=pickle.HIGHEST_PROTOCOL)
    harness.worker_step("anjana", timing.best)
    harness.worker_done()


def run_anjana(frame: pd.DataFrame, k: int, budget: float) -> harness.PeerRun:
    """anjana's k-anonymity in a child process, killed after ``budget`` seconds of computing."""
    return harness.run_peer(__file__, frame, budget, str(k))


def anjana_output_aligned(out: pd.DataFrame, original: pd.DataFrame) -> pd.DataFrame:
    """anjana resets the index after suppressing (keeping the old one as column ``index``)."""
    if "index" in out.columns and "index" not in original.columns:
        out = out.set_index("index")
        out.index.name = None
    return out


@dataclass
class Row:
    rows: int
    method: str
    seconds: float | None
    finished: bool
    k: int | None = None
    classes: int | None = None
    suppressed: int | None = None
    utility: float | None = None
    discernibility: int | None = None
    note: str = ""


def measure(method, original, out, seconds, finished=True, note="") -> Row:
    loss = information_loss(original, out, QUASI_IDENTIFIERS)
    anonymity = k_anonymity(out, QUASI_IDENTIFIERS) if len(out) else None
    return Row(
        rows=len(original),
        method=method,
        seconds=seconds,
        finished=finished,
        k=anonymity.k if anonymity else None,
        classes=anonymity.equivalence_classes if anonymity else None,
        suppressed=loss.suppressed_rows,
        utility=loss.utility_percent,
        discernibility=loss.discernibility,
        note=note,
    )


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__.splitlines()[0], "anjana", DEFAULTS)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args(argv)
    if args.worker:
        path, output, k = args.worker
        anjana_worker(path, int(k), output)
        return 0

    plan = harness.plan(args, DEFAULTS)
    print(f"{harness.machine()}; k = {args.k} on {QUASI_IDENTIFIERS}")
    print(
        f"ours: best of {plan.repeats} runs; anjana: one run, suppression up to "
        f"{SUPPRESSION_PERCENT:g} %, budget {plan.budget.left:g} s in total"
    )

    results: list[Row] = []
    for rows in plan.rows:
        frame = adult_like(rows, args.seed)
        print(f"\n{rows} rows: distinct values {frame[QUASI_IDENTIFIERS].nunique().to_dict()}")
        timing = harness.timed(
            lambda frame=frame: mondrian(frame, QUASI_IDENTIFIERS, args.k), plan.repeats
        )
        result = timing.result
        print(
            f"  ours: best {timing.best:.3f} s, median {timing.median:.3f} s, "
            f"{result.classes} classes"
        )
        results.append(measure("ours (Mondrian)", frame, result.frame, timing.best))

        share = plan.budget.share()
        print(f"  anjana (budget {share:.0f} s) ...", flush=True)
        run = run_anjana(frame, args.k, share)
        plan.budget.spend(run.seconds)
        if run.finished and len(run.output):
            out = anjana_output_aligned(run.output, frame)
            results.append(measure("anjana", frame, out, run.seconds))
        elif run.finished:
            results.append(Row(rows, "anjana", run.seconds, True, note="returned no data"))
        else:
            note = f"failed: {run.error}" if run.error else "stopped at its budget"
            results.append(Row(rows, "anjana", run.seconds, False, note=note))
        print(f"  anjana {'finished' if run.finished else 'stopped'} after {run.seconds:.1f} s")

    print()
    table = harness.Table(
        ("rows", ">9"),
        ("method", "<16"),
        ("seconds", ">9"),
        ("speed-up", ">8"),
        ("k", ">4"),
        ("classes", ">7"),
        ("suppressed", ">10"),
        ("utility %", ">9"),
        ("discernibility", ">15"),
    )
    print(table.header())
    ours_seconds = {r.rows: r.seconds for r in results if r.method.startswith("ours")}
    for r in results:
        ours = r.method.startswith("ours")
        speed_up = r.seconds / ours_seconds[r.rows] if r.seconds and not ours else None
        print(
            table.row(
                r.rows,
                r.method,
                harness.bounded(r.seconds, r.finished, ".2f") if r.seconds else "-",
                "" if speed_up is None else harness.bounded(speed_up, r.finished, ".0f", "x"),
                harness.show(r.k, "d"),
                harness.show(r.classes, "d"),
                harness.show(r.suppressed, "d"),
                harness.show(r.utility, ".2f"),
                harness.show(r.discernibility, "d"),
            )
            + (f"  ({r.note})" if r.note else "")
        )
    print(
        "\nspeed-up = anjana seconds / ours; '>=' marks an anjana run stopped at its budget (a\n"
        "lower bound). k, classes: measured by broker.metrics on each output (suppressed rows\n"
        "excluded). utility % = non-uniform entropy kept on the quasi-identifiers;\n"
        "discernibility = sum of squared class sizes + N per suppressed row (lower is better);\n"
        "both by broker.anonymize.information_loss against the same original."
    )
    at_1m = [r for r in results if r.rows == 1_000_000 and r.method.startswith("ours")]
    if at_1m:
        verdict = harness.verdict(at_1m[0].seconds <= TARGET_SECONDS_1M)
        print(
            f"\nTarget: Mondrian on 1,000,000 rows x {len(QUASI_IDENTIFIERS)} QIs in "
            f"<= {TARGET_SECONDS_1M:g} s: {at_1m[0].seconds:.2f} s -> {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

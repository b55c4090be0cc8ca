"""What the benchmark scripts share: options, timing, memory, the peer's run, the figures table.

Each script times our code in its own process and a peer library (the named baseline) once, in a
child process the script starts again as a worker (``script --worker FRAME OUTPUT [ARG ...]``):

- the child reads the frame pickled in ``FRAME``, calls :func:`worker_started` (loading is not the
  peer's time), reports each timed step with :func:`worker_step`, may pickle what the peer made to
  ``OUTPUT``, and ends with :func:`worker_done`;
- :func:`run_peer` kills it once it has computed for its share of the peer's :class:`Budget`.
  A stopped run's seconds are a lower bound on the peer's time, shown ``>= X`` (:func:`bounded`).
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from adult import SEED

QUICK_ROWS = "2000,20000"
QUICK_REPEATS = 2
LOAD_SECONDS = 120  # for the child to load its pickled frame, not counted in the budget


# Options -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Defaults:
    """A script's full run (``--quick`` runs ``QUICK_ROWS`` ``QUICK_REPEATS`` times instead)."""

    rows: str  # comma-separated row counts
    repeats: int  # timed repeats of ours
    budget: float  # seconds of the peer's computing over all row counts
    quick_budget: float


@dataclass(frozen=True)
class Plan:
    rows: list[int]
    repeats: int
    budget: Budget


def parser(description: str, peer: str, defaults: Defaults) -> argparse.ArgumentParser:
    """The options every script has; a script adds its own before parsing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", default=None, help="comma-separated row counts")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats of ours")
    parser.add_argument(
        f"--{peer}-budget",
        dest="budget",
        type=float,
        metavar="SECONDS",
        default=None,
        help=f"seconds of {peer} computing allowed in total over all row counts (default "
        f"{defaults.budget:g}); time a smaller table leaves unused passes to the next",
    )
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    return parser


def plan(args: argparse.Namespace, defaults: Defaults) -> Plan:
    """Row counts, repeats and the peer's budget: as given, else ``--quick``'s or a full run's."""
    rows = [int(r) for r in (args.rows or (QUICK_ROWS if args.quick else defaults.rows)).split(",")]
    repeats = args.repeats or (QUICK_REPEATS if args.quick else defaults.repeats)
    budget = args.budget or (defaults.quick_budget if args.quick else defaults.budget)
    return Plan(rows, repeats, Budget(budget, len(rows)))


def machine() -> str:
    """Versions and cores, to print before the figures."""
    return (
        f"python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pd.__version__}, "
        f"{os.cpu_count()} CPUs"
    )


# Timing and memory -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    seconds: list[float]  # one per run
    result: object  # what the last run returned

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def timed(function: Callable[[], object], repeats: int) -> Timing:
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return Timing(seconds, result)


def tracemalloc_peak(function: Callable[[], object]) -> float:
    """MiB of the tracemalloc peak while ``function`` runs (Python and numpy allocations)."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def rss_peak_growth(function: Callable[[], object]) -> float | None:
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


def _status_kib(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def time_process(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process, from ``/usr/bin/time``; exits the script
    with the command's last line on stderr when it fails."""
    timed = time_process_cpu(command, cwd)
    return timed.seconds, timed.rss


@dataclass(frozen=True)
class Timed:
    seconds: float  # wall
    cpu: float  # user + system seconds
    rss: float  # peak MiB


def time_process_cpu(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> Timed:
    """:func:`time_process` with the process's CPU seconds (user + system), which a machine
    shared with other work changes less than wall seconds; ``env`` replaces the environment."""
    result = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", *command],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        env=env,
    )
    *said, figures = result.stderr.strip().splitlines()
    if result.returncode != 0:  # /usr/bin/time added "Command exited with non-zero status N"
        sys.exit(f"{command[:4]} failed: {said[-2] if len(said) > 1 else result.returncode}")
    seconds, user, system, kib = figures.split()
    return Timed(float(seconds), float(user) + float(system), int(kib) / 1024)


# The peer, in a child process --------------------------------------------------------------------


class Budget:
    """Seconds of the peer's computing over all row counts.

    Each row count gets an equal share of what is left, so time a smaller table leaves unused
    passes to the next.
    """

    def __init__(self, seconds: float, runs: int):
        self.left = seconds
        self._runs = runs

    def share(self) -> float:
        return self.left / self._runs

    def spend(self, seconds: float) -> None:
        self.left -= min(seconds, self.share())
        self._runs -= 1


@dataclass
class PeerRun:
    seconds: float  # the sum of its steps' seconds; when stopped, how long it had run
    finished: bool
    steps: list[dict]  # the steps it reported: name, seconds, value
    output: object | None  # what the worker pickled, when finished
    error: str | None = None

    @property
    def values(self) -> dict:
        """Step name -> the value it computed, for the steps that finished."""
        return {step["name"]: step["value"] for step in self.steps}


def run_peer(script: str, frame: pd.DataFrame, budget: float, *worker_args: str) -> PeerRun:
    """``script --worker`` on ``frame``, killed after ``budget`` seconds of computing."""
    with (
        tempfile.TemporaryDirectory() as directory,
        open(os.path.join(directory, "stderr"), "w+") as errors,
    ):
        path = os.path.join(directory, "frame.pkl")
        output = os.path.join(directory, "output.pkl")
        frame.to_pickle(path, protocol=pickle.HIGHEST_PROTOCOL)
        # stderr goes to a file: a stream of warnings must not fill a pipe and stall the child.
        child = subprocess.Popen(
            [sys.executable, script, "--worker", path, output, *worker_args],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in child.stdout], daemon=True).start()

        steps: list[dict] = []
        started = None
        load_deadline = time.monotonic() + LOAD_SECONDS
        while True:
            deadline = load_deadline if started is None else started + budget
            try:
                event = json.loads(lines.get(timeout=max(deadline - time.monotonic(), 0.01)))
            except queue.Empty:
                if child.poll() is not None and lines.empty():
                    errors.seek(0)
                    error = errors.read().strip().splitlines()
                    spent = sum(step["seconds"] for step in steps)
                    return PeerRun(spent, False, steps, None, error[-1] if error else "child died")
                if time.monotonic() < deadline:
                    continue
                child.kill()
                child.wait()
                elapsed = 0.0 if started is None else time.monotonic() - started
                return PeerRun(elapsed, False, steps, None)
            if event["event"] == "start":
                started = time.monotonic()
            elif event["event"] == "step":
                steps.append(event)
            else:  # done
                child.wait()
                made = pd.read_pickle(output) if os.path.exists(output) else None
                return PeerRun(sum(step["seconds"] for step in steps), True, steps, made)


def worker_started() -> None:
    """Child side: the peer's timed work begins now."""
    _tell_parent(event="start")


def worker_step(name: str, seconds: float, value: float | None = None) -> None:
    """Child side: one timed step of the peer, and the value it computed if any."""
    _tell_parent(event="step", name=name, seconds=seconds, value=value)


def worker_done() -> None:
    """Child side: every step is reported, and the output (if any) is written."""
    _tell_parent(event="done")


def _tell_parent(**event) -> None:
    print(json.dumps(event), flush=True)


# Figures -----------------------------------------------------------------------------------------


class Table:
    """Columns of figures separated by ``|``; each column is a title and an alignment spec."""

    def __init__(self, *columns: tuple[str, str]):
        self.columns = columns

    def header(self) -> str:
        titles = self.row(*(title for title, _spec in self.columns))
        return titles + "\n" + "-" * len(titles)

    def row(self, *cells) -> str:
        return " | ".join(
            format(cell, spec) for cell, (_title, spec) in zip(cells, self.columns, strict=True)
        )


def show(value, spec: str) -> str:
    """``value`` formatted, or ``-`` when there is none."""
    return "-" if value is None else format(value, spec)


def bounded(value: float, finished: bool, spec: str, unit: str = "") -> str:
    """A figure of the peer's run: ``>=`` marks a lower bound (the run stopped at its budget)."""
    return f"{'' if finished else '>='}{value:{spec}}{unit}"


def verdict(met: bool) -> str:
    return "MET" if met else "NOT MET"

"""A large transfer through a real broker, against ``fedbroker analyze`` on the same file.

Generates an Adult-shaped CSV file (``--rows`` rows of ``--columns``: by default the 12 Adult
columns without fnlwgt, capital-gain and capital-loss, about 92 bytes a row), starts the broker
(one worker process, on PostgreSQL when a server answers at ``--database``, else SQLite) and two
member clouds on loopback as ``python -m demo`` does, then sends the file from Senegal to France
as one multipart transfer (declared quasi-identifiers age, education, marital-status,
occupation, sex, native-country, to which the broker adds the others; sensitive income;
``--anonymize auto``: the policies refuse the table as it is, so the broker generalizes it and
delivers the result). The three columns are left out because with them the transfer is
rejected: the generalized range labels of the capital amounts (``2174-14084``) are read as phone
numbers, which no policy lets leave. A file above the broker's
``BROKER_DECIDE_IN_BACKGROUND_ABOVE_BYTES`` is answered ``202 Accepted``: the script polls the
``Location`` until the job is done, then waits for the French inbox to hold the delivery.

It reports the seconds to the end of the upload, to the decision and to the delivery (from the
start of the upload), the job's stages as the broker announced them, and the broker process's
peak RSS (``VmHWM`` in ``/proc/PID/status``; its RSS once idle, before the upload, beside it).
Baseline, in the same run, each a separate process under ``/usr/bin/time`` once the federation
has stopped: ``fedbroker analyze FILE --engine duckdb`` and ``--engine pandas`` (up to its 20M
cells) with the quasi-identifiers and sensitive attributes the broker measured (it adds every
attribute that measures as a quasi-identifier), so the three produce the same report.

    .venv/bin/python benchmarks/transfer.py --rows 1000000

It also prints the CPU seconds of the broker process to the decision (every thread, from
``/proc/PID/stat``) beside those of each ``fedbroker analyze`` (user + system): on a machine
shared with other work they change less than wall seconds. It prints the broker's RSS sampled
every 20 ms, the most in each job stage, and with
``--profile FILE`` samples the broker process with py-spy during the transfer (raw collapsed
stacks, for ``flamegraph.pl`` or a few lines of Python).

Targets: decided within 1.25x of ``fedbroker analyze`` (duckdb) on the same file; the broker's
peak RSS at most 400 MiB above its RSS once idle.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import loopback  # first: it puts the repository on sys.path
from adult import write_csv
from harness import time_process_cpu, verdict
from loopback import ROOT, Federation

from broker.datasets.limits import ReadLimits

QUASI_IDENTIFIERS = ["age", "education", "marital-status", "occupation", "sex", "native-country"]
SENSITIVE = ["income"]
OTHERS = ["workclass", "education-num", "relationship", "race", "hours-per-week"]
POLL_SECONDS = 0.2
RSS_SAMPLE_SECONDS = 0.02


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--columns",
        type=lambda text: text.split(","),
        default=[*QUASI_IDENTIFIERS, *OTHERS, *SENSITIVE],
        metavar="A,B",
        help="the Adult columns the file holds (default: all but fnlwgt and the capital amounts)",
    )
    parser.add_argument("--anonymize", choices=("none", "auto"), default="auto")
    parser.add_argument(
        "--database",
        default=loopback.POSTGRES,
        help="a PostgreSQL server's URL (a fresh database is created there), or 'sqlite'",
    )
    parser.add_argument(
        "--broker-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a BROKER_* setting for the broker (repeatable), e.g. "
        "BROKER_IN_MEMORY_MAX_BYTES=1000000 to count a small file out of core",
    )
    parser.add_argument("--folder", default="/tmp", help="where to write the file and the spool")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for each step")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="sample the broker process with py-spy during the transfer (raw collapsed stacks)",
    )
    args = parser.parse_args()
    broker_env = dict(setting.split("=", 1) for setting in args.broker_env)
    with tempfile.TemporaryDirectory(prefix="fedbroker-transfer-", dir=args.folder) as folder:
        root = Path(folder)
        path = root / "adult.csv"
        write_csv(path, args.rows, args.columns)
        size = path.stat().st_size / 2**20
        url, drop = loopback.database(args.database, root)
        federation = Federation(root)
        try:
            running = loopback.start(federation, root, url, {"BROKER_WORKERS": "1", **broker_env})
            print(
                f"{args.rows:,} rows x {len(args.columns)} columns, {size:,.1f} MiB CSV, SN -> FR "
                f"(anonymize={args.anonymize}); broker on {url.split('@')[-1].split('///')[-1]}"
            )
            idle = _status_mib(running.broker.pid, "VmRSS")
            spy = _profiler(running.broker.pid, args.profile)
            sent = _send(running, path, args.anonymize, args.timeout)
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
                spy.wait(timeout=60)
            peak = _status_mib(running.broker.pid, "VmHWM")
        finally:
            federation.stop()
            drop()
        cli = [
            sys.executable,
            "-m",
            "broker.cli",
            "analyze",
            str(path),
            "--qi",
            ",".join(sent.quasi_identifiers),
            "--sensitive",
            ",".join(sent.sensitive),
            "--format",
            "json",
        ]
        duckdb = time_process_cpu([*cli, "--engine", "duckdb"], ROOT)
        pandas = None  # the pandas engine refuses what is over the cell limit
        if args.rows * len(args.columns) <= ReadLimits().max_cells:
            pandas = time_process_cpu([*cli, "--engine", "pandas"], ROOT)
    _report(sent, idle, peak, duckdb, pandas)


@dataclass
class Sent:
    """What happened to the transfer, in seconds from the start of its upload."""

    uploaded: float = 0.0
    decided: float | None = None
    delivered: float | None = None
    status: str = ""
    problem: str | None = None
    stages: dict[str, float] = field(default_factory=dict)  # stage -> when first seen
    stage_rss: dict[str, float] = field(default_factory=dict)  # stage -> most RSS seen, MiB
    rss: list[tuple[float, float]] = field(default_factory=list)  # (seconds, MiB) every 20 ms
    cpu: float = 0.0  # the broker's CPU seconds (user + system, every thread) to the decision
    quasi_identifiers: list[str] = field(default_factory=lambda: list(QUASI_IDENTIFIERS))
    sensitive: list[str] = field(default_factory=lambda: list(SENSITIVE))
    delivered_rows: int | None = None
    failed_rules: list[str] = field(default_factory=list)
    remedy_note: str | None = None


def _send(running: loopback.Running, path: Path, anonymize: str, timeout: float) -> Sent:
    """Upload the file as a transfer, follow a 202's Location until decided, wait for delivery;
    the broker's RSS sampled meanwhile, each stage's most (:func:`_by_stage`)."""
    sent = Sent()
    done = threading.Event()
    started = time.monotonic()
    sent.cpu = _cpu_seconds(running.broker.pid)

    def sample() -> None:
        while not done.wait(RSS_SAMPLE_SECONDS):
            sent.rss.append((time.monotonic() - started, _status_mib(running.broker.pid, "VmRSS")))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _follow(sent, running, path, anonymize, timeout, started)
    finally:
        done.set()
        sampler.join()
    sent.stage_rss = _by_stage(sent.stages, sent.rss)
    return sent


def _by_stage(stages: dict[str, float], samples: list[tuple[float, float]]) -> dict[str, float]:
    """The most RSS sampled while each stage was the job's (from when it was first seen to when
    the next one was; a stage is seen at a poll, so the windows are as late as the polls;
    ``done`` runs to the delivery)."""
    ordered = [("upload", 0.0), *sorted(stages.items(), key=lambda item: item[1])]
    found = {}
    for position, (stage, start) in enumerate(ordered):
        end = ordered[position + 1][1] if position + 1 < len(ordered) else float("inf")
        within = [mib for at, mib in samples if start <= at < end]
        if within:
            found[stage] = max(within)
    return found


def _follow(
    sent: Sent, running: loopback.Running, path: Path, anonymize: str, timeout: float, start: float
) -> None:
    headers = {"Authorization": f"Bearer {running.source_key}"}
    with httpx.Client(base_url=running.broker_url, headers=headers, timeout=timeout) as http:
        with path.open("rb") as file:
            answer = http.post(
                "/v1/transfers",
                files={"file": (path.name, file, "text/csv")},
                data={
                    "destination": "fr-research",
                    "purpose": "research",
                    "quasi_identifiers": ",".join(QUASI_IDENTIFIERS),
                    "sensitive": ",".join(SENSITIVE),
                    "anonymize": anonymize,
                },
            )
        sent.uploaded = time.monotonic() - start
        if answer.status_code == 202:
            location, deadline = answer.headers["Location"], start + timeout
            while True:
                job = http.get(location).raise_for_status().json()
                sent.stages.setdefault(job["stage"], time.monotonic() - start)
                if job["state"] in ("done", "failed") or time.monotonic() > deadline:
                    break
                time.sleep(POLL_SECONDS)
            if job["state"] != "done":
                sent.status = f"job {job['state']}"
                sent.problem = str(job.get("problem"))
                return
            transfer = job["transfer"]
        elif answer.is_success:
            transfer = answer.json()
        else:
            sent.status, sent.problem = f"HTTP {answer.status_code}", answer.text[:300]
            return
        sent.decided = time.monotonic() - start
        sent.cpu = _cpu_seconds(running.broker.pid) - sent.cpu
    sent.status = transfer["status"]
    sent.quasi_identifiers, sent.sensitive = transfer["quasi_identifiers"], transfer["sensitive"]
    sent.delivered_rows = transfer["dataset"]["delivered_rows"]
    sent.failed_rules = [
        f"{r['scope']} {r['rule']} {r['attribute'] or ''}: {r['measured']} vs {r['threshold']}"
        for r in transfer["rules"]
        if not r["passed"]
    ]
    sent.remedy_note = (transfer["remedy"] or {}).get("note")
    if sent.status == "approved":
        deadline = start + timeout
        while not any(running.inbox.glob("*/meta.json")) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        if any(running.inbox.glob("*/meta.json")):
            sent.delivered = time.monotonic() - start
    return sent


def _profiler(pid: int, output: str | None) -> subprocess.Popen | None:
    """py-spy sampling ``pid`` into ``output`` (raw collapsed stacks), or None."""
    if output is None:
        return None
    spy = shutil.which("py-spy") or Path(sys.executable).with_name("py-spy")
    command = [str(spy), "record", "-p", str(pid), "-f", "raw", "-r", "200", "-o", output]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the upload starts
    return process


def _cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far, all its threads (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_mib(pid: int, name: str) -> float:
    """A ``VmRSS``/``VmHWM`` figure of a process, in MiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{name}:\s+(\d+) kB", text, re.MULTILINE).group(1)) / 1024


def _report(sent: Sent, idle: float, peak: float, duckdb, pandas) -> None:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    print(f"quasi-identifiers measured: {len(sent.quasi_identifiers)} ({sent.quasi_identifiers})")
    stages = ", ".join(f"{stage} {at:.1f}" for stage, at in sent.stages.items())
    print(f"decision: {sent.status}; job stages first seen at (s): {stages or '-'}")
    rss = ", ".join(f"{stage} {mib:,.0f}" for stage, mib in sent.stage_rss.items())
    print(f"broker RSS sampled every 20 ms, most in each stage (MiB): {rss or '-'}")
    if sent.problem:
        print(f"problem: {sent.problem}")
    if sent.failed_rules:
        print(f"failed rules: {'; '.join(sent.failed_rules)}")
    if sent.remedy_note:
        print(f"remedy: {sent.remedy_note}")
    print(f"{'run':>32} | {'seconds':>8} | {'CPU s':>6} | {'peak RSS MiB':>12}")
    print(f"{'broker: upload sent':>32} | {seconds(sent.uploaded):>8} | {'':>6} | {'':>12}")
    cpu = f"{sent.cpu:6.1f}" if sent.decided is not None else f"{'-':>6}"
    print(f"{'broker: decided':>32} | {seconds(sent.decided):>8} | {cpu} | {peak:12,.0f}")
    print(f"{'broker: delivered':>32} | {seconds(sent.delivered):>8} | {'':>6} | {'':>12}")
    print(
        f"{'fedbroker analyze --engine duckdb':>32} | {duckdb.seconds:8.1f} | {duckdb.cpu:6.1f} | "
        f"{duckdb.rss:12,.0f}"
    )
    if pandas is None:
        limit = f"over {ReadLimits().max_cells:,} cells"
        print(f"{'fedbroker analyze --engine pandas':>32} | {limit:>32}")
    else:
        print(
            f"{'fedbroker analyze --engine pandas':>32} | {pandas.seconds:8.1f} | "
            f"{pandas.cpu:6.1f} | {pandas.rss:12,.0f}"
        )
    print(
        f"broker RSS idle before the upload {idle:,.0f} MiB, peak {peak:,.0f} MiB "
        f"(+{peak - idle:,.0f} MiB); delivered rows: {sent.delivered_rows}"
    )
    print("Targets:")
    if sent.decided is None:
        print("  decided within 1.25x of fedbroker analyze (duckdb): not decided -> NOT MET")
    else:
        ratio = sent.decided / duckdb.seconds
        print(
            f"  decided within 1.25x of fedbroker analyze (duckdb): {ratio:.2f}x -> "
            f"{verdict(ratio <= 1.25)} (CPU seconds: {sent.cpu / duckdb.cpu:.2f}x)"
        )
    print(
        f"  broker peak RSS at most 400 MiB above idle: +{peak - idle:,.0f} MiB -> "
        f"{verdict(peak - idle <= 400)}"
    )


if __name__ == "__main__":
    main()

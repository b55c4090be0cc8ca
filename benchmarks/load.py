"""Decisions under load: a real federation on loopback, concurrent transfers, exactly-once delivery.

Starts the broker (on PostgreSQL when a server answers at ``--database``, else SQLite) and two
member clouds (Senegal, France) as processes, exactly as ``python -m demo`` does; then ``--clients``
threads send ``--rows``-row CSV transfers from Senegal to France for ``--seconds`` seconds. It
prints throughput, latency percentiles and errors, waits for every approved transfer to be
delivered, and checks the French inbox: each approved transfer exactly once.

It also says where the machine's CPU went per decision (the broker, the member clouds, the
clients, and the rest: PostgreSQL and the system), and so how many decisions these cores allow;
and, on PostgreSQL, what the database did per decision by its own statistics: transactions
committed and rolled back and connections opened (``pg_stat_database``), table scans and rows
written (``pg_stat_user_tables``), and statements when ``pg_stat_statements`` is loaded (else the
broker's own count of them, ``fedbroker_database_statements_total``). The database's are
counted from just before the first request until the broker has stopped (a backend reports its
statistics at the latest when it exits), so deliveries and the broker's polling are included.

Baselines, in the same run: the same decision's pure computation in this process
(``broker.fsla.decide.measure`` on the same table); and the floor of the machine: the same
clients sending the same requests for as long to a trivial FastAPI endpoint (:data:`floor_app`:
it reads the multipart upload and answers at once) served as ``fedbroker serve`` serves the broker
(the same worker processes, Nagle's algorithm off), so what the clients, the HTTP server and the
multipart parsing alone allow on these cores.

    .venv/bin/python benchmarks/load.py --seconds 15 --clients 8 --rows 1000
    .venv/bin/python benchmarks/load.py --seconds 15 --without-delivery   # decisions alone

The CPU is read from just before the first request until every approved transfer is in the
inbox, so deliveries still under way when the clients stop are counted.

Targets: at least 200 decisions/s for 1k-row transfers, p99 below 250 ms, no errors,
every approved transfer delivered exactly once, at most 10 ms of the whole machine's CPU a
decision. Beside the last it prints how much of those 10 ms the floor's request and the pure
computation take by themselves.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import httpx
import loopback  # first: it puts the repository on sys.path
import numpy as np
import pandas as pd
from fastapi import FastAPI, File, Form, UploadFile
from loopback import Federation

from broker.datasets import read_dataset
from broker.engines.pandas import PandasEngine
from broker.fsla.decide import measure
from demo.federation import port_or_free, wait_for

ROOT = Path(__file__).resolve().parents[1]

# The whole machine's CPU milliseconds a decision may take: 200 decisions/s on 2 cores.
BUDGET_MS = 10.0
DISEASES = ["flu", "malaria", "cholera", "measles", "hepatitis", "tb", "dengue", "typhoid"]

floor_app = FastAPI()


@floor_app.post("/v1/transfers")
def _floor_transfer(
    file: Annotated[UploadFile, File()],
    destination: Annotated[str, Form()],
    purpose: Annotated[str, Form()],
    quasi_identifiers: Annotated[str, Form()],
    sensitive: Annotated[str, Form()],
) -> dict:
    """The floor: the broker's request taken apart, its file read, and nothing decided."""
    file.file.read()
    return {"status": "approved"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="broker worker processes")
    parser.add_argument(
        "--delivery-concurrency",
        type=int,
        default=8,
        help="deliveries each broker worker has under way at once (BROKER_DELIVERY_CONCURRENCY)",
    )
    parser.add_argument(
        "--database",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL server's URL (a fresh database is created there), or 'sqlite'",
    )
    parser.add_argument(
        "--without-delivery",
        action="store_true",
        help="run the broker with its delivery worker off (BROKER_DELIVERY_ENABLED=false): "
        "what the decisions cost without their deliveries (none is checked)",
    )
    args = parser.parse_args()
    body = _table(args.rows)
    pure = _pure_computation(body)
    floor = _trivial_endpoint(body, args.clients, args.seconds, args.workers)
    with tempfile.TemporaryDirectory(prefix="fedbroker-load-") as folder:
        root = Path(folder)
        url, dropper = loopback.database(args.database, root)
        federation = Federation(root)
        try:
            running = loopback.start(
                federation,
                root,
                url,
                {
                    "BROKER_RATE_LIMIT": "1000000/minute",
                    "BROKER_WORKERS": str(args.workers),
                    "BROKER_DELIVERY_CONCURRENCY": str(args.delivery_concurrency),
                    **({"BROKER_DELIVERY_ENABLED": "false"} if args.without_delivery else {}),
                },
            )
            broker_url, key, inbox = running.broker_url, running.source_key, running.inbox
            admin, broker_pid = running.admin_token, running.broker.pid
            print(
                f"broker ({args.workers} workers) on {url.split('@')[-1]}; {args.clients} clients "
                f"for {args.seconds:g} s, {args.rows}-row CSV transfers SN -> FR"
            )
            members = [p.pid for p in federation.processes if p.pid != broker_pid]
            database_before = _database_counts(url)
            cpu = _cpu_seconds(broker_pid)
            member_cpu = sum(_cpu_seconds(pid) for pid in members)
            machine, clients = _machine_busy_seconds(), _own_cpu_seconds()
            results = _drive(broker_url, key, body, args.clients, args.seconds)
            last_decision = time.monotonic()
            approved = [r for r in results if r[1] == "approved"]
            delivered = [] if args.without_delivery else _wait_delivered(inbox, len(approved))
            behind = time.monotonic() - last_decision
            # Read once every approved transfer is in the inbox: deliveries still under way
            # when the clients stop are part of what the decisions cost.
            cpu = _cpu_seconds(broker_pid) - cpu
            member_cpu = sum(_cpu_seconds(pid) for pid in members) - member_cpu
            machine, clients = _machine_busy_seconds() - machine, _own_cpu_seconds() - clients
            states = _delivery_states(broker_url, admin)
            inside, statements, transactions = _broker_figures(broker_url, args.workers)
            _report(results, args.seconds, pure, approved, delivered, args.without_delivery)
            print(
                f"floor: a trivial FastAPI endpoint taking the same upload, served as the broker "
                f"is ({args.workers} workers), the same clients: {floor.told}"
            )
            print(f"the broker's delivery states of approved transfers: {states}")
            if not args.without_delivery:
                print(
                    f"deliveries ({args.delivery_concurrency} under way per worker): the inbox "
                    f"held every approved transfer {behind:.1f} s after the last decision, "
                    f"{len(delivered) / (args.seconds + behind):.1f} transfers/s decided and "
                    "delivered over the run"
                )
            print(
                f"the broker's processes used {cpu / max(len(results), 1) * 1000:.1f} ms of CPU "
                "per decision" + ("" if args.without_delivery else " (its deliveries included)")
            )
            per = 1000 / max(len(results), 1)
            print(
                f"the whole machine was busy {machine * per:.1f} ms of CPU per decision"
                + ("" if args.without_delivery else " (until the last delivery)")
                + ": the "
                f"broker {cpu * per:.1f}, the two member clouds {member_cpu * per:.1f}, the "
                f"clients {clients * per:.1f}, the rest (PostgreSQL, the system) "
                f"{(machine - cpu - member_cpu - clients) * per:.1f}; on "
                f"{os.cpu_count()} cores that allows at most "
                f"{os.cpu_count() / max(machine / max(len(results), 1), 1e-9):.0f} decisions/s"
            )
            least = floor.machine_ms + pure * 1000
            print(
                f"the target's budget, {BUDGET_MS:g} ms of the whole machine a decision: the "
                f"floor's request takes {floor.machine_ms:.1f} ms of it and the decision's "
                f"pure computation {pure * 1000:.1f}, so {least:.1f} ms before anything is "
                f"stored, audited or delivered ({BUDGET_MS - least:+.1f} ms left); measured "
                f"{machine * per:.1f} ms -> {'MET' if machine * per <= BUDGET_MS else 'NOT MET'}"
            )
            print(
                f"inside the broker, reading, deciding and recording took {inside * 1000:.1f} ms "
                "per transfer on average (its /metrics); the rest of the latency is HTTP, the "
                "multipart upload and waiting for a worker"
            )
            print(
                f"the broker sent its database {statements:.1f} statements per decision, BEGIN "
                f"and COMMIT aside, in {transactions:.1f} transactions: "
                f"{statements + 2 * transactions:.1f} round trips (every worker's own count "
                "from its /metrics, added up: the decisions, their deliveries and the polling "
                "until all were delivered)"
            )
            federation.stop()  # its backends exit, and so report their last statistics
            _report_database(database_before, _database_counts(url), len(results))
        finally:
            federation.stop()
            dropper()


def _table(rows: int) -> bytes:
    """A table the seed policies approve from SN to FR for research (wide, mixed classes)."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "age": rng.choice(["20-30", "30-40", "40-50", "50-60", "60-70"], rows),
            "region": rng.choice(["Dakar", "Thies", "Saint-Louis"], rows),
            "disease": rng.choice(DISEASES, rows),
        }
    )
    return frame.to_csv(index=False).encode()


def _pure_computation(body: bytes) -> float:
    """Seconds of the decision's pure computation (read, measure) on this table, best of 20."""
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        frame = read_dataset(body, "load.csv").frame
        measure(PandasEngine(frame), ("age", "region"), ("disease",))
        best = min(best, time.perf_counter() - start)
    return best


@dataclass(frozen=True)
class Floor:
    """What the trivial endpoint's run says: its line, and the whole machine's CPU
    milliseconds a request (the part of a decision's budget that HTTP and the upload take)."""

    told: str
    machine_ms: float


def _trivial_endpoint(body: bytes, clients: int, seconds: float, workers: int) -> Floor:
    """Rate and latencies of the same load against :data:`floor_app`, served as ``fedbroker
    serve`` serves the broker (:func:`broker.cli.serve.serve_workers`: the same workers on one
    socket with Nagle's algorithm off; plain ``uvicorn --workers`` leaves it on, and then
    delayed acknowledgements, not the framework, set the pace)."""
    port = port_or_free(8399)
    serve = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from broker.cli.serve import serve_workers; "
        "serve_workers('load:floor_app', workers=int(sys.argv[2]), host='127.0.0.1', "
        "port=int(sys.argv[3]), log_level='warning')"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", serve, str(ROOT / "benchmarks"), str(workers), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/docs", server, Path(os.devnull))
        machine, own, served = _machine_busy_seconds(), _own_cpu_seconds(), _cpu_seconds(server.pid)
        results = _drive(f"http://127.0.0.1:{port}", "none", body, clients, seconds)
        machine = _machine_busy_seconds() - machine
        own, served = _own_cpu_seconds() - own, _cpu_seconds(server.pid) - served
    finally:
        server.terminate()
        server.wait()
    latencies = sorted(r[0] for r in results)
    p50, p99 = (latencies[min(len(latencies) - 1, int(p * len(latencies)))] for p in (0.5, 0.99))
    per = 1000 / max(len(results), 1)
    return Floor(
        f"{len(results) / seconds:.1f} requests/s, p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} "
        f"ms; the whole machine busy {machine * per:.1f} ms of CPU a request (the server "
        f"{served * per:.1f}, the clients {own * per:.1f})",
        machine * per,
    )


def _database_counts(url: str) -> dict[str, int] | None:
    """PostgreSQL's own counts for the broker's database so far (None on SQLite): transactions
    committed and rolled back, connections opened (each one a server process started), table
    scans (sequential and by index), rows inserted, updated and deleted, and statements when
    ``pg_stat_statements`` is loaded. This reading is itself one committed transaction."""
    if not url.startswith("postgresql"):
        return None
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            transactions = connection.execute(
                sa.text(
                    "SELECT xact_commit, xact_rollback, sessions FROM pg_stat_database "
                    "WHERE datname = current_database()"
                )
            ).one()
            tables = connection.execute(
                sa.text(
                    "SELECT coalesce(sum(seq_scan), 0), coalesce(sum(idx_scan), 0), "
                    "coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), "
                    "coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables"
                )
            ).one()
            counts = dict(
                zip(
                    (
                        "commits",
                        "rollbacks",
                        "connections opened",
                        "sequential scans",
                        "index scans",
                    ),
                    (*transactions, *tables[:2]),
                    strict=True,
                )
            )
            counts["rows written"] = sum(tables[2:])
            try:
                with connection.begin_nested():
                    counts["statements"] = connection.execute(
                        sa.text(
                            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                            "WHERE dbid = (SELECT oid FROM pg_database "
                            "WHERE datname = current_database())"
                        )
                    ).scalar_one()
            except sa.exc.DBAPIError:  # the extension is not installed or not loaded
                pass
            connection.commit()
    finally:
        engine.dispose()
    return {name: int(value) for name, value in counts.items()}


def _report_database(before: dict | None, after: dict | None, decisions: int) -> None:
    """What PostgreSQL counted per decision between two :func:`_database_counts`."""
    if before is None or after is None:
        return
    spent = {name: after[name] - before[name] for name in after if name in before}
    spent["commits"] -= 1  # the first reading's own transaction
    spent["connections opened"] -= 1  # and its connection
    per = ", ".join(f"{value / max(decisions, 1):.2f} {name}" for name, value in spent.items())
    missing = "" if "statements" in spent else " (statements: pg_stat_statements is not loaded)"
    print(
        f"the database per decision, by PostgreSQL's statistics (deliveries and the broker's "
        f"polling included; a statement run outside any transaction counts as one commit): "
        f"{per}{missing}"
    )


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system) of a process and its descendants so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:  # not Linux, or gone
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return own + sum(_cpu_seconds(int(child)) for child in children)


def _machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (all but idle and I/O wait)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:  # not Linux
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    """This process's CPU seconds so far: the client threads."""
    times = os.times()
    return times.user + times.system


def _drive(broker_url: str, key: str, body: bytes, clients: int, seconds: float):
    """(seconds, decision or error) of every request the clients sent before the deadline."""
    results: list[tuple[float, str]] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client() -> None:
        with httpx.Client(base_url=broker_url, timeout=60) as http:
            while time.monotonic() < deadline:
                start = time.perf_counter()
                try:
                    answer = http.post(
                        "/v1/transfers",
                        headers={"Authorization": f"Bearer {key}"},
                        files={"file": ("load.csv", io.BytesIO(body), "text/csv")},
                        data={
                            "destination": "fr-research",
                            "purpose": "research",
                            "quasi_identifiers": "age,region",
                            "sensitive": "disease",
                        },
                    )
                    ok = answer.is_success
                    outcome = answer.json()["status"] if ok else f"HTTP {answer.status_code}"
                except httpx.HTTPError as error:
                    outcome = f"{type(error).__name__}: {error}"[:120]
                with lock:
                    results.append((time.perf_counter() - start, outcome))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _broker_figures(broker_url: str, workers: int) -> tuple[float, float, float]:
    """Mean seconds of the broker's own transfer handling, and statements sent to its database
    and transactions opened per decision (its deliveries and polling included), from the
    Prometheus metrics of every
    worker process: each keeps its own, and a scrape is answered by one of them, so the script
    scrapes until it has seen ``workers`` different ones (told apart by their decision counts
    and handling time, which no longer change once the clients have stopped) and adds them up.
    A worker delivers transfers the other decided: only the sum means something per decision."""
    seen: dict[tuple[float, float], dict[str, float]] = {}
    for _ in range(20 * workers):
        figures = _worker_figures(httpx.get(f"{broker_url}/metrics", timeout=10).text)
        seen[(figures["decisions"], figures["sum"])] = figures
        if len(seen) >= workers:
            break
    total = {name: sum(f[name] for f in seen.values()) for name in ("sum", "count", "decisions")}
    decisions = max(total["decisions"], 1.0)
    statements = sum(f["statements"] for f in seen.values()) / decisions
    transactions = sum(f["transactions"] for f in seen.values()) / decisions
    return total["sum"] / max(total["count"], 1.0), statements, transactions


def _worker_figures(text: str) -> dict[str, float]:
    figures = dict.fromkeys(("sum", "count", "decisions", "statements", "transactions"), 0.0)
    for line in text.splitlines():
        for field in ("sum", "count"):
            if line.startswith(f'fedbroker_analysis_seconds_{field}{{kind="transfer"}}'):
                figures[field] = float(line.split()[-1])
        if line.startswith("fedbroker_decisions_total{"):
            figures["decisions"] += float(line.split()[-1])
        if line.startswith("fedbroker_database_statements_total "):
            figures["statements"] = float(line.split()[-1])
        if line.startswith("fedbroker_database_transactions_total "):
            figures["transactions"] = float(line.split()[-1])
    return figures


def _delivery_states(broker_url: str, admin: str) -> dict[str, int]:
    """How many approved transfers the broker has delivered, still pending, failed (and why)."""
    states: dict[str, int] = {}
    offset = 0
    with httpx.Client(base_url=broker_url, timeout=30) as http:
        while True:
            page = http.get(
                "/v1/transfers",
                params={"status": "approved", "offset": offset, "limit": 100},
                headers={"Authorization": f"Bearer {admin}"},
            ).json()
            for item in page["items"]:
                delivery = item["delivery"]
                state = delivery["status"]
                if delivery.get("last_error") and state != "delivered":
                    state = f"{state}: {delivery['last_error'][:80]}"
                states[state] = states.get(state, 0) + 1
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return states


def _wait_delivered(inbox: Path, expected: int, timeout: float = 60.0) -> list[Path]:
    deadline = time.monotonic() + timeout
    while True:
        entries = sorted(inbox.glob("*/meta.json")) if inbox.exists() else []
        if len(entries) >= expected or time.monotonic() > deadline:
            return entries
        time.sleep(0.1)


def _report(results, seconds, pure, approved, delivered, without_delivery=False) -> None:
    latencies = sorted(r[0] for r in results)
    outcomes = {}
    for _latency, outcome in results:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    errors = sum(
        n
        for outcome, n in outcomes.items()
        if outcome not in ("approved", "rejected", "anonymization_required")
    )

    def percentile(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    rate = len(results) / seconds
    print(f"{'decisions/s':>12} | {'p50 ms':>7} | {'p95 ms':>7} | {'p99 ms':>7} | outcomes")
    print(
        f"{rate:12.1f} | {percentile(0.5):7.0f} | {percentile(0.95):7.0f} | "
        f"{percentile(0.99):7.0f} | {outcomes}"
    )
    print(
        f"baseline: the decision's pure computation takes {pure * 1000:.1f} ms "
        f"({1 / pure:.0f} decisions/s on one core); mean latency "
        f"{statistics.fmean(latencies) * 1000:.0f} ms"
    )
    once = len(delivered) == len(approved) == len({p.parent.name for p in delivered})
    if without_delivery:
        print("delivered exactly once: not checked (the delivery worker is off)")
    else:
        print(
            f"delivered exactly once: {len(delivered)} inbox entries for {len(approved)} "
            f"approved -> {'yes' if once else 'NO'}"
        )
    print("Targets:")
    print(f"  >= 200 decisions/s: {rate:.0f} -> {'MET' if rate >= 200 else 'NOT MET'}")
    p99 = percentile(0.99)
    print(f"  p99 < 250 ms: {p99:.0f} ms -> {'MET' if p99 < 250 else 'NOT MET'}")
    print(f"  0 errors: {errors} -> {'MET' if errors == 0 else 'NOT MET'}")
    if not without_delivery:
        print(f"  exactly once: {'MET' if once else 'NOT MET'}")


if __name__ == "__main__":
    main()

"""The federation overview over many transfers, against a bare count and against counting in Python.

Fills a throwaway database (PostgreSQL when a server answers at ``--database``, else SQLite)
with ``--rows`` decisions, each a copy of one real decision made by the broker (the same report,
rules and dataset JSON, so the table's rows are as wide as real ones), spread over 12 members in
4 jurisdictions (one member down), ``--days`` days and the three statuses, with an outbox row
per approved one (mostly delivered, some pending, failed or held). Then, after ``VACUUM
ANALYZE`` (PostgreSQL), it times:

- ours: ``broker.federation.service.federation_overview`` (its four aggregate queries and the
  pure function), best and median of ``--repeats``, and each query alone;
- baseline: ``SELECT count(*) FROM transfers``, the least a database does to count anything of
  every transfer;
- naive: what the overview counts, read into Python row by row (source, destination, status and
  day of every transfer) and counted there.

    .venv/bin/python benchmarks/overview.py --rows 1000000

Target (issue 15): the overview of 1,000,000 transfers within 1 s, no transfer read into Python.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import loopback  # first: it puts the repository on sys.path
from fastapi.testclient import TestClient
from loopback import POSTGRES, ROOT
from sqlalchemy import text

from broker.config import Settings
from broker.federation import repository, service
from broker.main import create_app
from broker.storage.db import make_engine, make_sessionmaker

TOKEN = "benchmark-admin-token-0123456789"
MEMBERS = [  # id, jurisdiction
    ("sn-hospital", "SN"),
    ("sn-lab", "SN"),
    ("fr-research", "FR"),
    ("fr-lab", "FR"),
    ("ng-health", "NG"),
    ("ng-lab", "NG"),
    ("ke-health", "KE"),
    ("ke-lab", "KE"),
    ("sn-clinic", "SN"),
    ("fr-clinic", "FR"),
    ("ng-clinic", "NG"),
    ("ke-clinic", "KE"),
]


def template(url: str, root: Path) -> str:
    """Register the members and make one real decision through the broker; its id."""
    settings = Settings(
        database_url=url,
        admin_token=TOKEN,
        policy_dir=ROOT / "policies",
        signing_key_dir=root / "keys",
        spool_dir=root / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
        delivery_enabled=False,
        jobs_enabled=False,
        health_check_enabled=False,
    )
    admin = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(settings)) as client:
        keys = {}
        for member_id, jurisdiction in MEMBERS:
            answer = client.post(
                "/v1/members",
                headers=admin,
                json={
                    "id": member_id,
                    "name": member_id,
                    "jurisdiction": jurisdiction,
                    "inbox_url": f"http://127.0.0.1:9/{member_id}/inbox",
                },
            )
            keys[member_id] = answer.json()["api_key"]
        data = (ROOT / "tests" / "fixtures" / "patients_published.csv").read_bytes()
        answer = client.post(
            "/v1/transfers",
            headers={"Authorization": f"Bearer {keys['sn-hospital']}"},
            files={"file": ("patients.csv", data, "text/csv")},
            data={
                "destination": "fr-research",
                "purpose": "research",
                "quasi_identifiers": "Age,Gender",
                "sensitive": "Disease",
            },
        )
        return answer.json()["id"]


def fill(engine, template_id: str, rows: int, days: int) -> None:
    """``rows`` copies of the template decision, then their outbox rows, in a few statements."""
    postgres = engine.dialect.name == "postgresql"
    ids = ", ".join(f"'{member}'" for member, _ in MEMBERS)
    series = (
        f"generate_series(0, {rows - 1}) AS g(n)"
        if postgres
        else "(WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s "
        f"WHERE n < {rows - 1}) SELECT n FROM s) AS g"
    )
    pick = "(ARRAY[{ids}])[1 + (g.n * {k}) % 12]" if postgres else None

    def member(k: int) -> str:
        if postgres:
            return pick.format(ids=ids, k=k)
        cases = " ".join(f"WHEN {i} THEN '{m}'" for i, (m, _) in enumerate(MEMBERS))
        return f"CASE (g.n * {k}) % 12 {cases} END"

    statuses = (
        "CASE g.n % 10 WHEN 0 THEN 'rejected' WHEN 1 THEN 'anonymization_required' "
        "ELSE 'approved' END"
    )
    if postgres:
        new_id = "md5(g.n::text)::uuid::text"
        moment = (
            f"now() - ((g.n % {days}) * interval '1 day') - ((g.n % 997) * interval '1 minute')"
        )
    else:
        new_id = "lower(hex(randomblob(16)))"
        moment = f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (g.n % {days}) || ' days')"
    columns = (
        "purpose, anonymize, quasi_identifiers, quasi_identifiers_inferred, sensitive, report, "
        "rules, remedy, policy_versions, dataset, request_fingerprint"
    )
    with engine.begin() as connection:
        connection.execute(
            text(
                f"INSERT INTO transfers (id, source_id, destination_id, status, created_at, "
                f"idempotency_key, {columns}) "
                f"SELECT {new_id}, {member(1)}, "
                f"CASE WHEN g.n % 50 = 0 THEN 'not-a-member' ELSE {member(7)} END, "
                f"{statuses}, {moment}, NULL, {columns} FROM transfers t, {series} "
                "WHERE t.id = :template"
            ),
            {"template": template_id},
        )
        connection.execute(text("DELETE FROM deliveries"))
        connection.execute(
            text(
                "INSERT INTO deliveries (transfer_id, status, attempts, next_attempt_at, "
                "payload_type) SELECT id, CASE WHEN substr(id, 1, 2) = '00' THEN 'failed' "
                "WHEN substr(id, 1, 1) = '1' THEN 'pending' ELSE 'delivered' END, 1, created_at, "
                "'text/csv' FROM transfers WHERE status = 'approved'"
            )
        )
        connection.execute(
            text(
                "UPDATE member_health SET state = "
                "CASE member_id WHEN 'ke-lab' THEN 'down' ELSE 'up' END"
            )
        )
    if postgres:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE"))


def timed(call, repeats: int) -> tuple[float, float, object]:
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        seconds.append(time.perf_counter() - start)
    return min(seconds), statistics.median(seconds), result


def naive(session) -> Counter:
    """What the overview counts, read row by row into Python and counted there."""
    counts: Counter = Counter()
    query = text("SELECT source_id, destination_id, status, created_at FROM transfers")
    for source, destination, status, created in session.execute(query):
        counts[(source, destination, status)] += 1
        counts[(str(created)[:10], status)] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--database", default=POSTGRES, help="a PostgreSQL server, or 'sqlite'")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the database (to EXPLAIN its queries) and say where",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fedbroker-overview-") as folder:
        root = Path(folder)
        url, drop = loopback.database(options.database, root)
        try:
            run(url, root, options)
        finally:
            if options.keep:
                print(f"kept: {url}")
            else:
                drop()


def run(url: str, root: Path, options) -> None:
    template_id = template(url, root)
    engine = make_engine(url)
    start = time.perf_counter()
    fill(engine, template_id, options.rows, options.days)
    filled = time.perf_counter() - start
    factory = make_sessionmaker(engine)
    with factory() as session:
        total = session.scalar(text("SELECT count(*) FROM transfers"))
        size = (
            session.scalar(text("SELECT pg_total_relation_size('transfers')"))
            if engine.dialect.name == "postgresql"
            else None
        )
    where = url.rsplit("@", 1)[-1] if "@" in url else engine.dialect.name
    print(
        f"{total:,} transfers on {engine.dialect.name} ({where}), filled in {filled:.1f} s"
        + (f"; transfers table {size / 2**20:,.0f} MiB with its indexes" if size else "")
    )

    def overview():
        with factory() as session:
            return service.federation_overview(session, days=30)

    def query(name):
        def call():
            with factory() as session:
                if name == "day_rows":
                    from datetime import UTC, datetime, timedelta

                    return getattr(repository, name)(session, datetime.now(UTC) - timedelta(30))
                return getattr(repository, name)(session)

        return call

    def bare():
        with factory() as session:
            return session.scalar(text("SELECT count(*) FROM transfers"))

    def read_all():
        with factory() as session:
            return naive(session)

    print(f"{'run':>40} | {'best s':>7} | {'median s':>8} | rows to Python")
    best, median, found = timed(overview, options.repeats)
    rows = len(found.members) + len(found.transfers_by_jurisdiction_pair) + 30 + 4
    print(f"{'ours: GET /v1/federation/overview':>40} | {best:7.3f} | {median:8.3f} | ~{rows}")
    for name in ("member_rows", "pair_rows", "day_rows", "delivery_rows"):
        b, m, result = timed(query(name), options.repeats)
        print(f"{'  ' + name:>40} | {b:7.3f} | {m:8.3f} | {len(result)}")
    bare_best, bare_median, _ = timed(bare, options.repeats)
    label = "baseline: SELECT count(*) FROM transfers"
    print(f"{label:>40} | {bare_best:7.3f} | {bare_median:8.3f} | 1")
    nb, nm, _ = timed(read_all, max(1, options.repeats // 2))
    print(f"{'naive: every transfer read into Python':>40} | {nb:7.3f} | {nm:8.3f} | {total:,}")
    print(
        f"pairs: {len(found.transfers_by_jurisdiction_pair)}, decisions in 30 days: "
        f"{found.decisions_over_time.decisions.total:,}, deliveries: "
        f"{found.deliveries.model_dump()}"
    )
    met = "MET" if median <= 1.0 else "NOT MET"
    print(
        f"Target: the overview of {total:,} transfers within 1 s: {median:.3f} s median -> {met}; "
        f"{median / bare_median:.1f}x the bare count, {nm / median:.0f}x faster than reading "
        "them into Python"
    )
    engine.dispose()


if __name__ == "__main__":
    sys.exit(main())

"""Prometheus metrics of one broker process, served at ``/metrics``.

- ``http_requests_total`` and ``http_request_duration_seconds`` by route, method and status
  (``prometheus-fastapi-instrumentator``);
- ``fedbroker_decisions_total{status, source_jurisdiction, destination_jurisdiction}``;
- ``fedbroker_deliveries_total{outcome}``: ``delivered``, ``retrying``, ``failed``;
- ``fedbroker_outbox_pending`` and ``fedbroker_outbox_oldest_pending_seconds``, read from the
  database at each scrape (so they hold across broker processes);
- ``fedbroker_analysis_seconds{kind}``: measuring and deciding (``transfer``) or measuring only
  (``analyze``);
- ``fedbroker_database_errors_total``: requests answered 503 because the database was busy or
  unreachable;
- ``fedbroker_database_statements_total``: statements this process sent to its database (its
  requests and its background threads; the driver's BEGIN and COMMIT aside);
- ``fedbroker_database_transactions_total``: transactions it opened, each one more BEGIN and
  COMMIT (or ROLLBACK) to the database (short reads run outside any transaction aside).

Counters are per process: with several workers or brokers, sum them in Prometheus.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from fastapi import FastAPI, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_fastapi_instrumentator import Instrumentator
from sqlalchemy import Connection, Engine, event, func, select
from sqlalchemy.orm import Session, sessionmaker

from broker.delivery.models import Delivery
from broker.storage.db import AUTOCOMMIT
from broker.transfers.models import Transfer
from broker.wire.statuses import DeliveryStatus

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Monitoring:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter(
            "fedbroker_decisions",
            "Transfer decisions by status and by the two jurisdictions",
            ["status", "source_jurisdiction", "destination_jurisdiction"],
            registry=self.registry,
        )
        self.deliveries = Counter(
            "fedbroker_deliveries",
            "Delivery attempts by outcome (delivered, retrying, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.analysis_seconds = Histogram(
            "fedbroker_analysis_seconds",
            "Seconds spent measuring and deciding (transfer) or measuring (analyze)",
            ["kind"],
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.database_errors = Counter(
            "fedbroker_database_errors",
            "Requests answered 503 because the database was busy or unreachable",
            registry=self.registry,
        )
        self.database_statements = Counter(
            "fedbroker_database_statements",
            "Statements this process sent to its database (BEGIN and COMMIT aside)",
            registry=self.registry,
        )

        self.database_transactions = Counter(
            "fedbroker_database_transactions",
            "Transactions this process opened on its database (each a BEGIN and a COMMIT or "
            "ROLLBACK; statements run outside any transaction aside)",
            registry=self.registry,
        )

    def count_statements(self, engine: Engine) -> None:
        """Count every statement sent on ``engine``'s connections, and every transaction."""
        event.listen(engine, "before_cursor_execute", self._one_statement)
        event.listen(engine, "begin", self._one_transaction)

    def _one_statement(self, *_args) -> None:
        self.database_statements.inc()

    def _one_transaction(self, connection: Connection) -> None:
        if connection.get_execution_options().get("isolation_level") != AUTOCOMMIT:
            self.database_transactions.inc()

    def install(self, app: FastAPI) -> None:
        """Instrument every route and serve ``/metrics`` (no authentication: counts only)."""
        Instrumentator(registry=self.registry, excluded_handlers=["/metrics"]).instrument(app)

        @app.get(
            "/metrics",
            tags=["Health"],
            summary="Prometheus metrics (text exposition format)",
            description="Counts of this broker process only (requests, decisions, outbox, "
            "database errors); no authentication, nothing personal.",
            response_class=PlainTextResponse,
            responses={200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {}}}},
        )
        def get_metrics() -> Response:
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

    def watch_outbox(self, factory: sessionmaker[Session]) -> None:
        self.registry.register(_Outbox(factory))

    def count_decision(self, status: str, rules: list[dict]) -> None:
        """One decision, labelled with the jurisdictions its federation rules name."""
        by_rule = {r["rule"]: r["jurisdiction"] for r in rules}
        source = by_rule.get("destination_known", "unknown")  # judged in the source's name
        self.decisions.labels(status, source, by_rule.get("destination_active", "unknown")).inc()

    def count_delivery(self, outcome: str) -> None:
        self.deliveries.labels(outcome).inc()

    def timed(self, kind: str):
        return self.analysis_seconds.labels(kind).time()


class _Outbox:
    """Outbox depth and the age of its oldest pending delivery, read at each scrape."""

    def __init__(self, factory: sessionmaker[Session]):
        self.factory = factory

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())  # read lazily: no database query when the collector is registered

    def collect(self) -> Iterator[GaugeMetricFamily]:
        pending = GaugeMetricFamily("fedbroker_outbox_pending", "Deliveries waiting to be made")
        oldest = GaugeMetricFamily(
            "fedbroker_outbox_oldest_pending_seconds",
            "Age of the oldest pending delivery's transfer (0 when none)",
        )
        with self.factory() as session:
            count, first = session.execute(
                select(func.count(), func.min(Transfer.created_at))
                .select_from(Delivery)
                .join(Transfer, Transfer.id == Delivery.transfer_id)
                .where(Delivery.status == DeliveryStatus.PENDING)
            ).one()
            session.rollback()
        pending.add_metric([], count)
        age = 0.0
        if first is not None:
            first = first if first.tzinfo else first.replace(tzinfo=UTC)
            age = max(0.0, (datetime.now(UTC) - first).total_seconds())
        oldest.add_metric([], age)
        yield pending
        yield oldest

"""The broker's FastAPI application: ``create_app(settings)``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from functools import partial

import httpx
from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline
from sqlalchemy import Connection
from sqlalchemy.orm import sessionmaker

from broker import flows
from broker.admins.router import router as admins_router
from broker.analysis.router import router as analysis_router
from broker.audit.router import router as audit_router
from broker.catalog.router import router as catalog_router
from broker.config import Settings, get_settings
from broker.console.router import router as console_router
from broker.delivery.keyring import KeyRing
from broker.delivery.router import router as keys_router
from broker.delivery.worker import DeliveryWorker
from broker.dsp.callbacks import TIMEOUT_SECONDS as CALLBACK_TIMEOUT
from broker.dsp.callbacks import Signer as CallbackSigner
from broker.dsp.callbacks import send_due
from broker.dsp.router import catalog_router as dsp_catalog
from broker.dsp.router import negotiation_router as dsp_negotiations
from broker.dsp.router import transfer_router as dsp_transfers
from broker.dsp.router import well_known as dsp_well_known
from broker.dsp.transfers import advance_due as advance_transfer_processes
from broker.federation.router import router as federation_router
from broker.members.health_checks import HealthChecker
from broker.members.router import router as members_router
from broker.negotiations.expiry import expire_waiting
from broker.negotiations.router import router as negotiations_router
from broker.policies import service as policies
from broker.policies.router import router as policies_router
from broker.policies.seed import load_records
from broker.storage.db import Timeouts, make_engine, make_sessionmaker, startup_lock, upgrade
from broker.transfers.jobs import Chore, JobRunner
from broker.transfers.router import router as transfers_router
from broker.web.errors import install_handlers
from broker.web.health import router as health_router
from broker.web.monitoring import Monitoring
from broker.web.rate_limits import RateLimiter
from broker.web.requests_log import configure_logging

log = logging.getLogger("broker")

DESCRIPTION = """
The federal broker of a federation of clouds. Member clouds send datasets to each other through
it; it measures how well each dataset is anonymized (Mmaq, k-anonymity, l-diversity,
t-closeness), checks the source's export rules and the destination's import rules (F-SLA records),
and approves, rejects or requires anonymization.

**Authorize** with an administrator's token or a member's API key (`Authorization: Bearer ...`).
Errors are RFC 9457 `application/problem+json`.
"""


def operation_id(route: APIRoute) -> str:
    """A route's OpenAPI ``operationId``: its function's name (``put_policy``), not FastAPI's
    default of name, path and method. Generated clients name their methods after it, so it
    must not change with a path: ``tests/broker/test_openapi.py`` lists every one."""
    return route.name


def create_app(settings: Settings | None = None, *, bind: Connection | None = None) -> FastAPI:
    """The broker app. ``bind``: run every session on this connection, in savepoints (tests
    roll the connection's transaction back afterwards); the schema must already be migrated."""
    settings = settings or get_settings()
    if settings.admin_token is None:
        raise ValueError(
            "BROKER_ADMIN_TOKEN is not set: the broker needs an admin token "
            "(at least 16 characters)"
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        records = load_records(settings.policy_dir)  # an invalid file stops the start
        if bind is None:
            engine = make_engine(settings.database_url, Timeouts.of(settings))
            app.state.sessionmaker = make_sessionmaker(engine)
        else:
            engine = bind.engine
            app.state.sessionmaker = sessionmaker(
                bind=bind, expire_on_commit=False, join_transaction_mode="create_savepoint"
            )
        app.state.engine = engine
        if bind is None:
            app.state.monitoring.count_statements(engine)
        with startup_lock(engine) if bind is None else nullcontext():
            if settings.apply_migrations and bind is None:
                upgrade(engine)
            with app.state.sessionmaker() as session:
                created = policies.seed(session, records)
        if created:
            log.info("seeded F-SLA records: %s", ", ".join(created))
        client = httpx.Client(timeout=settings.delivery_timeout_seconds, follow_redirects=False)
        app.state.monitoring.watch_outbox(app.state.sessionmaker)
        # Sessions on one bound connection (tests) cannot run in several threads at once.
        one_at_a_time = {"delivery_concurrency": 1} if bind is not None else {}
        worker = DeliveryWorker(
            app.state.sessionmaker,
            client,
            settings.model_copy(update=one_at_a_time),
            app.state.keyring,
            app.state.monitoring,
        )
        app.state.delivery_worker = worker
        if settings.dask_scheduler is not None:  # transfers by reference are counted there
            from broker.engines.dask import connect

            app.state.dask = connect(settings.dask_scheduler)
        expiry = Chore(
            settings.negotiation_sweep_seconds,
            partial(expire_waiting, app.state.sessionmaker, settings.negotiation_timeout_seconds),
        )
        callback_client = httpx.Client(timeout=CALLBACK_TIMEOUT, follow_redirects=False)
        callbacks = Chore(
            settings.protocol_callback_seconds,
            partial(
                send_due,
                app.state.sessionmaker,
                callback_client,
                settings.inbox_policy.refusal,
                CallbackSigner(app.state.keyring, settings.delivery_signature_seconds),
            ),
        )
        processes = Chore(  # before the callbacks, which send what it recorded
            settings.protocol_callback_seconds,
            partial(advance_transfer_processes, app.state.sessionmaker),
        )
        jobs = JobRunner(
            app.state.sessionmaker,
            settings,
            app.state.monitoring,
            on_approved=worker.wake,
            chores=[expiry, processes, callbacks],
        )
        app.state.job_runner = jobs
        health_client = httpx.Client(
            timeout=settings.health_check_timeout_seconds, follow_redirects=False
        )
        checker = HealthChecker(
            app.state.sessionmaker,
            health_client,
            settings,
            flows.record_health_check,
            on_up=lambda _: worker.wake(),
        )
        app.state.health_checker = checker
        if settings.delivery_enabled:
            worker.start()
        if settings.jobs_enabled:
            jobs.start()
        if settings.health_check_enabled:
            checker.start()
        try:
            yield
        finally:
            if settings.health_check_enabled:
                checker.stop()
            if settings.jobs_enabled:
                jobs.stop()
            if settings.delivery_enabled:
                worker.stop()
            if settings.dask_scheduler is not None:
                app.state.dask.close()
            health_client.close()
            callback_client.close()
            client.close()
            if bind is None:
                engine.dispose()

    app = FastAPIOffline(
        title="fedbroker",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        max_body_size=settings.max_upload_bytes,
        redoc_url=None,
        generate_unique_id_function=operation_id,
        swagger_ui_parameters={"persistAuthorization": True, "tryItOutEnabled": True},
    )
    app.state.settings = settings
    # Read (or, for local use, made) before serving: a broker that cannot sign must not start.
    app.state.keyring = KeyRing.load(settings.signing_key_dir, create=settings.signing_key_create)
    install_handlers(app)
    app.state.rate_limiter = RateLimiter(settings.rate_limit, settings.rate_limit_storage)
    app.state.console_sign_in_limiter = RateLimiter(
        settings.console_sign_in_rate, settings.rate_limit_storage, what="sign-in"
    )
    app.state.monitoring = Monitoring()
    app.state.monitoring.install(app)
    for router in (
        health_router,
        policies_router,
        members_router,
        transfers_router,
        catalog_router,
        negotiations_router,
        analysis_router,
        audit_router,
        admins_router,
        federation_router,
        keys_router,
        console_router,
        dsp_well_known,
        dsp_catalog,
        dsp_negotiations,
        dsp_transfers,
    ):
        app.include_router(router)

    @app.get("/", include_in_schema=False)
    def get_root() -> RedirectResponse:
        """A browser pointed at the broker lands on its API documentation (people sign in to
        the console at /console/)."""
        return RedirectResponse(app.docs_url or "/docs")

    return app


def worker_app() -> FastAPI:
    """The app of one worker process of ``fedbroker serve --workers N``, from ``BROKER_*``."""
    configure_logging()
    return create_app()

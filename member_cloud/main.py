"""The member cloud's FastAPI application: ``create_app(settings)``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import Depends, FastAPI
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fedbroker.client import BrokerKeys, Client
from member_cloud.auth import LocalTokenGuard, declare_bearer
from member_cloud.config import MemberSettings
from member_cloud.credentials import StartupError, resolve_api_key
from member_cloud.errors import install_handlers, responses
from member_cloud.market import catalog, negotiations
from member_cloud.retention import RetentionKeeper
from member_cloud.routes import datasets, deliveries, health, inbox, member, transfers
from member_cloud.storage import DatasetStore, Inbox, SeenNonces

log = logging.getLogger("member_cloud")

DESCRIPTION = """
A simulated member cloud of a fedbroker federation: it keeps local datasets, asks the federal
broker to send one to another member (the broker answers with its decision), and receives
approved transfers from the broker in its inbox (signed deliveries, each stored once).

Errors are RFC 9457 `application/problem+json`; problems the broker answers are passed through.
"""

AUTH_DESCRIPTION = """
Every route but `GET /livez`, `GET /readyz`, these docs and `POST /inbox` (signed by the broker)
needs `Authorization: Bearer <MEMBER_LOCAL_TOKEN>`: use *Authorize*.
"""

OPEN_DESCRIPTION = """
No `MEMBER_LOCAL_TOKEN` is set: this member cloud listens on a loopback address only, and its
API is open to every process of this machine.
"""

DOCS_URL = "/docs"
STATIC_URL = "/static-offline-docs"


class OneLineStartupFailure:
    """Report a ``StartupError`` from the lifespan as its one-line message, not a traceback
    (the server logs the message it receives with ``lifespan.startup.failed``)."""

    def __init__(self, app: ASGIApp, fastapi_app: FastAPI):
        self.app = app
        self.fastapi_app = fastapi_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def send_message(message: Message) -> None:
            error = getattr(self.fastapi_app.state, "startup_error", None)
            if message["type"] == "lifespan.startup.failed" and error is not None:
                message = {**message, "message": f"member cloud cannot start: {error}"}
            await send(message)

        await self.app(scope, receive, send_message)


def _start(app: FastAPI, settings: MemberSettings) -> str:
    """Create the data folders, then find or obtain the key at the broker."""
    try:
        app.state.datasets.prepare()
        app.state.inbox.prepare()
        app.state.nonces.prepare()
    except OSError as error:
        raise StartupError(f"cannot create the data folder {settings.data_dir}: {error}") from None
    return resolve_api_key(settings)


def create_app(settings: MemberSettings) -> FastAPI:
    """The member cloud app. Its lifespan finds or obtains the key at the broker
    (``member_cloud.credentials``) before the first request is served."""
    assert settings.data_dir is not None  # filled in by MemberSettings

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            api_key = await to_thread.run_sync(_start, app, settings)
        except StartupError as error:
            app.state.startup_error = error
            raise
        app.state.broker = Client(
            settings.broker_base_url, api_key, timeout=settings.broker_timeout_seconds
        )
        app.state.broker_keys = BrokerKeys(
            settings.data_dir / "broker-keys.json",
            app.state.broker.get_signing_keys,
            refresh=settings.broker_keys_refresh,
            max_age_seconds=settings.broker_keys_max_age_seconds,
        )
        if settings.local_token is None:
            log.warning(
                "MEMBER_LOCAL_TOKEN is not set: the API of member %s is open to every process "
                "of this machine (it listens on %s only); set it to require a bearer token",
                settings.id,
                settings.host,
            )
        log.info(
            "member %s (%s) ready: inbox %s, broker %s, data in %s",
            settings.id,
            settings.jurisdiction,
            settings.inbox_url,
            settings.broker_base_url,
            settings.data_dir,
        )
        keeper = RetentionKeeper(
            app.state.inbox, app.state.broker, settings.retention_sweep_seconds
        )
        app.state.retention = keeper
        keeper.start()
        try:
            yield
        finally:
            keeper.stop()
            app.state.broker.close()

    protected = settings.local_token is not None
    app = FastAPIOffline(
        title=f"fedbroker member cloud {settings.id}",
        version="0.1.0",
        description=DESCRIPTION + (AUTH_DESCRIPTION if protected else OPEN_DESCRIPTION),
        lifespan=lifespan,
        max_body_size=settings.max_upload_bytes,
        docs_url=DOCS_URL,
        redoc_url=None,
        static_url=STATIC_URL,
    )
    app.state.settings = settings
    app.state.datasets = DatasetStore(settings.data_dir / "datasets")
    app.state.inbox = Inbox(settings.data_dir / "inbox")
    app.state.nonces = SeenNonces(
        settings.data_dir / "nonces", settings.signature_tolerance_seconds
    )
    install_handlers(app, wrap=lambda stack: OneLineStartupFailure(stack, app))
    # public: health checks, and the broker's deliveries (signed instead)
    for router in (health, deliveries):
        app.include_router(router)
    # this member's own API: the local token, when set (LocalTokenGuard checks it)
    declared = [Depends(declare_bearer)] if protected else []
    unauthenticated = responses(401) if protected else {}
    for router in (member, datasets, transfers, inbox, catalog, negotiations):
        app.include_router(router, dependencies=declared, responses=unauthenticated)
    if settings.local_token is not None:  # = protected
        assert app.openapi_url is not None and app.swagger_ui_oauth2_redirect_url is not None
        read = frozenset({"GET", "HEAD"})
        app.add_middleware(
            LocalTokenGuard,
            token=settings.local_token.get_secret_value(),
            public={
                "/livez": read,
                "/readyz": read,
                DOCS_URL: read,
                app.swagger_ui_oauth2_redirect_url: read,
                app.openapi_url: read,
                "/inbox": frozenset({"POST"}),
            },
            public_prefixes=(STATIC_URL,),
            docs=DOCS_URL,
        )
    return app

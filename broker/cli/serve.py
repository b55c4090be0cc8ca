"""``fedbroker serve``: run the broker with uvicorn, after checking what would stop it at start.

A missing admin token, a bad seed file, an unusable signing key folder, an unreachable
database or a busy port is one line and exit status 2 here, not a traceback from inside the
server. When it stops (Ctrl-C, SIGTERM), one line on stderr says so.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

from broker.cli.common import CommandError, database_errors, load_settings

if TYPE_CHECKING:
    from broker.config import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "serve",
        help="run the federal broker (configured by BROKER_* variables)",
        description="Run the broker with uvicorn. Settings come from BROKER_* environment "
        "variables; --host and --port override BROKER_HOST and BROKER_PORT.",
    )
    command.add_argument("--host", help="address to listen on")
    command.add_argument("--port", type=int, help="port to listen on")
    command.add_argument("--workers", type=int, help="worker processes (BROKER_WORKERS)")
    command.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from broker.web.requests_log import configure_logging

    settings = load_settings(host=args.host, port=args.port, workers=args.workers)
    if settings.workers == 1:
        check_start(settings)
    else:
        # The checks read the seed files through the F-SLA models, which import most of the
        # broker (pandas among it): run them in a process of their own, so that this one, which
        # only supervises the workers and never serves, stays small.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(1, mp_context=context) as checking:
            checking.submit(check_start, settings).result()
    configure_logging()
    where = f"http://{settings.host}:{settings.port}"
    # uvicorn's records go to the JSON handler, with their request id (log_config=None).
    if settings.workers == 1:
        from broker.main import create_app

        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_level="info",
            log_config=None,
        )
        _stopped(where)
        return 0
    # Each worker process builds its own app from the same BROKER_* environment; migrations and
    # seeding run under the database's startup lock, so the workers can start together. This
    # process only supervises them: it does not build an app of its own.
    serve_workers(
        "broker.main:worker_app",
        factory=True,
        workers=settings.workers,
        host=settings.host,
        port=settings.port,
        log_level="info",
        log_config=None,
    )
    _stopped(where)
    return 0


def check_start(settings: Settings) -> None:
    """What would stop the broker at start, each a :class:`CommandError` of one line: a missing
    admin token, a bad seed file, an unusable signing key folder, an unreachable database or
    cluster, a busy port."""
    from broker.delivery.keyring import KeyRing
    from broker.policies.seed import load_records
    from broker.storage.db import Timeouts, make_engine
    from broker.wire.probes import port_in_use
    from broker.wire.signing import SignatureError

    if settings.admin_token is None:
        raise CommandError(
            "BROKER_ADMIN_TOKEN is not set: give the broker an admin token of "
            "at least 16 characters"
        )
    load_records(settings.policy_dir)  # a bad seed file is one line here, not a traceback
    try:  # and so is a signing key folder the broker cannot use
        KeyRing.load(settings.signing_key_dir, create=settings.signing_key_create)
    except (SignatureError, OSError) as error:
        raise CommandError(f"BROKER_SIGNING_KEY_DIR: {error}") from None
    with database_errors():  # an unreachable database too
        engine = make_engine(settings.database_url, Timeouts.of(settings))
        with engine.connect():
            pass
        engine.dispose()
    if settings.dask_scheduler is not None:  # and a cluster that does not answer
        _check_cluster(settings.dask_scheduler)
    if port_in_use(settings.host, settings.port):  # and a port another process holds
        raise CommandError(
            f"port {settings.port} on {settings.host} is in use by another process: choose "
            "another with --port or BROKER_PORT"
        )


def serve_workers(app: str, **options) -> None:
    """Run ``app`` (an import string) in uvicorn worker processes that share one listening
    socket with Nagle's algorithm off: how the broker is served with more than one worker, and
    how its benchmarks serve the baseline they compare it with."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(app, **options)
    Multiprocess(config, sockets=[listening_socket(config)]).run()


def _stopped(where: str) -> None:
    """What stopped, in words: the server's own records are JSON lines for a log collector."""
    print(f"fedbroker serve: the broker at {where} has stopped", file=sys.stderr)


def _check_cluster(address: str) -> None:
    try:
        from broker.engines.dask import connect

        connect(address).close()
    except ImportError:
        raise CommandError(
            "BROKER_DASK_SCHEDULER is set but Dask is not installed: pip install 'fedbroker[dask]'"
        ) from None
    except (OSError, ValueError) as error:
        raise CommandError(
            f"BROKER_DASK_SCHEDULER: no Dask scheduler answers at {address!r}: {error}"
        ) from None


def listening_socket(config) -> socket.socket:
    """The socket the worker processes share, as uvicorn binds it, with Nagle's algorithm off.

    The connections a worker accepts inherit ``TCP_NODELAY`` from it (Linux). uvicorn leaves it
    off on this socket (its issue 3149), and then each answer on a kept-alive connection waits
    for the client's delayed acknowledgement, about 40 ms: a ceiling of 25 answers a second per
    connection, whatever the broker does (one worker is not affected: its event loop sets it).
    """
    sock = config.bind_socket()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock

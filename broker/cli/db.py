"""``fedbroker db upgrade``: apply the migrations up to the newest (``BROKER_DATABASE_URL``)."""

from __future__ import annotations

import argparse

from broker.cli.common import database_errors, load_settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser("db", help="database maintenance")
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade_cmd = actions.add_parser(
        "upgrade", help="apply the migrations up to the newest (BROKER_DATABASE_URL)"
    )
    upgrade_cmd.set_defaults(handler=_upgrade)


def _upgrade(args: argparse.Namespace) -> int:
    from broker.storage.db import Timeouts, make_engine, upgrade

    settings = load_settings()
    with database_errors():
        upgrade(make_engine(settings.database_url, Timeouts.of(settings)))
    print(f"database schema is at the newest migration ({settings.database_url.split('@')[-1]})")
    return 0

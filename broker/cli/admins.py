"""``fedbroker admins create|list|revoke``: named administrators, on the database directly.

What the API's ``/v1/admins`` does, for whoever runs the broker's host (``BROKER_DATABASE_URL``):
the way to a first named administrator, or back in when every token is lost. The audit log
names the actor ``cli:<login>``.
"""

from __future__ import annotations

import argparse
import getpass
import re

from broker.cli.common import CommandError, CommandFailed, broker_session, database_errors


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "admins",
        help="named administrators: create (the token is shown once), list, revoke",
        description="Administrators with their own tokens, so that the audit log says who "
        "changed what (admin:<name>). Works on BROKER_DATABASE_URL directly; the API's "
        "/v1/admins does the same over HTTP.",
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    create_cmd = actions.add_parser(
        "create", help="create an administrator and print its token (shown once)"
    )
    create_cmd.add_argument("name", help="lower-case letters, digits, '.', '-', '_' (2 to 58)")
    create_cmd.set_defaults(handler=_create)
    list_cmd = actions.add_parser("list", help="every administrator, active or revoked")
    list_cmd.set_defaults(handler=_list)
    revoke_cmd = actions.add_parser(
        "revoke", help="revoke an administrator's token (never the last active one)"
    )
    revoke_cmd.add_argument("name")
    revoke_cmd.set_defaults(handler=_revoke)


def _actor() -> str:
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "unknown"
    return f"cli:{login}"[:64]


def _run(action):
    from broker.errors import ProblemError

    with database_errors(), broker_session() as session:
        try:
            return action(session)
        except ProblemError as error:
            raise CommandFailed(error.detail) from None


def _create(args: argparse.Namespace) -> int:
    from broker.admins import service
    from broker.admins.schemas import NAME_PATTERN

    if not re.fullmatch(NAME_PATTERN, args.name):
        raise CommandError(
            f"{args.name!r} is not an administrator name: lower-case letters, digits, '.', '-' "
            "and '_', 2 to 58 characters"
        )
    administrator, token = _run(lambda session: service.create(session, args.name, _actor()))
    print(f"administrator {administrator.name} created; its token, shown once:")
    print(token)
    return 0


def _list(args: argparse.Namespace) -> int:
    from broker.admins import service

    rows = _run(service.list_administrators)
    for row in rows:
        state = (
            "active"
            if row.active
            else f"revoked {row.revoked_at:%Y-%m-%d %H:%M} by {row.revoked_by}"
        )
        print(f"{row.name}\t{state}\tcreated {row.created_at:%Y-%m-%d %H:%M} by {row.created_by}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from broker.admins import service

    row = _run(lambda session: service.revoke(session, args.name, _actor()))
    print(f"administrator {row.name} revoked: its token answers 401")
    return 0

"""``fedbroker keys generate [FOLDER]``: add an Ed25519 delivery signing key."""

from __future__ import annotations

import argparse
from pathlib import Path

from broker.cli.common import CommandError, load_settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser("keys", help="the broker's delivery signing keys")
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate_cmd = actions.add_parser(
        "generate",
        help="add a new Ed25519 signing key (it signs from the next start; the older keys stay "
        "published until their files are removed)",
    )
    generate_cmd.add_argument(
        "folder", nargs="?", help="key folder (default: BROKER_SIGNING_KEY_DIR)"
    )
    generate_cmd.set_defaults(handler=_generate)


def _generate(args: argparse.Namespace) -> int:
    from broker.delivery.keyring import generate

    folder = Path(args.folder) if args.folder else load_settings().signing_key_dir
    try:
        path = generate(folder)
    except OSError as error:
        raise CommandError(f"{folder}: {error.strerror}") from None
    print(f"new signing key {path.stem} in {path} (mode 0600); restart the broker to sign with it")
    return 0

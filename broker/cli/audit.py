"""``fedbroker audit head|check``: anchor the audit log outside the database.

A hash chain shows altered or removed entries, but not entries cut from its end: ``head``
verifies the chain and exports its last entry, ``check`` later verifies that the chain still
reaches that entry with that hash.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from broker.cli.common import (
    CommandError,
    CommandFailed,
    broker_session,
    database_errors,
    refuse_to_overwrite,
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "audit",
        help="anchor the audit log: export its verified head, check it later",
        description="A hash chain shows altered or removed entries, but not entries cut from "
        "its end. Export the verified head (fedbroker audit head -o head.json), keep it "
        "elsewhere (another system, a ticket, print), and check the log against it later "
        "(fedbroker audit check head.json). Reads BROKER_DATABASE_URL.",
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    head_cmd = actions.add_parser("head", help="verify the chain and print its head (JSON)")
    head_cmd.add_argument(
        "-o",
        "--output",
        help="also write the head to this file (kept if it exists, unless --force)",
    )
    head_cmd.add_argument("--force", action="store_true", help="overwrite the --output file")
    head_cmd.set_defaults(handler=_head)
    check_cmd = actions.add_parser(
        "check", help="verify the chain and that it still holds an exported head"
    )
    check_cmd.add_argument("anchor", help="a file written by fedbroker audit head -o")
    check_cmd.set_defaults(handler=_check)


def _head(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from broker.audit.service import verify

    if args.output:
        refuse_to_overwrite(Path(args.output), args.force)
    with database_errors(), broker_session() as session:
        verification = verify(session)
    if not verification.valid:
        raise CommandFailed(
            f"the audit log is broken at entry {verification.first_invalid_id}: "
            f"{verification.reason}"
        )
    head = {
        "head_id": verification.head_id,
        "head_hash": verification.head_hash,
        "entries": verification.entries_checked,
        "verified_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    text = json.dumps(head, indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    sys.stdout.write(text)
    return 0


def _check(args: argparse.Namespace) -> int:
    from broker.audit.service import check_anchor

    try:
        anchor = json.loads(Path(args.anchor).read_text())
        anchor_id, anchor_hash = int(anchor["head_id"]), str(anchor["head_hash"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CommandError(
            f"{args.anchor}: not a head written by `fedbroker audit head` ({error})"
        ) from None
    with database_errors(), broker_session() as session:
        verification = check_anchor(session, anchor_id, anchor_hash)
    if not verification.valid:
        raise CommandFailed(f"the audit log does not hold its anchor: {verification.reason}")
    print(
        f"ok: {verification.entries_checked} entries verified; entry {anchor_id} still has the "
        f"anchored hash; the head is now entry {verification.head_id}"
    )
    return 0

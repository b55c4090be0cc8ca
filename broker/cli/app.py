"""The fedbroker command line: fedbroker COMMAND [options]; fedbroker COMMAND --help for each.

Errors a user can make print one line on stderr and exit with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from broker.cli import admins, analyze, anonymize, audit, db, keys, release, serve
from broker.cli.common import UTF8, CommandError, CommandFailed

USAGE_ERROR = 2
BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command cut off by `| head`
# in the order `fedbroker -h` lists them
COMMANDS = (analyze, anonymize, release, serve, db, audit, admins, keys)


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (usage is one ``--help`` away), status 2."""

    def error(self, message: str):
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # the command alone: what it can do, not an error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        with contextlib.ExitStack() as args.resources:  # temporary files the command made
            status = args.handler(args)
            sys.stdout.flush()  # inside the try: a reader gone before the last bytes is handled
        return status
    except (CommandError, ValueError) as error:  # a DatasetError is a ValueError
        print(f"fedbroker {args.command}: error: {error}{_hint(args, error)}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # the reader of our output went away (``| head``): nothing to say
        _discard_stdout()
        return BROKEN_PIPE
    except OSError as error:  # a file the user named cannot be read or written
        where = f"{error.filename}: " if error.filename else ""
        print(f"fedbroker {args.command}: error: {where}{error.strerror or error}", file=sys.stderr)
        return USAGE_ERROR
    except CommandFailed as failure:
        print(f"fedbroker {args.command}: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"fedbroker {args.command}: interrupted", file=sys.stderr)
        return 130


def _hint(args: argparse.Namespace, error: Exception) -> str:
    """What to try when a file is not UTF-8 and no other encoding was named."""
    if getattr(args, "encoding", None) == UTF8 and "not valid UTF-8" in str(error):
        return " (a Latin-1 or Windows export? give --encoding cp1252)"
    return ""


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit finds no closed
    pipe and prints no 'Exception ignored' lines (the Python documentation's recipe for
    SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def version() -> str:
    try:
        return metadata.version("fedbroker")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="fedbroker",
        description="The federal broker's command line: measure and anonymize datasets, run "
        "the broker, maintain its database, audit log and signing keys.",
        epilog="Each command has its own help: fedbroker COMMAND --help. Exit status: 0 done, "
        "1 the command ran but did not pass (a --fail-if condition held, a target could not "
        "be met), 2 a usage or input error (one line on stderr).",
    )
    parser.add_argument("--version", action="version", version=f"fedbroker {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser

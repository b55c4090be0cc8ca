"""The ``fedbroker`` command line: ``fedbroker analyze DATA ...``.

Errors a user can make print one line on stderr and exit with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from broker.cli import admins, analyze, anonymize, audit, db, keys, serve
from broker.cli.common import CommandError, CommandFailed
from broker.datasets import DatasetError

USAGE_ERROR = 2
# in the order `fedbroker -h` lists them
COMMANDS = (analyze, anonymize, serve, db, audit, admins, keys)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (CommandError, DatasetError, ValueError) as error:
        print(f"fedbroker {args.command}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # the reader of our output went away (``| head``): nothing to say
        sys.stderr.close()
        return 141
    except OSError as error:  # a file the user named cannot be read or written
        where = f"{error.filename}: " if error.filename else ""
        print(f"fedbroker {args.command}: error: {where}{error.strerror or error}", file=sys.stderr)
        return USAGE_ERROR
    except CommandFailed as failure:
        print(f"fedbroker {args.command}: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedbroker", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser

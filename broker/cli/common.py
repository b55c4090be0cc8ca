"""What several commands share: the two kinds of error, column lists, settings, database errors.

A :class:`CommandError` is the user's mistake (exit status 2), a :class:`CommandFailed` a command
that ran but could not do its job (exit status 1); :func:`broker.cli.app.main` prints either as
one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

UTF8 = "utf-8"  # the canonical name of the default --encoding (broker.datasets.encodings)


class CommandError(Exception):
    """A user error: its message is printed as one line and the command exits with status 2."""


class CommandFailed(Exception):
    """The command ran but could not do its job: one line, exit status 1."""


def add_engine_options(command: argparse.ArgumentParser, duckdb_does: str) -> None:
    """``--engine auto|pandas|duckdb`` and ``--memory-limit``; ``duckdb_does`` says what DuckDB
    does for this command."""
    from broker.engines import IN_MEMORY_MAX_BYTES

    command.add_argument(
        "--engine",
        choices=("auto", "pandas", "duckdb"),
        default="auto",
        help=f"pandas: read the file into memory (fastest when it fits); duckdb: {duckdb_does}, "
        "in memory that follows the number of distinct values, not the file size (CSV in); "
        f"auto (the default): duckdb for a CSV file larger than {IN_MEMORY_MAX_BYTES // 2**20} "
        "MiB, as the broker decides for an upload, else pandas",
    )
    command.add_argument(
        "--memory-limit",
        default="1GB",
        metavar="SIZE",
        help="with --engine duckdb: DuckDB's memory limit, beyond which it spills to a temporary "
        "folder (default 1GB)",
    )


def duckdb_engine():
    """The DuckDB engine module (loaded when a command counts out of core)."""
    from broker.engines import duckdb

    return duckdb


def choose_engine(args: argparse.Namespace, path: str) -> str:
    """``--engine auto`` made definite, as the broker chooses for an upload: DuckDB for a CSV
    file larger than :data:`broker.engines.IN_MEMORY_MAX_BYTES` (its name does not end in
    ``.json`` or ``.parquet``; those are read whole), pandas for the rest and for stdin."""
    from broker.engines import IN_MEMORY_MAX_BYTES

    if args.engine != "auto":
        return args.engine
    if path == STDIN or Path(path).suffix.lower() in (".json", ".parquet"):
        return "pandas"
    try:
        size = Path(path).stat().st_size
    except OSError:
        return "pandas"  # reading it says what is wrong, in one line
    return "duckdb" if size > IN_MEMORY_MAX_BYTES else "pandas"


def column_list(text: str) -> list[str]:
    """``--qi A,B,C`` as ``["A", "B", "C"]``; an empty name is an argparse error."""
    columns = [part.strip() for part in text.split(",")]
    if any(not column for column in columns):
        raise argparse.ArgumentTypeError(f"empty column name in {text!r}")
    return columns


def load_settings(**overrides):
    """The broker's settings from ``BROKER_*`` variables; a bad one is one line naming it and
    the form it expects."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from broker.config import Settings
    from broker.wire.environment import describe

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except (ValidationError, SettingsError) as error:
        raise CommandError(describe(error, "BROKER_", Settings)) from None


@contextmanager
def database_errors() -> Iterator[None]:
    """Database problems as one line: a bad URL, an unreachable server, a read-only file."""
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

    try:
        yield
    except (ArgumentError, NoSuchModuleError) as error:
        raise CommandError(f"BROKER_DATABASE_URL: {error}") from None
    except DBAPIError as error:
        first = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        raise CommandError(f"cannot use the database: {first}") from None
    except (SQLAlchemyError, OSError) as error:
        raise CommandError(f"cannot use the database: {error}") from None


def broker_session():
    """A session on the broker's database as it is. Commands that read or change what a broker
    keeps (administrators, the audit log) never create one: a SQLite file that does not exist is
    an error that says so, and nothing is left behind."""
    from sqlalchemy.engine import make_url

    from broker.storage.db import Timeouts, make_engine, make_sessionmaker

    settings = load_settings()
    with database_errors():
        url = make_url(settings.database_url)
        database = url.database if url.get_backend_name() == "sqlite" else None
        if database and database != ":memory:" and not Path(database).is_file():
            raise CommandError(
                f"no broker database at {database} (BROKER_DATABASE_URL): run this where the "
                "broker runs, with its settings, or create one with fedbroker db upgrade"
            )
        engine = make_engine(settings.database_url, Timeouts.of(settings))
    return make_sessionmaker(engine)()


STDIN = "-"


def add_input_format_option(command: argparse.ArgumentParser) -> None:
    """``--input-format`` for DATA given as ``-`` (standard input), and ``--encoding``."""
    command.add_argument(
        "--input-format",
        choices=("csv", "json", "parquet"),
        help="the format of DATA when it is - (standard input); by default it is recognized "
        "from the content (Parquet's magic bytes, a JSON array, else CSV)",
    )
    command.add_argument(
        "--encoding",
        type=_text_encoding,
        default=UTF8,
        metavar="NAME",
        help="the text encoding of a CSV or JSON input, such as latin-1 or cp1252 (many "
        "spreadsheet exports); default utf-8. Out of core, a UTF-8 copy is made in the "
        "temporary folder first. What is written is UTF-8",
    )


def _text_encoding(name: str) -> str:
    from broker.datasets.encodings import text_encoding

    try:
        return text_encoding(name)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def read_input(path: str, input_format: str | None = None, encoding: str = UTF8):
    """The dataset at ``path``, or on standard input when ``path`` is ``-``: one canonical
    reading (:func:`broker.datasets.read_dataset`) either way, from text in ``encoding``."""
    from broker.datasets import read_dataset, read_path

    if path == STDIN:
        data = sys.stdin.buffer.read()
        return read_dataset(data, "stdin", data_format=input_format, encoding=encoding)
    if input_format is not None:
        raise CommandError("--input-format is for DATA read from standard input (-)")
    return read_path(path, encoding=encoding)


def utf8_file(args: argparse.Namespace, path: str) -> Path:
    """``path`` for an engine that reads the file itself: the file, or when ``--encoding``
    names another encoding than UTF-8, a UTF-8 copy in a temporary folder that is deleted when
    the command ends (``args.resources``, which :func:`broker.cli.app.main` closes)."""
    if args.encoding == UTF8 or Path(path).suffix.lower() in (".parquet", ".pq"):
        return Path(path)
    from broker.datasets.encodings import utf8_copy

    folder = Path(args.resources.enter_context(tempfile.TemporaryDirectory(prefix="fedbroker-")))
    copy = folder / Path(path).name
    utf8_copy(Path(path), copy, args.encoding)
    return copy


def refuse_to_overwrite(path: Path, force: bool) -> None:
    """An existing output file (or non-empty folder) is kept unless ``--force`` says otherwise."""
    if force or not path.exists():
        return
    if path.is_dir() and not any(path.iterdir()):
        return
    what = "a folder that is not empty" if path.is_dir() else "a file"
    raise CommandError(f"{path} exists ({what}): choose another output or add --force")

"""``fedbroker analyze DATA``: the measurement report of a dataset file, as a table or JSON.

Building its parser loads no numerical library; the handler loads them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from broker.cli.common import (
    STDIN,
    CommandError,
    CommandFailed,
    add_engine_options,
    add_input_format_option,
    choose_engine,
    column_list,
    duckdb_engine,
    read_input,
    refuse_to_overwrite,
    utf8_file,
)
from broker.cli.verdict import check_conditions, condition, fail_if_help, verdict
from broker.metrics.defaults import DEFAULT_MAX_SIZE, DEFAULT_UNIQUE_THRESHOLD
from broker.metrics.risk import DEFAULT_ALPHA, DEFAULT_BETA, QirThresholds

if TYPE_CHECKING:
    from broker.engines.base import Engine
    from broker.metrics.suda import Suda


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "analyze",
        help="measure how well a dataset is anonymized",
        description="Measure Mmaq, QIR risk, k-anonymity, l-diversity, t-closeness and, on "
        "request, SUDA of a CSV, JSON or Parquet dataset. The report leads with a verdict in "
        "words; --fail-if turns it into an exit status for CI.",
        epilog="Exit status: 0 measured (no --fail-if condition held), 1 a --fail-if "
        "condition held, 2 a usage or input error.",
    )
    command.add_argument(
        "data", metavar="DATA", help="dataset file (.csv, .json, .parquet), or - for stdin"
    )
    add_input_format_option(command)
    command.add_argument(
        "--qi", type=column_list, default=[], metavar="A,B,C", help="declared quasi-identifiers"
    )
    command.add_argument(
        "-s",
        "--sensitive",
        type=column_list,
        default=[],
        metavar="D,E",
        help="declared sensitive attributes (needs --qi)",
    )
    command.add_argument(
        "--combinations",
        type=int,
        default=DEFAULT_MAX_SIZE,
        metavar="N",
        help=f"largest attribute combination to search, 0 to skip (default {DEFAULT_MAX_SIZE})",
    )
    command.add_argument(
        "--unique-threshold",
        type=float,
        default=DEFAULT_UNIQUE_THRESHOLD,
        metavar="SHARE",
        help="share of unique rows from which a combination "
        f"counts as identifying (default {DEFAULT_UNIQUE_THRESHOLD})",
    )
    command.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"QIR threshold for 'sensitive', percent (default {DEFAULT_ALPHA})",
    )
    command.add_argument(
        "--beta",
        type=float,
        default=DEFAULT_BETA,
        help=f"QIR threshold for 'quasi-identifier', percent (default {DEFAULT_BETA})",
    )
    add_engine_options(command, "count out of core")
    command.add_argument(
        "--population",
        metavar="FILE",
        help="a population table holding this dataset (a register, a census extract), with the "
        "quasi-identifiers among its columns, read by the same engine: journalist and marketer "
        "risk are then measured against it (without it, the dataset is its own population)",
    )
    command.add_argument(
        "--sampling-fraction",
        type=_fraction,
        metavar="PI",
        help="the dataset's share of its population, in (0, 1] (needs --qi): adds population "
        "uniqueness (Pitman, Zayatz, SNB, Dankar's rule) and individual risk with weights 1/PI",
    )
    command.add_argument(
        "--weights",
        metavar="COLUMN",
        help="a column of sampling weights (people each row stands for; needs --qi): "
        "individual risk uses them, and without --sampling-fraction the fraction is "
        "rows / their sum",
    )
    command.add_argument(
        "--suda",
        action="store_true",
        help="SUDA (needs --qi): each record's minimal sample uniques, SUDA and DIS-SUDA "
        "scores, as sdcMicro's suda2 computes them",
    )
    command.add_argument(
        "--suda-dis-fraction",
        type=_fraction,
        metavar="F",
        help="the sampling fraction DIS-SUDA assumes, in (0, 1] (default 0.01)",
    )
    command.add_argument(
        "--suda-max-msu",
        type=int,
        metavar="N",
        help="count minimal sample uniques of at most N quasi-identifiers, each weighed as in "
        "the full search (default: all the quasi-identifiers)",
    )
    command.add_argument(
        "--fail-if",
        type=condition,
        action="append",
        default=[],
        metavar="CONDITION",
        help=fail_if_help(),
    )
    command.add_argument(
        "-f",
        "--format",
        choices=("table", "json", "html"),
        default="table",
        help="html: a page with the verdict and plots (needs the 'reports' extra)",
    )
    command.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE (kept if it exists)"
    )
    command.add_argument("--force", action="store_true", help="overwrite the -o file")
    command.set_defaults(handler=_run)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value <= 1):
        raise argparse.ArgumentTypeError(f"a sampling fraction is in (0, 1], got {text}")
    return value


def _check_suda(args: argparse.Namespace) -> None:
    tuned = args.suda_dis_fraction is not None or args.suda_max_msu is not None
    if tuned and not args.suda:
        raise CommandError("--suda-dis-fraction and --suda-max-msu need --suda")
    if args.suda and not args.qi:
        raise CommandError("--suda needs --qi: SUDA searches the quasi-identifiers")
    if args.suda_max_msu is not None and not 1 <= args.suda_max_msu <= len(args.qi):
        raise CommandError(
            f"--suda-max-msu is between 1 and the {len(args.qi)} quasi-identifiers, "
            f"got {args.suda_max_msu}"
        )


def _suda(engine: Engine, args: argparse.Namespace) -> Suda:
    """SUDA needs each record, in input order: the quasi-identifiers' rows, read once."""
    from broker.metrics.suda import DEFAULT_DIS_FRACTION, suda_of_frame

    fraction = args.suda_dis_fraction or DEFAULT_DIS_FRACTION
    try:
        return suda_of_frame(
            engine.head(args.qi, engine.rows),
            args.qi,
            dis_fraction=fraction,
            max_msu_size=args.suda_max_msu,
        )
    except ValueError as error:  # a search beyond its budget
        raise CommandError(f"--suda: {error}") from None


def _run(args: argparse.Namespace) -> int:
    # The measuring libraries load here, not at import: --help and --version stay instant.
    from broker.cli.progress import LARGE_INPUT_ROWS, Steps, large_file
    from broker.cli.render import render_suda, render_table
    from broker.engines.pandas import PandasEngine
    from broker.metrics.report import ReportOptions, report_of

    args.engine = choose_engine(args, args.data)
    if (args.sampling_fraction is not None or args.weights) and not args.qi:
        raise CommandError("--sampling-fraction and --weights need --qi")
    check_conditions(args.fail_if, args)
    _check_suda(args)
    if args.engine != "pandas" and STDIN in (args.data, args.population):
        raise CommandError("--engine duckdb reads files: save standard input to a file first")
    if args.population == STDIN and args.data == STDIN:
        raise CommandError("DATA and --population cannot both be standard input (-)")
    if args.format == "html":
        _require_reports()
    if args.output:
        refuse_to_overwrite(Path(args.output), args.force)
    thresholds = QirThresholds(args.alpha, args.beta)
    notes: tuple[str, ...] = ()
    with Steps(shown=large_file(args.data)) as steps:
        steps(f"reading {args.data}" if args.engine == "pandas" else f"opening {args.data}")
        if args.engine == "pandas":
            dataset = read_input(args.data, args.input_format, args.encoding)
            engine, notes = PandasEngine(dataset.frame), dataset.notes
        else:
            engine = _open(args, args.data)
        population = None
        if args.population:
            steps(f"reading the population {args.population}")
            population = _open(args, args.population)
        if isinstance(engine, PandasEngine):
            steps.shown |= engine.rows >= LARGE_INPUT_ROWS
            shape = f"{engine.rows:,} rows x {len(engine.columns)} columns"
            steps.note(f"read {shape} from {args.data}")
        steps.expect(_report_steps(engine, args))
        try:
            report = report_of(
                engine,
                args.qi,
                args.sensitive,
                ReportOptions(
                    max_combination_size=args.combinations,
                    thresholds=thresholds,
                    unique_threshold=args.unique_threshold,
                    progress=steps,
                    population=population,
                    sampling_fraction=args.sampling_fraction,
                    weights=args.weights,
                ),
            )
        except ValueError as error:  # a population that lacks a column or a class of the data
            if population is None:
                raise
            raise CommandError(f"--population {args.population}: {error}") from None
        suda = None
        if args.suda:
            steps("SUDA: the minimal sample uniques of each record")
            suda = _suda(engine, args)
    found = verdict(report, args.fail_if)
    source = "stdin" if args.data == STDIN else args.data
    if args.format == "json":
        document = {
            "verdict": found.as_dict(),
            **report.as_dict(),
            "notes": list(notes),
            "fail_if": [c.as_dict(report) for c in args.fail_if],
        }
        if suda is not None:
            document["suda"] = suda.as_dict()
        text = json.dumps(document, indent=2) + "\n"
    elif args.format == "html":
        shown = report.as_dict()
        if suda is not None:
            shown["suda"] = suda.as_dict(records=False)
        text = _html(shown, source)
    else:
        text = "\n".join(found.lines()) + "\n\n" + render_table(report, source)
        if suda is not None:
            text += "\n" + render_suda(suda)
        text += "".join(f"Note: {note}\n" for note in notes)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if found.held:
        sys.stdout.flush()
        raise CommandFailed(f"--fail-if: {', '.join(found.held)} held")
    return 0


def _html(report: dict, title: str) -> str:
    from broker.reports import analysis_page

    return analysis_page(report, title=Path(title).name)


def _require_reports() -> None:
    """Say what to install before measuring, not after."""
    from broker.reports import ReportUnavailable, require

    try:
        require()
    except ReportUnavailable as error:
        raise CommandError(str(error)) from None


def _report_steps(engine: Engine, args: argparse.Namespace) -> int:
    """The steps :func:`report_of` announces: the one pass of an engine that plans its counts,
    the attributes, the quasi-identifiers, the population estimates, one per size of combination
    searched (at most)."""
    from broker.engines.base import PlansCounts

    combinations = min(max(args.combinations, 0), len(engine.columns))
    sampled = args.sampling_fraction is not None or args.weights or args.population
    counted = isinstance(engine, PlansCounts) + 1 + bool(args.qi) * (1 + bool(sampled))
    return counted + combinations + bool(args.suda)


def _open(args: argparse.Namespace, path: str) -> Engine:
    from broker.engines.pandas import PandasEngine

    if args.engine == "pandas":
        return PandasEngine(read_input(path, encoding=args.encoding).frame)
    engines = duckdb_engine()
    return engines.DuckDBEngine.from_path(utf8_file(args, path), memory_limit=args.memory_limit)

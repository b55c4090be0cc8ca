"""``fedbroker anonymize DATA``: anonymize, measure the result again, write it, report.

Building its parser loads no numerical library; each step loads what it uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from broker.anonymize.limits import WHOLE_TABLE_ROWS
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
from broker.columns.roles import require_columns

if TYPE_CHECKING:
    from broker.cli.progress import Steps
    from broker.datasets import Dataset


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "anonymize",
        help="k-anonymize a dataset and report before/after figures",
        description="Anonymize DATA (drop columns, Mondrian k-anonymity, the Anatomy-style "
        "partition, or generalization of the quasi-identifiers), verify the result by measuring "
        "it, write it to OUT and print the before/after report, led by what was done: the k "
        "used (and why it differs from --k), the checks that ran, the utility kept. Exits 1 "
        "when the target cannot be met (nothing is written).",
    )
    command.add_argument(
        "data", metavar="DATA", help="dataset file (.csv, .json, .parquet), or - for stdin"
    )
    add_input_format_option(command)
    command.add_argument(
        "--qi",
        type=column_list,
        required=True,
        metavar="A,B,C",
        help="quasi-identifiers to generalize",
    )
    command.add_argument(
        "-s",
        "--sensitive",
        type=column_list,
        default=[],
        metavar="D,E",
        help="sensitive attributes (kept; l and t are checked on them)",
    )
    command.add_argument(
        "-k",
        "--k",
        type=int,
        required=True,
        help="smallest class size to reach; the planner raises it (and says so) when --l or "
        "--t needs larger classes",
    )
    command.add_argument("-l", "--l", type=int, help="distinct l-diversity to reach")
    command.add_argument("-t", "--t", type=float, help="t-closeness to reach")
    command.add_argument(
        "--drop",
        type=column_list,
        default=[],
        metavar="NIN,Name",
        help="columns to remove first (each must be a column, with its exact case)",
    )
    command.add_argument(
        "-m",
        "--method",
        choices=("mondrian", "partition", "generalization", "optimal"),
        default="mondrian",
        help="mondrian and partition cut rows and need the whole table in memory; "
        "generalization maps values (ranges, quantile bins, dates, prefixes, masking) and is "
        "planned on counts, climbing one rung at a time (Datafly); optimal maps values too, "
        "the mapping of least information loss, searched cheapest first as ARX does (slower: "
        "it may measure thousands) (default mondrian)",
    )
    add_engine_options(
        command,
        "plan a generalization on DuckDB's count tables and write the output from DuckDB (CSV "
        "or Parquet out)",
    )
    command.add_argument(
        "--whole-table-rows",
        type=int,
        default=WHOLE_TABLE_ROWS,
        metavar="N",
        help="with --engine duckdb: the most rows mondrian and partition may load into memory "
        f"(default {WHOLE_TABLE_ROWS:,})",
    )
    command.add_argument(
        "--max-suppression",
        type=float,
        default=0.05,
        metavar="SHARE",
        help="largest share of rows that may be suppressed (default 0.05)",
    )
    command.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output file (.csv, .json, .parquet), or folder for partition; an existing "
        "file or non-empty folder is kept unless --force",
    )
    command.add_argument("--force", action="store_true", help="overwrite OUT when it exists")
    command.add_argument(
        "--qid-dimension",
        action="store_true",
        help="also report privacy gain and utility of k-anonymizing the first d quasi-"
        "identifiers (by falling QIR risk), d = 1..m, and the recommended d",
    )
    command.add_argument(
        "--hierarchy",
        type=_hierarchy_option,
        action="append",
        default=[],
        metavar="COLUMN=FILE",
        help="a generalization hierarchy for a quasi-identifier, as ARX writes it (one line per "
        "value, its labels by level to the right, ';' separated); with --method "
        "generalization, its levels are climbed before anything else; repeat for each column",
    )
    command.add_argument(
        "--export-hierarchies",
        metavar="DIR",
        help="with --method generalization: write, for each quasi-identifier, the ARX hierarchy "
        "and the level that reproduce the output (hierarchy_COLUMN.csv and levels.json in DIR)",
    )
    command.add_argument("-f", "--format", choices=("table", "json"), default="table")
    command.set_defaults(handler=_run)


GLOBAL_RECODING = ("generalization", "optimal")  # the methods that map values, as ARX does


def _hierarchy_option(text: str) -> tuple[str, str]:
    column, equals, path = text.partition("=")
    if not equals or not column or not path:
        raise argparse.ArgumentTypeError(f"expected COLUMN=FILE, got {text!r}")
    return column, path


def _run(args: argparse.Namespace) -> int:
    from broker.anonymize import Target, plan_remedy
    from broker.cli.progress import LARGE_INPUT_ROWS, Steps, large_file
    from broker.metrics.report import ReportOptions, analyze

    args.engine = choose_engine(args, args.data)
    output = Path(args.output)
    if args.method != "partition" and output.suffix.lower() not in (".csv", ".json", ".parquet"):
        raise CommandError(f"{output}: the output must end in .csv, .json or .parquet")
    if args.method == "partition" and output.exists() and not output.is_dir():
        raise CommandError(f"{output} exists and is not a folder")
    refuse_to_overwrite(output, args.force)
    if args.engine == "duckdb" and args.data == STDIN:
        raise CommandError("--engine duckdb reads files: save standard input to a file first")
    if (args.hierarchy or args.export_hierarchies) and args.method not in GLOBAL_RECODING:
        raise CommandError(
            "--hierarchy and --export-hierarchies are for --method generalization or optimal "
            f"(global recoding, as ARX does); {args.method} cuts rows instead"
        )
    if args.export_hierarchies:
        refuse_to_overwrite(Path(args.export_hierarchies), args.force)
    target = Target(
        quasi_identifiers=tuple(args.qi),
        sensitive=tuple(args.sensitive),
        drop=tuple(args.drop),
        k=args.k,
        l=args.l,
        t=args.t,
        max_suppression=args.max_suppression,
        hierarchies=_hierarchies(args),
    )
    with Steps(shown=large_file(args.data)) as steps:
        if args.engine == "duckdb":
            return _run_on_duckdb(args, target, output, steps)
        steps(f"reading {args.data}")
        dataset = read_input(args.data, args.input_format, args.encoding)
        frame = dataset.frame
        require_columns(frame.columns, args.drop, "Column to drop")
        steps.shown |= len(frame) >= LARGE_INPUT_ROWS
        steps.expect(2 + _finish_steps(args))
        steps(f"measuring {args.data}")
        before = analyze(frame, args.qi, args.sensitive, ReportOptions(max_combination_size=0))
        steps(_anonymizing(args))
        remedy = plan_remedy(frame, target, method=args.method)
        remedy = _with_reading_notes(remedy, dataset)
        if args.export_hierarchies and remedy.satisfied:
            _export(args, remedy, lambda name: _pairs(frame[name], remedy.frame[name]))
        return _finish(args, frame, dataset, before, remedy, output, steps)


def _hierarchies(args: argparse.Namespace) -> dict[str, dict[str, list[str]]]:
    """The --hierarchy files read, each for a declared quasi-identifier, once."""
    from broker.anonymize.hierarchies import read_hierarchy

    tables: dict[str, dict[str, list[str]]] = {}
    for column, path in args.hierarchy:
        if column not in args.qi:
            raise CommandError(f"--hierarchy {column}: not one of the quasi-identifiers (--qi)")
        if column in tables:
            raise CommandError(f"--hierarchy {column} is given twice")
        tables[column] = read_hierarchy(Path(path).read_bytes(), path).table()
    return tables


def _pairs(before, after) -> tuple[list[str], list[str]]:
    """A column's values before and after, row by row (rows matched by label)."""
    after = after.reindex(before.index)
    return before.astype(str).tolist(), after.astype(str).tolist()


def _recoded(engine, plan, name: str) -> tuple[list[str], list[str]]:
    """A column's distinct values and their labels under ``plan`` (a value it does not name
    keeps itself)."""
    values = [str(value) for value in engine.dictionary(name)]
    labels = {str(k): str(v) for k, v in plan.labels.get(name, {}).items()}
    return values, [labels.get(value, value) for value in values]


def _export(args: argparse.Namespace, remedy, values_of) -> None:
    """Write each quasi-identifier's ARX hierarchy and level: ARX, given the same data, these
    hierarchies and levels (global recoding, no suppression), writes the same output."""
    from broker.anonymize.hierarchies import exported, unchanged, write_hierarchy

    folder = Path(args.export_hierarchies)
    folder.mkdir(parents=True, exist_ok=True)
    chosen = {}
    for name in args.qi:
        steps = [step for step in remedy.steps if step.column == name]
        originals, labels = values_of(name)
        if not steps:
            hierarchy, level = unchanged(originals), 0
        elif len(steps) == 1:
            hierarchy, level = exported(steps[0].method, steps[0].parameters, originals, labels)
        else:  # several steps on one column (precision, then a rung): their composition
            hierarchy, level = exported("labels", {}, originals, labels)
        file = f"hierarchy_{quote(name, safe='')}.csv"
        (folder / file).write_text(write_hierarchy(hierarchy), encoding="utf-8")
        chosen[name] = {"hierarchy": file, "level": level}
    document = {
        "data": Path(args.data).name,
        "delimiter": ";",
        "quasi_identifiers": chosen,
        "transformation": [chosen[name]["level"] for name in args.qi],
        "suppression": 0,
    }
    (folder / "levels.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def _with_reading_notes(remedy, dataset: Dataset):
    """The remedy's notes, after what reading the input did (a dropped row index)."""
    import dataclasses

    if not dataset.notes:
        return remedy
    return dataclasses.replace(remedy, notes=(*dataset.notes, *remedy.notes))


def _anonymizing(args: argparse.Namespace) -> str:
    """The planning step's message (its attempts, raising k, are the planner's own)."""
    return f"anonymizing: {args.method}, k = {args.k}"


def _finish_steps(args: argparse.Namespace) -> int:
    """The steps after planning: writing, measuring the output (one table, not partition's
    several), the QID dimension."""
    return 1 + (args.method != "partition") + args.qid_dimension


def _run_on_duckdb(args: argparse.Namespace, target, output: Path, steps: Steps) -> int:
    """Plan on DuckDB's count tables and write from DuckDB; Mondrian and partition load the rows
    only up to ``--whole-table-rows``."""
    from broker.anonymize import plan_on_engine
    from broker.datasets import CSV, PARQUET, read_path
    from broker.metrics.report import ReportOptions, report_of

    if args.qid_dimension:
        raise CommandError("--qid-dimension k-anonymizes the rows in memory: use --engine pandas")
    if args.method in GLOBAL_RECODING and output.suffix.lower() == ".json":
        raise CommandError(f"{output}: --engine duckdb writes .csv or .parquet")
    engines = duckdb_engine()
    steps.expect(2 + _finish_steps(args))
    steps(f"counting {args.data}")
    source = utf8_file(args, args.data)
    engine = engines.DuckDBEngine.from_path(source, memory_limit=args.memory_limit)
    require_columns(engine.columns, args.drop, "Column to drop")
    before = report_of(engine, args.qi, args.sensitive, ReportOptions(max_combination_size=0))
    loaded: list[Dataset] = []

    def load():
        loaded.append(read_path(source))
        return loaded[0].frame

    steps(_anonymizing(args))
    remedy = plan_on_engine(engine, target, args.method, args.whole_table_rows, load)
    if not remedy.satisfied:
        raise CommandFailed(f"cannot reach the target: {remedy.reason}")
    if args.method not in GLOBAL_RECODING:
        return _finish(args, loaded[0].frame, loaded[0], before, remedy, output, steps)
    if args.export_hierarchies:
        _export(args, remedy, lambda name: _recoded(engine, remedy.recode, name))
    steps(f"writing {output}")
    engines.write(remedy.engine, output, PARQUET if output.suffix.lower() == ".parquet" else CSV)
    steps(f"measuring {output}")
    after = report_of(
        remedy.engine,
        [q for q in args.qi if q in remedy.engine.columns],
        [s for s in args.sensitive if s in remedy.engine.columns],
        ReportOptions(max_combination_size=0),
    )
    steps.close()
    _print(args, None, before, after, remedy, output)
    return 0


def _finish(args, frame, dataset, before, remedy, output: Path, steps: Steps) -> int:
    """Write a remedy planned on a frame and print the report."""
    from broker.anonymize import qid_dimension
    from broker.metrics.report import ReportOptions, analyze

    if not remedy.satisfied:
        raise CommandFailed(f"cannot reach the target: {remedy.reason}")
    after = None
    steps(f"writing {output}")
    if remedy.frame is not None:
        _write(remedy.frame, output, dataset)
        steps(f"measuring {output}")
        kept_qi = [q for q in args.qi if q in remedy.frame.columns]
        after = analyze(
            remedy.frame,
            kept_qi,
            [s for s in args.sensitive if s in remedy.frame.columns],
            ReportOptions(max_combination_size=0),
        )
    else:
        output.mkdir(parents=True, exist_ok=True)
        for name, table in remedy.tables.items():
            _write(table, output / f"{name}.csv", dataset)
        (output / "links.json").write_text(
            json.dumps([link.as_dict() for link in remedy.links], indent=2) + "\n"
        )
    dimension = None
    if args.qid_dimension:
        steps("the quasi-identifiers' dimension")
        dimension = qid_dimension(frame, args.qi, args.k, args.max_suppression)
    steps.close()
    _print(args, dimension, before, after, remedy, output)
    return 0


def _print(args, dimension, before, after, remedy, output: Path) -> None:
    from broker.cli.render import (
        render_anonymization,
        render_qid_dimension,
        summarize_anonymization,
    )

    summary = summarize_anonymization(args.k, args.l, args.t, after, remedy)
    if args.format == "json":
        json.dump(
            {
                "summary": summary.as_dict(),
                "qid_dimension": dimension.as_dict() if dimension else None,
                "before": before.as_dict(),
                "after": after.as_dict() if after else None,
                "remedy": remedy.as_dict(),
                "output": str(output),
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_anonymization(before, after, remedy, str(output), summary))
        if dimension:
            sys.stdout.write(render_qid_dimension(dimension))


def _write(frame, path, source: Dataset) -> None:
    """The frame to a file in the format its suffix names, written as the broker writes every
    dataset (:func:`broker.datasets.write_dataset`); a path it cannot write is one line."""
    from broker.datasets import CSV, JSON, PARQUET, Dataset, write_dataset

    fmt = {".parquet": PARQUET, ".json": JSON}.get(path.suffix.lower(), CSV)
    like = source if source.format == fmt else Dataset(frame, fmt)
    try:
        path.write_bytes(write_dataset(frame, like))
    except OSError as error:
        reason = error.strerror or str(error)
        if isinstance(error, FileNotFoundError):
            reason = "the folder does not exist"
        raise CommandError(f"{path}: {reason}") from None

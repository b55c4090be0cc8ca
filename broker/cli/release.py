"""``fedbroker release DATA --query ... --epsilon ...``: statistics of a dataset under
differential privacy, computed by the same code as the broker's aggregate releases.

Queries are JSON (as the API takes them) or a short form:

- ``count``
- ``count_by:sex,region`` (keys from the data: needs ``--delta``) or
  ``count_by:sex=F|M,region=north|south`` (declared keys, one ``=`` list per column)
- ``sum:age:0:120``, ``mean:age:0:120`` (column, lower and upper bound)
- ``quantile:age:0:120:0.5,0.9`` (and the quantiles; 0.5 when left out)

Nothing here keeps a budget: the command spends the epsilon of the person who runs it on their
own data; the broker keeps the budgets of what crosses a border.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import TYPE_CHECKING

from broker.cli.common import (
    CommandError,
    add_engine_options,
    add_input_format_option,
    choose_engine,
    duckdb_engine,
    read_input,
    utf8_file,
)
from broker.cli.render import _aligned
from broker.columns.roles import listed_columns
from broker.privacy.budget import BudgetError, delta_amount, positive_epsilon, show

if TYPE_CHECKING:
    from broker.engines.base import Engine

# The queries' checks load the identifier detector (pandas) and broker.privacy.release loads
# OpenDP (0.3 s): both are imported by the command itself, so that --help does not wait.


def add_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "release",
        help="statistics of a dataset under differential privacy (OpenDP)",
        description="Answer counts, histograms, contingency tables, sums, means and quantiles "
        "of a CSV, JSON or Parquet dataset with differential privacy, as the broker's "
        "aggregate releases do: each answer with its mechanism, its share of epsilon and its "
        "accuracy.",
        epilog="Queries: count; count_by:A,B (keys from the data, needs --delta) or "
        "count_by:A=x|y,B=u|v (declared keys); sum:COL:LOW:HIGH; mean:COL:LOW:HIGH; "
        "quantile:COL:LOW:HIGH[:0.5,0.9]; or JSON as the API takes it. Exit status: 0 "
        "released, 2 a usage or input error (nothing released).",
    )
    command.add_argument(
        "data", metavar="DATA", help="dataset file (.csv, .json, .parquet), or - for stdin"
    )
    add_input_format_option(command)
    command.add_argument(
        "--query",
        "-q",
        action="append",
        default=[],
        metavar="QUERY",
        help="a query (repeatable): short form or JSON",
    )
    command.add_argument(
        "--queries", metavar="FILE", help="a JSON file holding a list of queries (added to --query)"
    )
    command.add_argument(
        "-e", "--epsilon", required=True, help="the epsilon the release spends (e.g. 0.5 or 1/3)"
    )
    command.add_argument(
        "--delta", default="0", help="the delta it may spend (keys from the data need one)"
    )
    command.add_argument("-f", "--format", choices=("table", "json"), default="table")
    add_engine_options(command, "count out of core")
    command.set_defaults(handler=_run)


def parse_short(text: str) -> dict:
    """One query's short form (or JSON object) as the API's JSON object.

    Examples
    --------
    >>> parse_short("count_by:sex=F|M,region=north|south")
    {'type': 'count_by', 'columns': ['sex', 'region'], 'keys': {'sex': ['F', 'M'], 'region': ['north', 'south']}}
    >>> parse_short("quantile:age:0:120:0.5,0.9")
    {'type': 'quantile', 'column': 'age', 'bounds': [0.0, 120.0], 'quantiles': [0.5, 0.9]}
    """  # noqa: E501
    text = text.strip()
    if text.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise CommandError(f"--query {text!r} is not JSON: {error.msg}") from None
    kind, _, rest = text.partition(":")
    if kind == "count" and not rest:
        return {"type": "count"}
    if kind == "count_by" and rest:
        columns, keys = [], {}
        for part in rest.split(","):
            name, equals, values = part.partition("=")
            columns.append(name.strip())
            if equals:
                keys[name.strip()] = values.split("|")
        query = {"type": "count_by", "columns": columns}
        return query | ({"keys": keys} if keys else {})
    if kind in ("sum", "mean", "quantile"):
        parts = rest.split(":")
        if len(parts) == 1 and parts[0]:
            raise CommandError(
                f"--query {text!r}: bounds are required for a {kind} ({kind}:{parts[0]}:LOW:HIGH), "
                "stated in advance: taken from the data, one person's value could set them"
            )
        if len(parts) not in ((3,) if kind != "quantile" else (3, 4)):
            raise CommandError(
                f"--query {text!r}: write {kind}:COLUMN:LOW:HIGH"
                + ("[:Q1,Q2]" if kind == "quantile" else "")
            )
        try:
            bounds = [float(parts[1]), float(parts[2])]
            query = {"type": kind, "column": parts[0], "bounds": bounds}
            if kind == "quantile" and len(parts) == 4:
                query["quantiles"] = [float(q) for q in parts[3].split(",")]
        except ValueError:
            raise CommandError(f"--query {text!r}: the bounds must be numbers") from None
        return query
    raise CommandError(
        f"--query {text!r} is not a query: count, count_by:A,B, sum:COL:LOW:HIGH, "
        "mean:COL:LOW:HIGH, quantile:COL:LOW:HIGH[:Q], or JSON"
    )


def _run(args: argparse.Namespace) -> int:
    from broker.privacy.queries import QueryError, UnknownQueryColumn, parse_queries
    from broker.privacy.release import compute, plan, validate

    args.engine = choose_engine(args, args.data)
    items = [parse_short(q) for q in args.query]
    if args.queries:
        with open(args.queries, encoding="utf-8") as file:
            try:
                loaded = json.load(file)
            except json.JSONDecodeError as error:
                raise CommandError(f"{args.queries} is not JSON: {error.msg}") from None
        items += loaded if isinstance(loaded, list) else [loaded]
    if not items:
        raise CommandError("no query: add --query count (or another), or --queries FILE")
    try:
        queries = parse_queries(items)
        epsilon = positive_epsilon(args.epsilon)
        delta = delta_amount(args.delta)
        planned = plan(queries, epsilon, delta)
    except (QueryError, BudgetError) as error:
        raise CommandError(str(error)) from None
    engine = _open(args)
    try:
        validate(engine, planned)
        answers = compute(engine, planned)
    except UnknownQueryColumn as error:
        raise CommandError(f"{error}; its columns: {listed_columns(engine.columns)}") from None
    except QueryError as error:
        raise CommandError(str(error)) from None
    if args.format == "json":
        document = {"epsilon": show(epsilon), "delta": show(planned.delta), "answers": answers}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(_table(answers, epsilon, planned.delta)) + "\n")
    return 0


def _open(args: argparse.Namespace) -> Engine:
    from broker.engines.pandas import PandasEngine

    if args.engine == "pandas":
        return PandasEngine(read_input(args.data, args.input_format, args.encoding).frame)
    if args.data == "-":
        raise CommandError("--engine duckdb reads files: save standard input to a file first")
    engines = duckdb_engine()
    return engines.DuckDBEngine.from_path(
        utf8_file(args, args.data), memory_limit=args.memory_limit
    )


def _table(answers: list[dict], epsilon: Fraction, delta: Fraction) -> list[str]:
    lines = [
        f"Released under differential privacy: epsilon {show(epsilon)}, delta {show(delta)} "
        "in all (OpenDP); each value with its 95 % accuracy",
        "",
    ]
    rows = []
    for answer in answers:
        query, result = answer["query"], answer["result"]
        label = _label(query)
        width = answer["accuracy"]["half_width"]
        pm = f"± {width:.4g}" if width is not None else ""
        eps = answer["epsilon"]
        if "count" in result and query["type"] == "count":
            rows.append((label, f"{result['count']:,}", pm, eps, answer["mechanism"]))
        elif query["type"] == "count_by":
            for cell in result["cells"]:
                key = ", ".join("(missing)" if v is None else str(v) for v in cell["key"])
                rows.append((f"{label} = {key}", f"{cell['count']:,}", pm, eps, ""))
            if "other" in result:
                rows.append((f"{label} = (any other)", f"{result['other']:,}", pm, eps, ""))
            if "threshold" in result:
                rows.append(
                    (f"{label}: keys below {result['threshold']} are not shown", "", "", "", "")
                )
        elif query["type"] == "sum":
            rows.append((label, f"{result['sum']:.6g}", pm, eps, answer["mechanism"]))
        elif query["type"] == "mean":
            interval = result["interval"]
            shown = f"in [{interval[0]:.4g}, {interval[1]:.4g}]" if interval else "(too few rows)"
            rows.append((label, f"{result['mean']:.6g}", shown, eps, answer["mechanism"]))
        else:
            for q in result["quantiles"]:
                rows.append(
                    (
                        f"{label} q={q['quantile']:g}",
                        f"{q['value']:.6g}",
                        "",
                        eps,
                        answer["mechanism"],
                    )
                )
    lines += _aligned(("query", "value", "accuracy", "epsilon", "mechanism"), rows)
    return lines


def _label(query: dict) -> str:
    if query["type"] == "count":
        return "count"
    if query["type"] == "count_by":
        return "count by " + ", ".join(query["columns"])
    return f"{query['type']} of {query['column']}"

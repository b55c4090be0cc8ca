"""The ``fedbroker`` command line: ``fedbroker analyze DATA ...``.

Errors a user can make print one line on stderr and exit with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from broker.datasets import DatasetError, read_path
from broker.metrics.combinations import DEFAULT_MAX_SIZE, DEFAULT_UNIQUE_THRESHOLD
from broker.metrics.report import AnalysisReport, analyze
from broker.metrics.risk import DEFAULT_ALPHA, DEFAULT_BETA, QirThresholds

USAGE_ERROR = 2
LARGE_INPUT_ROWS = 100_000


class CommandError(Exception):
    """A user error: its message is printed as one line and the command exits with status 2."""


class CommandFailed(Exception):
    """The command ran but could not do its job: one line, exit status 1."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (CommandError, DatasetError, ValueError) as error:
        print(f"fedbroker {args.command}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except CommandFailed as failure:
        print(f"fedbroker {args.command}: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedbroker", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    analyze_cmd = commands.add_parser(
        "analyze",
        help="measure how well a dataset is anonymized",
        description="Measure Mmaq, QIR risk, k-anonymity, l-diversity and t-closeness of a "
        "CSV, JSON or Parquet dataset.",
    )
    analyze_cmd.add_argument("data", metavar="DATA", help="dataset file (.csv, .json, .parquet)")
    analyze_cmd.add_argument(
        "--qi", type=_column_list, default=[], metavar="A,B,C", help="declared quasi-identifiers"
    )
    analyze_cmd.add_argument(
        "--sensitive",
        type=_column_list,
        default=[],
        metavar="D,E",
        help="declared sensitive attributes (needs --qi)",
    )
    analyze_cmd.add_argument(
        "--combinations",
        type=int,
        default=DEFAULT_MAX_SIZE,
        metavar="N",
        help=f"largest attribute combination to search, 0 to skip (default {DEFAULT_MAX_SIZE})",
    )
    analyze_cmd.add_argument(
        "--unique-threshold",
        type=float,
        default=DEFAULT_UNIQUE_THRESHOLD,
        metavar="SHARE",
        help="share of unique rows from which a combination "
        f"counts as identifying (default {DEFAULT_UNIQUE_THRESHOLD})",
    )
    analyze_cmd.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"QIR threshold for 'sensitive', percent (default {DEFAULT_ALPHA})",
    )
    analyze_cmd.add_argument(
        "--beta",
        type=float,
        default=DEFAULT_BETA,
        help=f"QIR threshold for 'quasi_identifier', percent (default {DEFAULT_BETA})",
    )
    analyze_cmd.add_argument("--format", choices=("table", "json"), default="table")
    analyze_cmd.set_defaults(handler=_analyze)

    anonymize_cmd = commands.add_parser(
        "anonymize",
        help="k-anonymize a dataset and report before/after figures",
        description="Anonymize DATA (drop columns, Mondrian k-anonymity or the Anatomy-style "
        "partition), verify the result by measuring it, write it to OUT and print the "
        "before/after report. Exits 1 when the target cannot be met (nothing is written).",
    )
    anonymize_cmd.add_argument("data", metavar="DATA", help="dataset file (.csv, .json, .parquet)")
    anonymize_cmd.add_argument(
        "--qi",
        type=_column_list,
        required=True,
        metavar="A,B,C",
        help="quasi-identifiers to generalize",
    )
    anonymize_cmd.add_argument(
        "--sensitive",
        type=_column_list,
        default=[],
        metavar="D,E",
        help="sensitive attributes (kept; l and t are checked on them)",
    )
    anonymize_cmd.add_argument("--k", type=int, required=True, help="smallest class size")
    anonymize_cmd.add_argument("--l", type=int, help="distinct l-diversity to reach")
    anonymize_cmd.add_argument("--t", type=float, help="t-closeness to reach")
    anonymize_cmd.add_argument(
        "--drop", type=_column_list, default=[], metavar="NIN,Name", help="columns to remove first"
    )
    anonymize_cmd.add_argument("--method", choices=("mondrian", "partition"), default="mondrian")
    anonymize_cmd.add_argument(
        "--max-suppression",
        type=float,
        default=0.05,
        metavar="SHARE",
        help="largest share of rows that may be suppressed (default 0.05)",
    )
    anonymize_cmd.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output file (.csv, .json, .parquet), or folder for partition",
    )
    anonymize_cmd.add_argument(
        "--qid-dimension",
        action="store_true",
        help="also report privacy gain and utility of k-anonymizing the first d quasi-"
        "identifiers (by falling QIR risk), d = 1..m, and the recommended d",
    )
    anonymize_cmd.add_argument("--format", choices=("table", "json"), default="table")
    anonymize_cmd.set_defaults(handler=_anonymize)

    serve_cmd = commands.add_parser(
        "serve",
        help="run the federal broker (configured by BROKER_* variables)",
        description="Run the broker with uvicorn. Settings come from BROKER_* environment "
        "variables; --host and --port override BROKER_HOST and BROKER_PORT.",
    )
    serve_cmd.add_argument("--host", help="address to listen on")
    serve_cmd.add_argument("--port", type=int, help="port to listen on")
    serve_cmd.set_defaults(handler=_serve)

    db_cmd = commands.add_parser("db", help="database maintenance")
    db_actions = db_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade_cmd = db_actions.add_parser(
        "upgrade", help="apply the migrations up to the newest (BROKER_DATABASE_URL)"
    )
    upgrade_cmd.set_defaults(handler=_db_upgrade)

    audit_cmd = commands.add_parser(
        "audit",
        help="anchor the audit log: export its verified head, check it later",
        description="A hash chain shows altered or removed entries, but not entries cut from "
        "its end. Export the verified head (`fedbroker audit head -o head.json`), keep it "
        "elsewhere (another system, a ticket, print), and check the log against it later "
        "(`fedbroker audit check head.json`). Reads BROKER_DATABASE_URL.",
    )
    audit_actions = audit_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    head_cmd = audit_actions.add_parser("head", help="verify the chain and print its head (JSON)")
    head_cmd.add_argument("-o", "--output", help="also write the head to this file")
    head_cmd.set_defaults(handler=_audit_head)
    check_cmd = audit_actions.add_parser(
        "check", help="verify the chain and that it still holds an exported head"
    )
    check_cmd.add_argument("anchor", help="a file written by `fedbroker audit head -o`")
    check_cmd.set_defaults(handler=_audit_check)

    keys_cmd = commands.add_parser("keys", help="the broker's delivery signing keys")
    keys_actions = keys_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate_cmd = keys_actions.add_parser(
        "generate",
        help="add a new Ed25519 signing key (it signs from the next start; the older keys stay "
        "published until their files are removed)",
    )
    generate_cmd.add_argument(
        "folder", nargs="?", help="key folder (default: BROKER_SIGNING_KEY_DIR)"
    )
    generate_cmd.set_defaults(handler=_keys_generate)
    return parser


def _column_list(text: str) -> list[str]:
    columns = [part.strip() for part in text.split(",")]
    if any(not column for column in columns):
        raise argparse.ArgumentTypeError(f"empty column name in {text!r}")
    return columns


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _analyze(args: argparse.Namespace) -> int:
    thresholds = QirThresholds(args.alpha, args.beta)
    frame = read_path(args.data).frame
    large = len(frame) >= LARGE_INPUT_ROWS
    if large:
        _progress(f"read {len(frame):,} rows x {len(frame.columns)} columns from {args.data}")
    report = analyze(
        frame,
        args.qi,
        args.sensitive,
        args.combinations,
        thresholds,
        args.unique_threshold,
        progress=_progress if large else None,
    )
    if args.format == "json":
        json.dump(report.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_table(report, args.data))
    return 0


def _anonymize(args: argparse.Namespace) -> int:
    from broker.anonymize import Target, plan_remedy, qid_dimension

    frame = read_path(args.data).frame
    output = Path(args.output)
    if args.method == "mondrian" and output.suffix.lower() not in (".csv", ".json", ".parquet"):
        raise CommandError(f"{output}: the output must end in .csv, .json or .parquet")
    if args.method == "partition" and output.exists() and not output.is_dir():
        raise CommandError(f"{output} exists and is not a folder")
    target = Target(
        quasi_identifiers=tuple(args.qi),
        sensitive=tuple(args.sensitive),
        drop=tuple(args.drop),
        k=args.k,
        l=args.l,
        t=args.t,
        max_suppression=args.max_suppression,
    )
    before = analyze(frame, args.qi, args.sensitive, max_combination_size=0)
    remedy = plan_remedy(frame, target, method=args.method)
    if not remedy.satisfied:
        raise CommandFailed(f"cannot reach the target: {remedy.reason}")
    after = None
    if remedy.frame is not None:
        _write(remedy.frame, output)
        kept_qi = [q for q in args.qi if q in remedy.frame.columns]
        after = analyze(
            remedy.frame,
            kept_qi,
            [s for s in args.sensitive if s in remedy.frame.columns],
            max_combination_size=0,
        )
    else:
        output.mkdir(parents=True, exist_ok=True)
        for name, table in remedy.tables.items():
            _write(table, output / f"{name}.csv")
        (output / "links.json").write_text(
            json.dumps([link.as_dict() for link in remedy.links], indent=2) + "\n"
        )
    dimension = (
        qid_dimension(frame, args.qi, args.k, args.max_suppression) if args.qid_dimension else None
    )
    if args.format == "json":
        json.dump(
            {
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
        sys.stdout.write(render_anonymization(before, after, remedy, str(output)))
        if dimension:
            sys.stdout.write(render_qid_dimension(dimension))
    return 0


def render_qid_dimension(dimension) -> str:
    """QIR Algorithm 2: what k-anonymizing the d riskiest quasi-identifiers buys and costs."""
    rows = [
        (
            ("* " if level.dimension == dimension.recommended else "  ") + str(level.dimension),
            ", ".join(level.anonymized),
            str(level.k),
            f"{level.privacy_gain_percent:.1f}",
            f"{level.utility_percent:.1f}",
            f"{level.balance:.1f}",
        )
        for level in dimension.levels
    ]
    lines = [
        "",
        "QID dimension (quasi-identifiers by falling QIR risk: "
        + ", ".join(f"{q} {dimension.risk_percent[q]:.3g}%" for q in dimension.order)
        + ")",
    ]
    lines += _aligned(("d", "k-anonymized", "k", "privacy gain %", "utility %", "balance"), rows)
    lines.append(
        f"  recommended d = {dimension.recommended} (* : best harmonic mean of gain and utility)"
    )
    return "\n".join(lines) + "\n"


def _write(frame, path) -> None:
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            frame.to_parquet(path, index=False)
        elif suffix == ".json":
            frame.to_json(path, orient="records", force_ascii=False, indent=1)
        else:
            frame.to_csv(path, index=False)
    except OSError as error:
        reason = error.strerror or str(error)
        if isinstance(error, FileNotFoundError):
            reason = "the folder does not exist"
        raise CommandError(f"{path}: {reason}") from None


def render_anonymization(
    before: AnalysisReport, after: AnalysisReport | None, remedy, output: str
) -> str:
    lines = [f"wrote {output}", "", "Steps"]
    for step in remedy.steps:
        parameters = ", ".join(f"{k}={v}" for k, v in step.parameters.items())
        lines.append(f"  {step.method:<10} {step.column or '':<12} {parameters}")
    rows = []
    for label, report in (("before", before), ("after", after)):
        if report is None or report.quasi_identifiers is None:
            continue
        qi = report.quasi_identifiers
        sensitive = ", ".join(
            f"{s.name}: l={s.l_diversity} t={s.t_closeness:.3f}" for s in report.sensitive
        )
        rows.append(
            (
                label,
                f"{report.rows:,}",
                str(qi.anonymity.k),
                f"{qi.anonymity.equivalence_classes:,}",
                f"{qi.anonymity.prosecutor_risk.max:.3f}",
                f"{qi.anonymity.prosecutor_risk.average:.3f}",
                qi.measure.mmaq,
                sensitive or "-",
            )
        )
    lines += ["", "Before and after"]
    lines += _aligned(
        ("", "rows", "k", "classes", "max risk", "avg risk", "QI Mmaq", "sensitive"), rows
    )
    if remedy.information_loss is not None:
        loss = remedy.information_loss
        lines += [
            "",
            f"Information loss: utility kept {loss.utility_percent:.2f}% "
            f"(non-uniform entropy), discernibility {loss.discernibility:,}, "
            f"suppressed rows {loss.suppressed_rows:,}, "
            f"suppressed cells {loss.suppressed_cell_share:.1%}",
        ]
    failed = [c for c in remedy.checks if not c.passed]
    lines.append(f"Checks: {len(remedy.checks) - len(failed)} of {len(remedy.checks)} passed")
    lines += [f"Note: {note}" for note in remedy.notes]
    return "\n".join(lines) + "\n"


def _settings(**overrides):
    from pydantic import ValidationError

    from broker.config import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as error:
        first = error.errors()[0]
        field = "BROKER_" + "_".join(str(p) for p in first["loc"]).upper()
        raise CommandError(f"{field}: {first['msg']}") from None


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from broker.db import make_engine
    from broker.delivery.keyring import KeyRing
    from broker.main import create_app
    from broker.policies.seed import load_records
    from broker.requests_log import configure_logging
    from broker.wire.signing import SignatureError

    settings = _settings(host=args.host, port=args.port)
    if settings.admin_token is None:
        raise CommandError(
            "BROKER_ADMIN_TOKEN is not set: give the broker an admin token of "
            "at least 16 characters"
        )
    load_records(settings.policy_dir)  # a bad seed file is one line here, not a traceback
    try:  # and so is a signing key folder the broker cannot use
        KeyRing.load(settings.signing_key_dir, create=settings.signing_key_create)
    except (SignatureError, OSError) as error:
        raise CommandError(f"BROKER_SIGNING_KEY_DIR: {error}") from None
    with _database_errors():  # an unreachable database too
        engine = make_engine(settings.database_url)
        with engine.connect():
            pass
        engine.dispose()
    configure_logging()
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        log_config=None,  # uvicorn's records go to the JSON handler, with their request id
    )
    return 0


def _audit_session():
    from broker.db import make_engine, make_sessionmaker

    settings = _settings()
    with _database_errors():
        engine = make_engine(settings.database_url)
    return make_sessionmaker(engine)()


def _audit_head(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from broker.audit.service import verify

    with _database_errors(), _audit_session() as session:
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


def _audit_check(args: argparse.Namespace) -> int:
    from broker.audit.service import check_anchor

    try:
        anchor = json.loads(Path(args.anchor).read_text())
        anchor_id, anchor_hash = int(anchor["head_id"]), str(anchor["head_hash"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CommandError(
            f"{args.anchor}: not a head written by `fedbroker audit head` ({error})"
        ) from None
    with _database_errors(), _audit_session() as session:
        verification = check_anchor(session, anchor_id, anchor_hash)
    if not verification.valid:
        raise CommandFailed(f"the audit log does not hold its anchor: {verification.reason}")
    print(
        f"ok: {verification.entries_checked} entries verified; entry {anchor_id} still has the "
        f"anchored hash; the head is now entry {verification.head_id}"
    )
    return 0


def _keys_generate(args: argparse.Namespace) -> int:
    from broker.delivery.keyring import generate

    folder = Path(args.folder) if args.folder else _settings().signing_key_dir
    try:
        path = generate(folder)
    except OSError as error:
        raise CommandError(f"{folder}: {error.strerror}") from None
    print(f"new signing key {path.stem} in {path} (mode 0600); restart the broker to sign with it")
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from broker.db import make_engine, upgrade

    settings = _settings()
    with _database_errors():
        upgrade(make_engine(settings.database_url))
    print(f"database schema is at the newest migration ({settings.database_url.split('@')[-1]})")
    return 0


@contextmanager
def _database_errors() -> Iterator[None]:
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


_CLASS_MARK = {
    "identifier": "IDENTIFIER !",
    "quasi_identifier": "quasi-identifier",
    "anonymous": "anonymous",
}


def render_table(report: AnalysisReport, source: str) -> str:
    """The report for people: aligned columns, identifying classes marked."""
    lines = [f"{source}: {report.rows:,} rows, {len(report.attributes)} attributes", ""]
    header = (
        "attribute",
        "categories",
        "Hn",
        "log10 Mmaq",
        "Mmaq",
        "index",
        "class",
        "QIR %",
        "QIR class",
    )
    rows = [
        (
            a.name,
            f"{a.measure.categories:,}",
            f"{a.measure.shannon_normalized:.4f}",
            f"{a.measure.log10_mmaq:.4f}",
            a.measure.mmaq,
            f"{a.measure.mmaq_index:.4f}",
            _CLASS_MARK[a.measure.attribute_class],
            f"{a.qir_risk_percent:.4g}",
            a.qir_class,
        )
        for a in report.attributes
    ]
    lines += _aligned(header, rows)

    lines += ["", "Identifying combinations"]
    if report.combinations:
        rows = [
            (
                " + ".join(c.attributes),
                f"{c.unique_share:.1%}",
                c.measure.mmaq,
                _CLASS_MARK[c.measure.attribute_class],
            )
            for c in report.combinations
        ]
        lines += _aligned(("attributes", "unique rows", "Mmaq", "class"), rows)
    else:
        lines.append("  none found")
    if report.combination_search and report.combination_search.note:
        lines.append(f"  note: {report.combination_search.note}")

    qi = report.quasi_identifiers
    if qi:
        risk = qi.anonymity.prosecutor_risk
        histogram = ", ".join(
            f"{size}:{count}" for size, count in qi.anonymity.class_size_histogram.items()
        )
        lines += [
            "",
            f"Quasi-identifiers {' + '.join(qi.attributes)}",
            f"  k = {qi.anonymity.k}   equivalence classes = "
            f"{qi.anonymity.equivalence_classes:,}   class sizes (size:count) = {histogram}",
            f"  prosecutor risk: max {risk.max:.4f}, average {risk.average:.4f}, "
            f"unique rows {risk.unique_share:.1%}",
            f"  combined: Mmaq {qi.measure.mmaq}, index {qi.measure.mmaq_index:.4f}, "
            f"{_CLASS_MARK[qi.measure.attribute_class]}",
        ]
    if report.sensitive:
        rows = [
            (
                s.name,
                str(s.l_diversity),
                f"{s.entropy_l_diversity:.3f}",
                f"{s.t_closeness:.4f}",
                s.t_closeness_method,
            )
            for s in report.sensitive
        ]
        lines += ["", "Sensitive attributes"]
        lines += _aligned(("attribute", "l (distinct)", "l (entropy)", "t", "t method"), rows)
    return "\n".join(lines) + "\n"


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return (
            "  " + "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        )

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


if __name__ == "__main__":
    sys.exit(main())

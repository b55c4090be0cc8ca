"""The command line's text renderings, for people (``--format table``): aligned columns.

``--format json`` is the stable contract for scripts; these are for reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.metrics.report import AnalysisReport
    from broker.metrics.suda import Suda


def class_name(value: str) -> str:
    """A Mmaq class as the tables show it, one spelling each: ``quasi_identifier`` (the JSON
    contract's spelling) reads ``quasi-identifier``."""
    return value.replace("_", "-")


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
        "Mmaq class",
        "QIR %",
        "QIR level",
    )
    rows = [
        (
            a.name,
            f"{a.measure.categories:,}",
            f"{a.measure.shannon_normalized:.4f}",
            f"{a.measure.log10_mmaq:.4f}",
            a.measure.mmaq,
            f"{a.measure.mmaq_index:.4f}",
            class_name(a.measure.attribute_class),
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
                class_name(c.measure.attribute_class),
            )
            for c in report.combinations
        ]
        lines += _aligned(("attributes", "unique rows", "Mmaq", "Mmaq class"), rows)
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
            _journalist_line(qi.anonymity),
            f"  combined: Mmaq {qi.measure.mmaq}, index {qi.measure.mmaq_index:.4f}, "
            f"Mmaq class {class_name(qi.measure.attribute_class)}",
        ]
    if report.population:
        lines += _population_lines(report.population)
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


def render_suda(suda: Suda, shown: int = 10) -> str:
    """SUDA in short: how many records have special uniques, the riskiest, each key's share."""
    msus = suda.msus
    bounded = suda.max_msu_size < len(suda.columns)
    limit = f" of at most {suda.max_msu_size} keys" if bounded else ""
    lines = [
        f"SUDA on {', '.join(suda.columns)} (DIS fraction {suda.dis_fraction:g}): "
        f"{int((msus > 0).sum()):,} of {msus.size:,} records have minimal sample uniques{limit}",
    ]
    riskiest = suda.riskiest(shown)
    if riskiest.size:
        rows = [
            (
                f"{row:,}",
                f"{msus[row]:,}",
                f"{suda.scores[row]:.6g}",
                f"{suda.dis_scores[row]:.4g}",
            )
            for row in riskiest.tolist()
        ]
        lines += ["", f"Riskiest records (row 0-based, the {riskiest.size} highest DIS-SUDA)"]
        lines += _aligned(("row", "MSUs", "SUDA score", "DIS-SUDA"), rows)
        contributions = [(n, f"{p:.1f} %") for n, p in suda.attribute_contributions.items()]
        lines += ["", "Contribution of each key to the total SUDA score"]
        lines += _aligned(("key", "contribution"), contributions)
    return "\n".join(lines) + "\n"


LOW_UTILITY_PERCENT = 10.0  # below it, the summary warns that the output says little


@dataclass(frozen=True)
class AnonymizationSummary:
    """What ``fedbroker anonymize`` did, in words, before the figures: the k asked and the k
    used (and why they differ), the checks that ran, the utility kept."""

    k_asked: int
    k_used: int | None
    k_output: int | None
    quasi_identifiers: tuple[str, ...]
    k_reason: str | None
    checks: tuple[str, ...]
    utility_percent: float | None
    warnings: tuple[str, ...]

    def lines(self, output: str) -> list[str]:
        passed = sum(1 for c in self.checks if c.endswith("passed"))
        parts = [f"wrote {output}"]
        if self.k_output is not None:
            ran = (
                ""
                if self.k_used in (None, self.k_asked)
                else f"; the method ran with k = {self.k_used}"
            )
            parts.append(
                f"k = {self.k_output} on {', '.join(self.quasi_identifiers)} (asked "
                f"{self.k_asked}{ran})"
            )
        parts.append(f"{passed} of {len(self.checks)} checks passed on the output, measured again")
        if self.utility_percent is not None:
            parts.append(f"utility kept {self.utility_percent:.2f}%")
        lines = ["Anonymized: " + "; ".join(parts)]
        if self.k_reason:
            lines.append(f"  - {self.k_reason}")
        lines += [f"  - warning: {w}" for w in self.warnings]
        return lines

    def as_dict(self) -> dict:
        return {
            "k_asked": self.k_asked,
            "k_used": self.k_used,
            "k_output": self.k_output,
            "k_reason": self.k_reason,
            "checks": list(self.checks),
            "utility_percent": self.utility_percent,
            "warnings": list(self.warnings),
        }


def summarize_anonymization(
    k: int, l: int | None, t: float | None, after: AnalysisReport | None, remedy
) -> AnonymizationSummary:
    """The planner starts at k0 = max(k, l, 2 when t is asked) and doubles k while a check that
    a larger k can fix fails (t; from the command line, nothing else): so a k used above k0
    means t did not hold at each smaller k tried."""
    cutting = [s for s in remedy.steps if "k" in s.parameters]
    used = cutting[-1].parameters["k"] if cutting else None
    start = max(k, l or 1, 2 if t is not None else 1)
    reasons = []
    if start > k:
        reasons.append(
            f"k starts at {start}, not {k}: "
            + (
                f"l = {l} distinct values need classes of at least {l} rows"
                if (l or 1) > k
                else "t is measured between classes, so classes need at least 2 rows"
            )
        )
    if used is not None and used > start:
        tried = []
        n = start
        while n < used:
            tried.append(str(n))
            n *= 2
        reasons.append(
            f"k raised from {k} to {used}: at k = {', '.join(tried)} t-closeness stayed above "
            f"{t:g} (the planner doubles k until every check passes)"
            if t is not None
            else f"k raised from {k} to {used}: a check failed at k = {', '.join(tried)}"
        )
    step_reasons = [r for s in cutting if (r := getattr(s, "reason", None))]
    k_reason = "; ".join(reasons) or None
    if step_reasons and used is not None and used > k:
        k_reason = step_reasons[-1]  # the planner's own words, when it gives them
    checks = tuple(_check_text(c) for c in remedy.checks)
    loss = remedy.information_loss
    utility = None if loss is None else loss.utility_percent
    warnings = []
    qi = after.quasi_identifiers if after is not None else None
    if qi is not None and qi.anonymity.equivalence_classes == 1 and after.rows > 1:
        warnings.append(
            f"every row is in one class: {', '.join(qi.attributes)} no longer tell any row "
            "from another"
        )
    if utility is not None and utility < LOW_UTILITY_PERCENT:
        warnings.append(
            f"only {utility:.2f}% of the information is kept: ask for less (a smaller k, a "
            "larger t), or try --method generalization"
        )
    return AnonymizationSummary(
        k,
        used,
        qi.anonymity.k if qi is not None else None,
        qi.attributes if qi is not None else (),
        k_reason,
        checks,
        utility,
        tuple(warnings),
    )


def _check_text(check) -> str:
    """``t of Disease <= 0.1: 0.000, passed``."""
    where = f" of {check.attribute}" if check.attribute else ""
    if check.rule == "drop":
        return f"{check.attribute} dropped: {'passed' if check.passed else 'FAILED'}"
    op = ">=" if check.rule in ("k", "l") else "<="
    label = {"max_suppression": "suppressed share"}.get(check.rule, check.rule)
    measured = "not measurable" if check.measured is None else _figure(check.measured)
    return (
        f"{label}{where} {op} {_figure(check.limit)}: {measured}, "
        f"{'passed' if check.passed else 'FAILED'}"
    )


def _figure(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def render_anonymization(
    before: AnalysisReport,
    after: AnalysisReport | None,
    remedy,
    output: str,
    summary: AnonymizationSummary,
) -> str:
    """What ``fedbroker anonymize`` did: the summary, steps, figures before and after, the
    checks, information loss."""
    lines = [*summary.lines(output), "", "Steps"]
    for step in remedy.steps:
        from broker.anonymize.steps import shown_parameters  # not at import: --help stays light

        parameters = shown_parameters(step.parameters)
        lines.append(f"  {step.method:<10} {step.column or '':<12} {parameters}".rstrip())
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
        ("", "rows", "k", "classes", "max risk", "avg risk", "combined Mmaq", "sensitive"), rows
    )
    lines += ["", "Checks (on the output, measured again)"]
    lines += [f"  {check}" for check in summary.checks]
    if remedy.information_loss is not None:
        loss = remedy.information_loss
        per_attribute = ", ".join(
            f"{name} {value:.1f}%" for name, value in loss.attribute_utility_percent.items()
        )
        lines += [
            "",
            f"Information loss: utility kept {loss.utility_percent:.2f}% (non-uniform entropy"
            + (f"; {per_attribute}" if per_attribute else "")
            + f"), discernibility {loss.discernibility:,}, "
            f"suppressed rows {loss.suppressed_rows:,}, "
            f"suppressed cells {loss.suppressed_cell_share:.1%}",
        ]
    lines += [f"Note: {note}" for note in remedy.notes]
    return "\n".join(lines) + "\n"


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
        "Quasi-identifier dimension (quasi-identifiers by falling QIR risk: "
        + ", ".join(f"{q} {dimension.risk_percent[q]:.3g}%" for q in dimension.order)
        + ")",
    ]
    lines += _aligned(("d", "k-anonymized", "k", "privacy gain %", "utility %", "balance"), rows)
    lines.append(
        f"  recommended d = {dimension.recommended} (* : best harmonic mean of gain and utility)"
    )
    return "\n".join(lines) + "\n"


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return (
            "  " + "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        )

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _journalist_line(anonymity) -> str:
    against = "the population table" if anonymity.against_population else "itself as population"
    journalist = anonymity.journalist_risk
    if journalist is None:
        return f"  marketer risk {anonymity.marketer_risk:.4f} (against {against})"
    return (
        f"  journalist risk: max {journalist.max:.4f}, average {journalist.average:.4f}; "
        f"marketer risk {anonymity.marketer_risk:.4f} (against {against})"
    )


def _population_lines(population) -> list[str]:
    """The dataset as a sample: population uniqueness by model, individual risk, k-map."""
    uniqueness, risk = population.uniqueness, population.individual_risk
    rows = [
        (
            ("* " if name == uniqueness.dankar_model else "  ") + name,
            "-" if estimate.uniques is None else f"{estimate.uniques:,.1f}",
            "-" if estimate.share is None else f"{estimate.share:.4%}",
        )
        for name, estimate in (
            ("pitman", uniqueness.pitman),
            ("zayatz", uniqueness.zayatz),
            ("snb", uniqueness.snb),
        )
    ]
    dankar = uniqueness.dankar
    lines = [
        "",
        f"As a sample of its population: sampling fraction {population.sampling_fraction:.4g} "
        f"({population.fraction_from.replace('_', ' ')}), population "
        f"{uniqueness.population_size:,}",
        *_aligned(("model", "population uniques", "share"), rows),
        f"  Dankar's rule ({uniqueness.dankar_model}): "
        + ("no valid estimate" if dankar.share is None else f"{dankar.share:.4%} unique"),
        f"  individual risk (weights: {risk.weights}): max {risk.max:.4f}, average "
        f"{risk.average:.4f}, expected re-identifications {risk.expected_reidentifications:,.2f}",
    ]
    if population.k_map is not None:
        lines.append(f"  k-map = {population.k_map} (against the population table)")
    return lines

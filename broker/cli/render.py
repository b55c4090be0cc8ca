"""The command line's text renderings, for people (``--format table``): aligned columns.

``--format json`` is the stable contract for scripts; these are for reading.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.metrics.report import AnalysisReport

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
            _journalist_line(qi.anonymity),
            f"  combined: Mmaq {qi.measure.mmaq}, index {qi.measure.mmaq_index:.4f}, "
            f"{_CLASS_MARK[qi.measure.attribute_class]}",
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


def render_anonymization(
    before: AnalysisReport, after: AnalysisReport | None, remedy, output: str
) -> str:
    """What ``fedbroker anonymize`` did: steps, figures before and after, information loss."""
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

"""The rules themselves: the gate (destination, purpose) and the data rules of one rule set.

Each function returns :class:`~broker.fsla.results.RuleResult` objects, passed or not; which rule
sets apply and how they combine is :mod:`broker.fsla.evaluate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from fractions import Fraction

from broker.engines.base import PERSON_KEY, WORST_CASE
from broker.fsla.identifying import identifying
from broker.fsla.models import FSLARecord, RecursiveDiversityRule, RuleSet
from broker.fsla.precision import precision_rules
from broker.fsla.results import EXPORT, IMPORT, Requirements, RuleResult, TransferContext
from broker.metrics.anonymity import SensitiveMeasure
from broker.metrics.content import looks_sensitive
from broker.metrics.mmaq import IDENTIFIER
from broker.metrics.report import AnalysisReport
from broker.metrics.uniqueness import (
    k_for_expected_reidentifications,
    population_uniqueness,
    uniform_individual_risk,
)
from broker.privacy.budget import Asked, Budget, Spend, Standing, parse_amount, show, total


def _in_people(report: AnalysisReport, k: int, rows_k: int) -> str:
    """What the people count means, when it differs from the row count."""
    if k == rows_k:
        return ""
    if report.people_counted_by == PERSON_KEY:
        return f" people by the declared person key ({rows_k} counted in rows)"
    if report.people_counted_by == WORST_CASE:
        return (
            f" people at worst ({rows_k} counted in rows: {report.rare_tuple_rows:,} rows repeat "
            f"{report.rare_tuples:,} rare tuple(s) of the quasi-identifiers, and without a person "
            "key the broker counts each such tuple's rows as one person, as it cannot tell one "
            "person sent several times from several; declare person_key to count people)"
        )
    return (
        f" people ({rows_k} counted in rows: {report.duplicate_rows:,} rows repeat another row "
        "exactly and, without a person key, the broker counts identical rows as one person; "
        "declare person_key to count people)"
    )


def _risk(report: AnalysisReport, rule: str) -> float:
    """The journalist (highest) or marketer risk; without quasi-identifiers the table is one
    class."""
    qi = report.quasi_identifiers
    if qi is None:
        return 1.0 / report.rows
    if rule == "max_journalist_risk":
        return qi.anonymity.journalist_risk.max
    return qi.anonymity.marketer_risk


def k_for(risk: float) -> int:
    """The smallest k whose classes bring both risks down to ``risk``: every class of k rows or
    more has a population class as large, so 1 / k bounds the journalist risk and classes / N
    (or the mean of f / F) the marketer risk.

    Examples
    --------
    >>> k_for(0.2), k_for(0.1), k_for(0.3), k_for(1.0)
    (5, 10, 4, 1)
    """
    return math.ceil(1 / Fraction(risk))


def l_for(share: float) -> int:
    """The fewest distinct values a class needs for no value to exceed ``share`` of it: what
    (alpha, k)-anonymity asks of l (necessary, not sufficient: the remedy is verified).

    Examples
    --------
    >>> l_for(0.5), l_for(0.3), l_for(1.0)
    (2, 4, 1)
    """
    return math.ceil(1 / Fraction(share))


def gate_rules(
    context: TransferContext, source: FSLARecord, destination: FSLARecord
) -> list[RuleResult]:
    to = context.destination_jurisdiction
    rules = [
        RuleResult(
            "destination_allowed",
            EXPORT,
            source.jurisdiction,
            passed=source.allows_destination(to),
            measured=to,
            threshold=", ".join(source.allowed_destinations) or "domestic only",
            detail=(
                f"{source.jurisdiction} allows transfers to {to}"
                if source.allows_destination(to)
                else f"{source.jurisdiction} does not allow personal data to go to {to}"
            ),
            fixable=False,
        )
    ]
    checks = [(EXPORT, source)] + ([(IMPORT, destination)] if context.cross_border else [])
    for scope, record in checks:
        allowed = record.allows_purpose(context.purpose)
        rules.append(
            RuleResult(
                "purpose_allowed",
                scope,
                record.jurisdiction,
                passed=allowed,
                measured=context.purpose,
                threshold=", ".join(record.allowed_purposes),
                detail=(
                    f"{record.jurisdiction} allows the purpose {context.purpose!r}"
                    if allowed
                    else f"{record.jurisdiction} does not allow the purpose {context.purpose!r}"
                ),
                fixable=False,
            )
        )
    return rules


def data_rules(
    report: AnalysisReport, context: TransferContext, scope: str, jurisdiction: str, rules_: RuleSet
) -> list[RuleResult]:
    where = f"{jurisdiction} ({scope})"
    sensitive = set(context.sensitive)
    judged_by_mmaq = [a for a in report.attributes if a.name not in sensitive]
    results: list[RuleResult] = []

    def per_attribute(rule: str, failing: list, describe, threshold, summary: str) -> None:
        for attribute, measured in failing:
            results.append(
                RuleResult(
                    rule,
                    scope,
                    jurisdiction,
                    False,
                    describe(attribute),
                    attribute.name,
                    measured,
                    threshold,
                )
            )
        if not failing:
            results.append(
                RuleResult(rule, scope, jurisdiction, True, summary, threshold=threshold)
            )

    if rules_.require_person_key:
        declared = context.person_key is not None
        results.append(
            RuleResult(
                "person_key_declared",
                scope,
                jurisdiction,
                declared,
                f"k counts people by the declared person key {context.person_key!r}"
                if declared
                else f"{where} requires a person key: send again with person_key naming the "
                "column that identifies each row's person (pseudonymous; it never leaves)",
                context.person_key,
                fixable=False,
            )
        )

    results += precision_rules(report, scope, jurisdiction, rules_)

    if rules_.forbidden_attributes:
        per_attribute(
            "forbidden_attribute",
            [(a, a.name) for a in report.attributes if rules_.forbids(a.name)],
            lambda a: f"{where} forbids the attribute {a.name!r} from passing: drop it",
            ", ".join(rules_.forbidden_attributes),
            f"no attribute forbidden by {where} is present",
        )

    if not rules_.identifiers_allowed:
        per_attribute(
            "no_identifiers",
            [(a, IDENTIFIER) for a in report.attributes if identifying(a, sensitive, rules_.min_k)],
            lambda a: (
                f"{a.name!r} holds {a.content.direct_identifier.replace('_', ' ')} values, "
                f"direct identifiers, and {where} forbids identifiers: drop it"
                if a.content.direct_identifier
                else f"{a.name!r} singles out "
                f"{a.rows_in_values_smaller_than(max(rules_.min_k or 2, 2)):,} of "
                f"{a.measure.rows:,} rows (values fewer than {max(rules_.min_k or 2, 2)} rows "
                f"hold) and {where} forbids identifiers: declared sensitive or not, drop or "
                "generalize it"
                if a.measure.attribute_class != IDENTIFIER
                else f"{a.name!r} is an identifier (all {a.measure.categories:,} values are "
                f"distinct) and {where} forbids identifiers: drop or generalize it"
            ),
            "no identifier",
            f"no attribute is an identifier ({where} forbids them)",
        )

    if rules_.min_log10_mmaq is not None:
        floor = rules_.min_log10_mmaq
        per_attribute(
            "min_log10_mmaq",
            [
                (a, round(a.measure.log10_mmaq, 6))
                for a in judged_by_mmaq
                if a.measure.log10_mmaq < floor
            ],
            lambda a: (
                f"{a.name!r} has log10 Mmaq {a.measure.log10_mmaq:.4g}, below the "
                f"{floor:g} that {where} requires: generalize or suppress it"
            ),
            floor,
            f"every attribute has log10 Mmaq >= {floor:g}",
        )

    if rules_.max_mmaq_index is not None:
        ceiling = rules_.max_mmaq_index
        per_attribute(
            "max_mmaq_index",
            [
                (a, round(a.measure.mmaq_index, 6))
                for a in judged_by_mmaq
                if a.measure.mmaq_index > ceiling
            ],
            lambda a: (
                f"{a.name!r} has Mmaq index {a.measure.mmaq_index:.4f}, above the "
                f"{ceiling:g} that {where} allows: generalize or suppress it"
            ),
            ceiling,
            f"every attribute has Mmaq index <= {ceiling:g}",
        )

    qi = report.quasi_identifiers
    qi_names = ", ".join(context.quasi_identifiers) or "(none)"
    if rules_.qi_max_mmaq_index is not None:
        measured = qi.measure.mmaq_index if qi else 0.0
        results.append(
            RuleResult(
                "qi_max_mmaq_index",
                scope,
                jurisdiction,
                measured <= rules_.qi_max_mmaq_index,
                f"the quasi-identifiers {qi_names} together have Mmaq index {measured:.4f}; "
                f"{where} allows at most {rules_.qi_max_mmaq_index:g}",
                qi_names,
                round(measured, 6),
                rules_.qi_max_mmaq_index,
            )
        )

    if rules_.min_k is not None:
        k = qi.anonymity.k_people if qi else report.rows - report.duplicate_rows
        rows_k = qi.anonymity.k if qi else report.rows
        results.append(
            RuleResult(
                "min_k",
                scope,
                jurisdiction,
                k >= rules_.min_k,
                f"the quasi-identifiers {qi_names} give k = {k}{_in_people(report, k, rows_k)}; "
                f"{where} requires k >= {rules_.min_k}"
                + ("" if k >= rules_.min_k else ": k-anonymize them"),
                qi_names,
                k,
                rules_.min_k,
            )
        )

    risks = (
        ("max_journalist_risk", "journalist risk", rules_.max_journalist_risk),
        ("max_marketer_risk", "marketer risk", rules_.max_marketer_risk),
    )
    for rule, label, ceiling in risks:
        if ceiling is None:
            continue
        measured = _risk(report, rule)
        against = (
            "its population table"
            if qi and qi.anonymity.against_population
            else "the dataset taken as the whole population"
        )
        results.append(
            RuleResult(
                rule,
                scope,
                jurisdiction,
                measured <= ceiling,
                f"the quasi-identifiers {qi_names} give a {label} of {measured:.4g} (against "
                f"{against}); {where} allows at most {ceiling:g}"
                + ("" if measured <= ceiling else f": k-anonymize them with k >= {k_for(ceiling)}"),
                qi_names,
                round(measured, 6),
                ceiling,
            )
        )

    results += _population_rules(report, rules_, scope, jurisdiction, qi_names)

    results += _sensitive_declared(report, context, scope, jurisdiction, rules_)
    several = len(report.sensitive) > 1
    for measure in report.sensitive:
        name = measure.name
        l_value, t_value = measure.l_diversity, measure.t_closeness
        if several and rules_.min_k is not None:
            known = ", ".join(measure.known_attributes)
            results.append(
                RuleResult(
                    "min_k",
                    scope,
                    jurisdiction,
                    measure.k >= rules_.min_k,
                    f"whoever knows {known} narrows a row down to k = {measure.k} rows before "
                    f"learning its {name!r}; {where} requires k >= {rules_.min_k} (with several "
                    "sensitive attributes, each is protected as if the others were known)",
                    name,
                    measure.k,
                    rules_.min_k,
                )
            )
        if rules_.min_l is not None:
            results.append(
                RuleResult(
                    "min_l",
                    scope,
                    jurisdiction,
                    l_value >= rules_.min_l,
                    f"{name!r} has l = {l_value} distinct values in its poorest class; {where} "
                    f"requires l >= {rules_.min_l}",
                    name,
                    l_value,
                    rules_.min_l,
                )
            )
        if rules_.max_alpha is not None:
            share = measure.alpha
            results.append(
                RuleResult(
                    "max_alpha",
                    scope,
                    jurisdiction,
                    share <= rules_.max_alpha,
                    f"one value of {name!r} makes up {share:.4g} of a class; {where} allows at "
                    f"most {rules_.max_alpha:g} ((alpha, k)-anonymity)"
                    + (
                        ""
                        if share <= rules_.max_alpha
                        else f": the remedy asks for l >= {l_for(rules_.max_alpha)} distinct "
                        "values per class and raises k until the result, measured again, passes"
                    ),
                    name,
                    round(share, 6),
                    rules_.max_alpha,
                )
            )
        if rules_.recursive_c_l is not None:
            results.append(_recursive_rule(measure, rules_.recursive_c_l, scope, jurisdiction))
        results += _likeness_rules(measure, rules_, scope, jurisdiction)
        if rules_.max_t is not None:
            results.append(
                RuleResult(
                    "max_t",
                    scope,
                    jurisdiction,
                    t_value <= rules_.max_t,
                    f"{name!r} has t = {t_value:.4f}; {where} allows t <= {rules_.max_t:g}",
                    name,
                    round(t_value, 6),
                    rules_.max_t,
                )
            )
    return results


_SENSITIVE_RULES = (
    "min_l",
    "max_alpha",
    "recursive_c_l",
    "max_beta",
    "max_enhanced_beta",
    "max_delta",
    "max_t",
)


def _sensitive_declared(
    report: AnalysisReport, context: TransferContext, scope: str, jurisdiction: str, rules_
) -> list[RuleResult]:
    """A note (a passed rule) when the rule set judges sensitive attributes and the sender
    declared none: its l and t rules then check nothing. Undeclared columns are not let off
    (they are judged by Mmaq and k as quasi-identifiers or identifiers), but the sender likely
    forgot the `sensitive` field; the columns whose names look sensitive are named, as a guess."""
    asked = [name for name in _SENSITIVE_RULES if getattr(rules_, name) is not None]
    if not asked or context.sensitive:
        return []
    guessed = looks_sensitive([a.name for a in report.attributes])
    hint = (
        f"columns that look sensitive (a guess from their names): {', '.join(guessed)}"
        if guessed
        else "no column's name looks sensitive"
    )
    return [
        RuleResult(
            "sensitive_declared",
            scope,
            jurisdiction,
            True,
            f"{jurisdiction} ({scope}) sets {', '.join(asked)} for sensitive attributes, and the "
            f"request declares none in the `sensitive` form field, so they check nothing; {hint}",
            ", ".join(guessed) or None,
            "none declared",
            ", ".join(asked),
        )
    ]


def _population_rules(
    report: AnalysisReport, rules_: RuleSet, scope: str, jurisdiction: str, qi_names: str
) -> list[RuleResult]:
    """Population uniqueness and expected re-identifications at the rule set's stated sampling
    fraction, from the quasi-identifiers' class sizes (without them, the table is one class)."""
    pi = rules_.sampling_fraction
    if pi is None:
        return []
    where = f"{jurisdiction} ({scope})"
    qi = report.quasi_identifiers
    histogram = qi.anonymity.class_size_histogram if qi else {report.rows: 1}
    results = []
    if rules_.max_population_uniqueness is not None:
        estimate = population_uniqueness(histogram, pi)
        bound = rules_.max_population_uniqueness
        share = estimate.dankar.share
        if share is None:  # no model gives an estimate: the sample's own uniqueness
            share = histogram.get(1, 0) / report.rows
        passed = share <= bound
        results.append(
            RuleResult(
                "max_population_uniqueness",
                scope,
                jurisdiction,
                passed,
                f"the quasi-identifiers {qi_names} leave an estimated {share:.4%} of the "
                f"population unique (Dankar et al.'s rule chose {estimate.dankar_model}; "
                f"sampling fraction {pi:g} as {where} states); {where} allows at most "
                f"{bound:g}" + ("" if passed else ": k-anonymize them with k >= 2"),
                qi_names,
                round(share, 6),
                bound,
            )
        )
    if rules_.max_expected_reidentifications is not None:
        expected = uniform_individual_risk(histogram, pi)
        bound = rules_.max_expected_reidentifications
        passed = expected <= bound
        k = k_for_expected_reidentifications(report.rows, pi, bound)
        results.append(
            RuleResult(
                "max_expected_reidentifications",
                scope,
                jurisdiction,
                passed,
                f"the quasi-identifiers {qi_names} give {expected:.4g} expected "
                f"re-identifications (individual risk, each row standing for {1 / pi:.4g} "
                f"people as {where} states); {where} allows at most {bound:g}"
                + ("" if passed else f": k-anonymize them with k >= {k}"),
                qi_names,
                round(expected, 6),
                bound,
            )
        )
    return results


def _recursive_rule(
    measure: SensitiveMeasure, rule: RecursiveDiversityRule, scope: str, jurisdiction: str
) -> RuleResult:
    """Recursive (c, l)-diversity of one sensitive attribute, from the report's bounds."""
    where, name = f"{jurisdiction} ({scope})", measure.name
    stated = f"{where} requires recursive ({rule.c:g}, {rule.l})-diversity"
    remedy = (
        f": the remedy asks for l >= {rule.l} distinct values per class and raises k until the "
        "result, measured again, passes"
    )
    if rule.l > measure.l_diversity:
        return RuleResult(
            "recursive_c_l",
            scope,
            jurisdiction,
            False,
            f"{name!r} has a class of {measure.l_diversity} distinct values, fewer than "
            f"l = {rule.l}; {stated}{remedy}",
            name,
            f"l = {measure.l_diversity}",
            f"c = {rule.c:g}, l = {rule.l}",
        )
    bound = measure.recursive_c_bounds[rule.l - 2]
    passed = rule.c > bound
    return RuleResult(
        "recursive_c_l",
        scope,
        jurisdiction,
        passed,
        f"{name!r} holds recursive (c, {rule.l})-diversity for every c above {bound:.4g}; "
        f"{stated}" + ("" if passed else remedy),
        name,
        round(bound, 6),
        f"c = {rule.c:g}, l = {rule.l}",
    )


GROWING_K = (
    ": the remedy k-anonymizes the quasi-identifiers with k raised (larger classes come closer "
    "to the table's distribution) until the result, measured again, passes"
)


def _likeness_rules(
    measure: SensitiveMeasure, rules_: RuleSet, scope: str, jurisdiction: str
) -> list[RuleResult]:
    """Basic and enhanced beta-likeness and delta-disclosure of one sensitive attribute."""
    where, name = f"{jurisdiction} ({scope})", measure.name
    results = []
    if rules_.max_beta is not None:
        beta, bound = measure.beta_likeness, rules_.max_beta
        results.append(
            RuleResult(
                "max_beta",
                scope,
                jurisdiction,
                beta <= bound,
                f"a value of {name!r} gains {beta:.4g} (relative) on its share of the table "
                f"in a class; {where} allows at most {bound:g} (basic beta-likeness)"
                + ("" if beta <= bound else GROWING_K),
                name,
                round(beta, 6),
                bound,
            )
        )
    if rules_.max_enhanced_beta is not None:
        beta, bound = measure.enhanced_beta_likeness, rules_.max_enhanced_beta
        passed = beta is not None and beta <= bound
        found = (
            f"holds enhanced beta-likeness for every beta from {beta:.4g}"
            if beta is not None
            else "has a value whose gain in a class exceeds -ln of its share of the table, so "
            "no beta holds"
        )
        results.append(
            RuleResult(
                "max_enhanced_beta",
                scope,
                jurisdiction,
                passed,
                f"{name!r} {found}; {where} requires enhanced {bound:g}-likeness"
                + ("" if passed else GROWING_K),
                name,
                "none" if beta is None else round(beta, 6),
                bound,
            )
        )
    if rules_.max_delta is not None:
        delta, bound = measure.delta_disclosure, rules_.max_delta
        results.append(
            RuleResult(
                "max_delta",
                scope,
                jurisdiction,
                delta < bound,
                f"a value of {name!r} has |ln(class share / table share)| = {delta:.4g}; "
                f"{where} requires it below {bound:g} (delta-disclosure privacy)"
                + ("" if delta < bound else GROWING_K),
                name,
                round(delta, 6),
                bound,
            )
        )
    return results


def aggregate_rules(
    scope: str,
    jurisdiction: str,
    rules_: RuleSet,
    asked: Asked,
    spends: Sequence[Spend],
    now: datetime,
) -> list[RuleResult]:
    """The rules of one rule set for an aggregate release: allowed at all, its epsilon and
    delta within the per-release caps, and the budgets (per dataset and destination, per
    source and destination) within their window, counting every earlier release's spend.

    ``spends``: what earlier releases from the same source to the same destination spent (at
    least those within this rule set's window). Every amount is an exact fraction.
    """
    where = f"{jurisdiction} ({scope})"
    if not rules_.aggregate_releases_allowed:
        return [
            RuleResult(
                "aggregate_allowed",
                scope,
                jurisdiction,
                False,
                f"{where} does not allow aggregate releases (statistics under differential "
                "privacy) of personal data",
                measured="aggregate",
                threshold="not allowed",
                fixable=False,
            )
        ]
    results = [
        RuleResult(
            "aggregate_allowed",
            scope,
            jurisdiction,
            True,
            f"{where} allows aggregate releases",
            fixable=False,
        )
    ]
    cap = parse_amount(rules_.max_epsilon_per_release)
    results.append(
        RuleResult(
            "max_epsilon_per_release",
            scope,
            jurisdiction,
            asked.epsilon <= cap,
            f"the release asks epsilon {show(asked.epsilon)}; {where} allows at most "
            f"{show(cap)} per release"
            + ("" if asked.epsilon <= cap else ": ask less (fewer queries, or more noise)"),
            measured=float(asked.epsilon),
            threshold=float(cap),
            fixable=False,
        )
    )
    delta_cap = parse_amount(rules_.max_delta_per_release or 0)
    results.append(
        RuleResult(
            "max_delta_per_release",
            scope,
            jurisdiction,
            asked.delta <= delta_cap,
            f"the release asks delta {show(asked.delta)}; {where} allows at most "
            f"{show(delta_cap)}"
            + (
                ""
                if asked.delta <= delta_cap
                else ": declare each histogram's keys (then no delta is needed) or ask less"
            ),
            measured=float(asked.delta),
            threshold=float(delta_cap),
            fixable=False,
        )
    )
    since = (
        None
        if rules_.budget_period_days is None
        else now - timedelta(days=rules_.budget_period_days)
    )
    window = "for ever" if since is None else f"in the last {rules_.budget_period_days} days"
    in_window = [s for s in spends if since is None or s.at >= since]
    budgets = (
        (
            "epsilon_budget",
            rules_.epsilon_budget,
            "this dataset to this destination",
            [s for s in in_window if s.dataset_key == asked.dataset_key],
        ),
        (
            "source_epsilon_budget",
            rules_.source_epsilon_budget,
            "this source to this destination, every dataset",
            in_window,
        ),
    )
    for rule, limit, what, counted in budgets:
        if limit is None:
            continue
        standing = Standing(
            Budget(parse_amount(limit), rules_.budget_period_days),
            total(s.epsilon for s in counted),
            asked.epsilon,
        )
        spent = (
            f"{len(counted)} earlier release{'s' if len(counted) != 1 else ''} of {what} "
            f"spent epsilon {show(standing.spent)} {window}"
        )
        results.append(
            RuleResult(
                rule,
                scope,
                jurisdiction,
                standing.fits,
                f"{spent}; {where} allows {show(standing.budget.limit)} in all, so "
                f"{show(standing.remaining)} remains"
                + (
                    f" and this release's {show(asked.epsilon)} fits"
                    if standing.fits
                    else f", less than this release's {show(asked.epsilon)}: refused, nothing spent"
                ),
                measured=float(standing.spent + asked.epsilon),
                threshold=float(standing.budget.limit),
                fixable=False,
            )
        )
    return results


def aggregate_instead(scope: str, jurisdiction: str, rules_: Requirements) -> RuleResult | None:
    """A note for a microdata transfer that may not leave as it is: when every rule set that
    applies allows aggregate releases, statistics of the same data could leave instead."""
    if not rules_.aggregate_releases_allowed:
        return None
    budgets = "; ".join(
        f"{b.jurisdiction} ({b.scope}) allows epsilon {b.limit:g} per "
        + ("dataset" if b.per == "dataset" else "source")
        + " and destination"
        + ("" if b.days is None else f" over {b.days} days")
        for b in rules_.budgets
    )
    delta = rules_.max_delta_per_release
    return RuleResult(
        "aggregate_release_possible",
        scope,
        jurisdiction,
        True,
        "the rows cannot leave as sent, but an aggregate release of this data would be "
        "allowed instead (kind=aggregate: counts, histograms, sums, means and quantiles under "
        f"differential privacy), spending at most epsilon {rules_.max_epsilon_per_release:g}"
        + (f" and delta {delta:g}" if delta else " and no delta (declare histogram keys)")
        + f" per release ({budgets})",
        measured=None,
        threshold=rules_.max_epsilon_per_release,
        fixable=False,
    )

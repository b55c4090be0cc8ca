"""The full measurement report of a dataset: every attribute, combinations, QI set, sensitive.

This is the one place that decides the report's shape; the CLI's JSON and the broker's API both
serialize :meth:`AnalysisReport.as_dict`, so its keys are a stable contract.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from broker.engines.base import IDENTICAL_ROWS, Engine, PlansCounts
from broker.engines.pandas import PandasEngine, People
from broker.metrics.anonymity import (
    KAnonymity,
    SensitiveMeasure,
    k_anonymity_of,
    sensitive_measure_of,
)
from broker.metrics.combinations import (
    DEFAULT_MAX_SIZE,
    DEFAULT_UNIQUE_THRESHOLD,
    CombinationSearch,
    IdentifyingCombination,
    identifying_combinations,
)
from broker.metrics.content import (
    DEFAULT_REGIONS,
    TEXT,
    Content,
    ScanBudget,
    content_of,
    sample_distinct,
)
from broker.metrics.mmaq import (
    ANONYMOUS,
    IDENTIFIER,
    QUASI_IDENTIFIER,
    MmaqMeasure,
    mmaq_from_counts,
)
from broker.metrics.population import population_class_sizes
from broker.metrics.risk import DEFAULT_THRESHOLDS, QirThresholds, qir_class, qir_risk_percent
from broker.roles import require_columns, require_distinct_roles

# Value-class sizes kept per attribute (larger classes are never "rare" for any k used here).
_SIZES_KEPT = 101


@dataclass(frozen=True)
class AttributeReport:
    name: str
    measure: MmaqMeasure
    qir_risk_percent: float
    qir_class: str
    content: Content = field(default_factory=lambda: Content(TEXT, None))
    singled_out: int = 0  # rows whose value no other row holds
    # class_sizes[s] = number of values held by exactly s rows, for s < len (sizes 0..100)
    class_sizes: tuple[int, ...] = ()

    def rows_in_values_smaller_than(self, k: int) -> int:
        """Rows whose value fewer than ``k`` rows hold (values held by > 100 rows never count)."""
        return sum(size * count for size, count in enumerate(self.class_sizes[:k]))

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            **self.measure.as_dict(),
            "qir_risk_percent": self.qir_risk_percent,
            "qir_class": self.qir_class,
            "values": self.content.values,
            "direct_identifier": self.content.direct_identifier,
            "singled_out_rows": self.singled_out,
        }


@dataclass(frozen=True)
class QuasiIdentifierReport:
    attributes: tuple[str, ...]
    anonymity: KAnonymity
    measure: MmaqMeasure

    def as_dict(self) -> dict:
        risk, journalist = self.anonymity.prosecutor_risk, self.anonymity.journalist_risk
        return {
            "attributes": list(self.attributes),
            "k": self.anonymity.k,
            "equivalence_classes": self.anonymity.equivalence_classes,
            "class_size_histogram": {
                str(size): count for size, count in self.anonymity.class_size_histogram.items()
            },
            "k_people": self.anonymity.k_people,
            "prosecutor_risk": {
                "max": risk.max,
                "average": risk.average,
                "unique_share": risk.unique_share,
                "average_per_class": risk.average_per_class,
            },
            "journalist_risk": {
                "max": journalist.max,
                "average": journalist.average,
                "unique_share": journalist.unique_share,
            },
            "marketer_risk": self.anonymity.marketer_risk,
            "risk_population": "population_table"
            if self.anonymity.against_population
            else "sample",
            **self.measure.as_dict(),
        }


@dataclass(frozen=True)
class AnalysisReport:
    rows: int
    attributes: list[AttributeReport]
    combinations: list[IdentifyingCombination]
    quasi_identifiers: QuasiIdentifierReport | None
    sensitive: list[SensitiveMeasure]
    duplicate_rows: int = 0
    people_counted_by: str = IDENTICAL_ROWS
    combination_search: CombinationSearch | None = None

    def attribute(self, name: str) -> AttributeReport:
        return next(a for a in self.attributes if a.name == name)

    def as_dict(self) -> dict:
        return {
            "rows": self.rows,
            "duplicate_rows": self.duplicate_rows,
            "people_counted_by": self.people_counted_by,
            "attributes": [a.as_dict() for a in self.attributes],
            "combinations": [c.as_dict() for c in self.combinations],
            "combination_search": self.combination_search.as_dict()
            if self.combination_search
            else None,
            "quasi_identifiers": self.quasi_identifiers.as_dict()
            if self.quasi_identifiers
            else None,
            "sensitive": [
                {
                    "name": s.name,
                    "l_diversity": s.l_diversity,
                    "entropy_l_diversity": s.entropy_l_diversity,
                    "t_closeness": s.t_closeness,
                    "t_closeness_method": s.t_closeness_method,
                    "k": s.k,
                    "known_attributes": list(s.known_attributes),
                    "alpha": s.alpha,
                    "recursive_c": s.recursive_c,
                    "recursive_c_bounds": {
                        str(l): bound for l, bound in enumerate(s.recursive_c_bounds, start=2)
                    },
                    "beta_likeness": s.beta_likeness,
                    "enhanced_beta_likeness": s.enhanced_beta_likeness,
                    "delta_disclosure": s.delta_disclosure,
                }
                for s in self.sensitive
            ],
        }


def attribute_classes(engine: Engine) -> dict[str, str]:
    """Each column's Mmaq class from its number of categories alone (SPEC section 2: one
    category is anonymous, one per row an identifier, anything between a quasi-identifier).

    The cheap first look that decides which attributes the full report treats as
    quasi-identifiers, before the report's value reading and row hashing.
    """
    classes = {}
    for name in engine.columns:
        categories = len(engine.dictionary(name))
        if categories == engine.rows:
            classes[name] = IDENTIFIER
        elif categories == 1:
            classes[name] = ANONYMOUS
        else:
            classes[name] = QUASI_IDENTIFIER
    return classes


def analyze(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    max_combination_size: int = DEFAULT_MAX_SIZE,
    thresholds: QirThresholds = DEFAULT_THRESHOLDS,
    unique_threshold: float = DEFAULT_UNIQUE_THRESHOLD,
    progress: Callable[[str], None] | None = None,
    regions: Sequence[str] = DEFAULT_REGIONS,
    people: People | None = None,
    population: pd.DataFrame | None = None,
) -> AnalysisReport:
    """The report of a frame in memory (see :func:`report_of`), with the pandas engine.

    ``people`` says who each row is (see :class:`broker.engines.pandas.People`; pass the one of
    the table as sent when measuring its anonymized version). ``population`` is a population
    table holding the frame, for journalist and marketer risk.

    Examples
    --------
    >>> frame = pd.DataFrame({"age": ["20-30"] * 3 + ["30-40"] * 3, "sex": list("FMFMFM"),
    ...                       "disease": ["flu", "hiv", "flu", "flu", "flu", "hiv"]})
    >>> report = analyze(frame, ["age"], ["disease"], max_combination_size=0)
    >>> report.quasi_identifiers.anonymity.k, report.sensitive[0].l_diversity
    (3, 2)
    """
    if len(frame) == 0:
        raise ValueError("The dataset has no rows: there is nothing to measure")
    duplicated = frame.columns[frame.columns.duplicated()].tolist()
    if duplicated:
        raise ValueError(f"Column {duplicated[0]!r} appears more than once")
    say = progress or (lambda _message: None)
    say(f"encoding {len(frame.columns)} columns of {len(frame)} rows")
    return report_of(
        PandasEngine(frame, people=people),
        quasi_identifiers,
        sensitive,
        max_combination_size,
        thresholds,
        unique_threshold,
        progress,
        regions,
        None if population is None else PandasEngine(population),
    )


def report_of(
    engine: Engine,
    quasi_identifiers: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    max_combination_size: int = DEFAULT_MAX_SIZE,
    thresholds: QirThresholds = DEFAULT_THRESHOLDS,
    unique_threshold: float = DEFAULT_UNIQUE_THRESHOLD,
    progress: Callable[[str], None] | None = None,
    regions: Sequence[str] = DEFAULT_REGIONS,
    population: Engine | None = None,
) -> AnalysisReport:
    """Measure every column of a table, its identifying combinations, QI set and sensitive ones.

    ``max_combination_size = 0`` skips the combination search. ``regions`` are the jurisdictions
    whose phone numbers and national ids count as direct identifiers. Each sensitive attribute is
    measured (l, t and the smallest class k) within the classes formed by every *other* declared
    attribute: the quasi-identifiers and, when there are several, the other sensitive attributes.
    That is multi-attribute l-diversity (Machanavajjhala et al. 2007, section 7.1): whoever knows
    all but one attribute of a person must still not single out the row or learn the last one, so
    declaring a known attribute sensitive does not take it out of the check. With neither
    quasi-identifiers nor other sensitive attributes, the whole table is one class.

    k is also counted in people (``k_people``, and the sensitive attributes' ``k``), as the
    engine knows them: identical rows are one person, since one person sent three times looks
    exactly like that. ``duplicate_rows`` counts the rows identical to an earlier one.

    ``population``, a population table that contains this one (with the quasi-identifiers among
    its columns), gives the journalist and marketer risk of the quasi-identifiers; without it the
    table is taken as the whole population.
    """
    quasi_identifiers, sensitive = list(quasi_identifiers), list(sensitive)
    require_columns(engine.columns, quasi_identifiers, "Quasi-identifier")
    require_columns(engine.columns, sensitive, "Sensitive attribute")
    require_distinct_roles(quasi_identifiers, sensitive)
    if max_combination_size < 0:
        raise ValueError(f"The combination size cannot be negative, got {max_combination_size}")
    say = progress or (lambda _message: None)
    if isinstance(engine, PlansCounts):
        say("counting the report's column sets in one pass")
        engine.plan(_column_sets(engine.columns, quasi_identifiers, sensitive))
    if engine.rows == 0:
        raise ValueError("The dataset has no rows: there is nothing to measure")

    say("measuring attributes")
    attributes = []
    scan_budget = ScanBudget()
    for name, counts in zip(
        engine.columns, engine.counts([[c] for c in engine.columns]), strict=True
    ):
        sizes = counts.rows
        measure = mmaq_from_counts(sizes)
        risk = qir_risk_percent(measure.categories, measure.rows)
        content = content_of(sample_distinct(engine.dictionary(name)), regions, scan_budget)
        histogram = np.bincount(np.minimum(sizes, _SIZES_KEPT), minlength=_SIZES_KEPT + 1)
        attributes.append(
            AttributeReport(
                name,
                measure,
                risk,
                qir_class(risk, thresholds),
                content,
                int(histogram[1]),
                tuple(int(c) for c in histogram[:_SIZES_KEPT]),
            )
        )

    qi_report = None
    if quasi_identifiers:
        say("measuring quasi-identifiers")
        [classes] = engine.counts([quasi_identifiers], people=True)
        sizes = None
        if population is not None:
            if isinstance(population, PlansCounts):
                population.plan([quasi_identifiers])
            sizes = population_class_sizes(classes, engine, population)
        qi_report = QuasiIdentifierReport(
            tuple(quasi_identifiers),
            k_anonymity_of(classes, sizes),
            mmaq_from_counts(classes.rows),
        )
    sensitive_reports = [
        sensitive_measure_of(engine, name, _known(name, quasi_identifiers, sensitive))
        for name in sensitive
    ]

    found, search = [], None
    if max_combination_size > 0:
        found, search = identifying_combinations(
            engine, engine.columns, max_combination_size, unique_threshold, say
        )
    return AnalysisReport(
        engine.rows,
        attributes,
        found,
        qi_report,
        sensitive_reports,
        engine.duplicate_rows(),
        engine.people_counted_by,
        search,
    )


def _known(name: str, quasi_identifiers: list[str], sensitive: list[str]) -> list[str]:
    """The attributes whose classes a sensitive attribute is measured within."""
    return [*quasi_identifiers, *(other for other in sensitive if other != name)]


def _column_sets(
    columns: list[str], quasi_identifiers: list[str], sensitive: list[str]
) -> list[list[str]]:
    """Every column set the report counts, in the order it asks (combinations aside)."""
    sets = [[c] for c in columns] + ([quasi_identifiers] if quasi_identifiers else [])
    for name in sensitive:
        known = _known(name, quasi_identifiers, sensitive)
        sets += [known, [*known, name], [name]]
    return sets

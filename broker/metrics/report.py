"""The full measurement report of a dataset: every attribute, combinations, QI set, sensitive.

This is the one place that decides the report's shape; the CLI's JSON and the broker's API both
serialize :meth:`AnalysisReport.as_dict`, so its keys are a stable contract, described by
:class:`broker.metrics.stored.StoredReport`: what the broker stores (:meth:`AnalysisReport.stored`),
serves and reads back.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from broker.columns.numbers import numbers_of
from broker.columns.precision import ColumnPrecision
from broker.columns.roles import require_columns, require_distinct_roles
from broker.datasets import DatasetTooLarge
from broker.engines.base import (
    IDENTICAL_ROWS,
    CountTable,
    Engine,
    PlansCounts,
    ReadsRowsInOrder,
    SamplesTuples,
    dictionary_of,
    dictionary_values,
)
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
    DATE,
    DEFAULT_REGIONS,
    DIGITS,
    NAME_WORDS,
    NUMBER,
    SAMPLE,
    TEXT,
    VERTICAL_ROWS,
    WORDS,
    Content,
    ScanBudget,
    content_of,
    fragment_kind,
    may_spell_down,
    sample_distinct,
    split_content,
    vertical_content,
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
from broker.metrics.stored import StoredReport
from broker.metrics.suda import (
    DEFAULT_DIS_FRACTION,
    MAX_UNIQUE_BITS,
    SudaFigures,
    no_uniques,
    suda,
    suda_of_frame,
)
from broker.metrics.uniqueness import (
    IndividualRisk,
    PopulationUniqueness,
    individual_risk,
    population_uniqueness,
)

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
    # A column of dates, postcodes or ages: how precise its values are (broker.columns.precision).
    precision: ColumnPrecision | None = None

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
            "identifier_evidence": self.content.identifier_evidence,
            "singled_out_rows": self.singled_out,
            "precision": None if self.precision is None else self.precision.as_dict(),
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


# Where a population section's sampling fraction comes from.
STATED = "stated"
POPULATION_TABLE = "population_table"
WEIGHTS = "weights"
UNIFORM = "uniform 1/pi"


@dataclass(frozen=True)
class PopulationReport:
    """The quasi-identifiers' risk when the dataset is a sample of a population (see
    :mod:`broker.metrics.uniqueness`): present only when a sampling fraction, sampling weights
    or a population table is given."""

    sampling_fraction: float
    fraction_from: str  # stated, population_table (n / its rows) or weights (n / their sum)
    uniqueness: PopulationUniqueness
    individual_risk: IndividualRisk
    k_map: int | None = None  # smallest population class of a sample class (population table)

    def as_dict(self) -> dict:
        return {
            "sampling_fraction": self.sampling_fraction,
            "sampling_fraction_from": self.fraction_from,
            "population_size": self.uniqueness.population_size,
            "uniqueness": {
                k: v
                for k, v in self.uniqueness.as_dict().items()
                if k not in ("sampling_fraction", "population_size")
            },
            "individual_risk": self.individual_risk.as_dict(),
            "k_map": self.k_map,
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
    population: PopulationReport | None = None
    # The worst case (broker.engines.people): rare quasi-identifier tuples held by several rows,
    # each counted as one person, and the rows they hold.
    rare_tuples: int = 0
    rare_tuple_rows: int = 0
    # SUDA of the quasi-identifiers (broker.metrics.suda), only when asked (ReportOptions.suda).
    suda: SudaFigures | None = None

    def attribute(self, name: str) -> AttributeReport:
        return next(a for a in self.attributes if a.name == name)

    def stored(self) -> dict:
        """The report as the broker stores it: :class:`~broker.metrics.stored.StoredReport`'s
        JSON (the fields of :meth:`as_dict` and the shape's ``schema_version``)."""
        return StoredReport.model_validate(self.as_dict()).model_dump(mode="json")

    def as_dict(self) -> dict:
        """The report's fields; ``population`` and ``suda`` only when asked for (see
        :class:`PopulationReport` and :class:`SudaOptions`)."""
        population = {"population": self.population.as_dict()} if self.population else {}
        if self.suda is not None:
            population["suda"] = self.suda.as_dict()
        return {
            "rows": self.rows,
            "duplicate_rows": self.duplicate_rows,
            "people_counted_by": self.people_counted_by,
            "rare_tuples": self.rare_tuples,
            "rare_tuple_rows": self.rare_tuple_rows,
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
            **population,
        }


def attribute_classes(engine: Engine) -> dict[str, str]:
    """Each column's Mmaq class from its number of categories alone (the Mmaq classes: one
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


@dataclass(frozen=True)
class SudaOptions:
    """SUDA of the quasi-identifiers in a report (:mod:`broker.metrics.suda`): the DIS sampling
    fraction, the largest MSU searched (None: every size) and how many of the riskiest records
    to name (by row, when the engine holds the rows in memory; a table counted elsewhere names
    none)."""

    dis_fraction: float = DEFAULT_DIS_FRACTION
    max_msu_size: int | None = None
    riskiest: int = 10
    max_bits: int = MAX_UNIQUE_BITS  # the search's memory bound (broker.metrics.suda)


def suda_figures(engine: Engine, quasi_identifiers: Sequence[str], options: SudaOptions):
    """SUDA figures of the quasi-identifiers of ``engine``; raises ValueError when the search
    would pass its bounds (:func:`broker.metrics.suda.over_budget`).

    Where every tuple of the quasi-identifiers is held by two rows or more no row is unique on
    any subset, and nothing is searched. A table in memory is searched row by row (the riskiest
    records are named by their row); any other on its count table, the same figures without
    rows.
    """
    columns = list(quasi_identifiers)
    if not columns:
        raise ValueError("SUDA needs at least one quasi-identifier")
    [table] = engine.counts([columns])
    if int(table.rows.min(initial=2)) >= 2:
        return no_uniques(columns, options.dis_fraction)
    if isinstance(engine, PandasEngine):
        found = suda_of_frame(
            engine.frame,
            columns,
            dis_fraction=options.dis_fraction,
            max_msu_size=options.max_msu_size,
            max_bits=options.max_bits,
        )
        return found.figures(options.riskiest)
    codes, widths = [], []
    for name in columns:
        _, dense = np.unique(table.codes(name), return_inverse=True)
        codes.append(dense.astype(np.int64))
        widths.append(int(dense.max(initial=0)) + 1)
    found = suda(
        codes,
        widths,
        table.rows,
        columns=columns,
        dis_fraction=options.dis_fraction,
        max_msu_size=options.max_msu_size,
        max_bits=options.max_bits,
    )
    return found.figures(0)


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """How a report measures, besides the table and the roles of its columns: what
    :func:`report_of` and :func:`analyze` take, and pass on unchanged.

    ``max_combination_size`` is the largest column set the combination search tries (0 skips
    the search), ``unique_threshold`` the share of unique rows that makes a combination
    identifying. ``thresholds`` are the QIR risk classes' bounds. ``regions`` are the
    jurisdictions whose phone numbers and national ids count as direct identifiers.

    ``population``, a population table that contains the measured one (with the
    quasi-identifiers among its columns; an engine, or a frame counted by the pandas engine),
    gives the journalist and marketer risk of the quasi-identifiers; without it the table is
    taken as the whole population. ``sampling_fraction`` (the share of the population the
    table holds), ``weights`` (a column of sampling weights: the people each row stands for)
    or ``population`` add the ``population`` section: population uniqueness, individual risk
    and, with a population table, k-map. The fraction, unless stated, is N / the population
    table's rows, or N / the sum of the weights.

    ``suda`` (:class:`SudaOptions`) adds the SUDA figures of the quasi-identifiers.

    ``progress`` is told each step, in a few words.

    Examples
    --------
    >>> ReportOptions(max_combination_size=0).unique_threshold == DEFAULT_UNIQUE_THRESHOLD
    True
    """

    max_combination_size: int = DEFAULT_MAX_SIZE
    unique_threshold: float = DEFAULT_UNIQUE_THRESHOLD
    thresholds: QirThresholds = DEFAULT_THRESHOLDS
    regions: Sequence[str] = DEFAULT_REGIONS
    population: Engine | pd.DataFrame | None = field(default=None, compare=False)
    sampling_fraction: float | None = None
    weights: str | None = None
    suda: SudaOptions | None = None
    progress: Callable[[str], None] | None = field(default=None, compare=False)


DEFAULT_OPTIONS = ReportOptions()


def analyze(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    options: ReportOptions = DEFAULT_OPTIONS,
    *,
    people: People | None = None,
) -> AnalysisReport:
    """The report of a frame in memory (see :func:`report_of`), with the pandas engine.

    ``people`` says who each row is (see :class:`broker.engines.pandas.People`; pass the one of
    the table as sent when measuring its anonymized version).

    Examples
    --------
    >>> frame = pd.DataFrame({"age": ["20-30"] * 3 + ["30-40"] * 3, "sex": list("FMFMFM"),
    ...                       "disease": ["flu", "hiv", "flu", "flu", "flu", "hiv"]})
    >>> report = analyze(frame, ["age"], ["disease"], ReportOptions(max_combination_size=0))
    >>> report.quasi_identifiers.anonymity.k, report.sensitive[0].l_diversity
    (3, 2)
    """
    if len(frame) == 0:
        raise ValueError("The dataset has no rows: there is nothing to measure")
    duplicated = frame.columns[frame.columns.duplicated()].tolist()
    if duplicated:
        raise ValueError(f"Column {duplicated[0]!r} appears more than once")
    say = options.progress or (lambda _message: None)
    say(f"encoding {len(frame.columns)} columns of {len(frame)} rows")
    return report_of(PandasEngine(frame, people=people), quasi_identifiers, sensitive, options)


def report_of(
    engine: Engine,
    quasi_identifiers: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    options: ReportOptions = DEFAULT_OPTIONS,
) -> AnalysisReport:
    """Measure every column of a table, its identifying combinations, QI set and sensitive ones,
    as ``options`` say (:class:`ReportOptions`).

    Each sensitive attribute is measured (l, t and the smallest class k) within the classes
    formed by every *other* declared attribute: the quasi-identifiers and, when there are
    several, the other sensitive attributes. That is multi-attribute l-diversity
    (Machanavajjhala et al. 2007, section 7.1): whoever knows all but one attribute of a person
    must still not single out the row or learn the last one, so declaring a known attribute
    sensitive does not take it out of the check. With neither quasi-identifiers nor other
    sensitive attributes, the whole table is one class.

    k is also counted in people (``k_people``, and the sensitive attributes' ``k``), as the
    engine knows them: identical rows are one person, since one person sent three times looks
    exactly like that, and, without a person key, so are the rows of each rare tuple of the
    quasi-identifiers (the worst case, :mod:`broker.engines.people`: the engine is told the
    quasi-identifiers, and counts so from then on, for whatever else is measured on it).
    ``duplicate_rows`` counts the rows identical to an earlier one, ``rare_tuples`` and
    ``rare_tuple_rows`` the rare tuples held by several rows and their rows.
    """
    max_combination_size, regions = options.max_combination_size, options.regions
    sampling_fraction, weights = options.sampling_fraction, options.weights
    population = options.population
    if isinstance(population, pd.DataFrame):
        population = PandasEngine(population)
    quasi_identifiers, sensitive = list(quasi_identifiers), list(sensitive)
    require_columns(engine.columns, quasi_identifiers, "Quasi-identifier")
    if weights is not None:
        require_columns(engine.columns, [weights], "Weight column")
    sampled = sampling_fraction is not None or weights is not None
    if sampled and not quasi_identifiers:
        raise ValueError(
            "A sampling fraction or weights need declared quasi-identifiers: population "
            "uniqueness is measured on their classes"
        )
    if sampling_fraction is not None and not (0 < sampling_fraction <= 1):
        raise ValueError(f"The sampling fraction must be in (0, 1], got {sampling_fraction}")
    require_columns(engine.columns, sensitive, "Sensitive attribute")
    require_distinct_roles(quasi_identifiers, sensitive)
    if max_combination_size < 0:
        raise ValueError(f"The combination size cannot be negative, got {max_combination_size}")
    say = options.progress or (lambda _message: None)
    if isinstance(engine, PlansCounts):
        say("counting the report's column sets in one pass")
        engine.plan(_column_sets(engine.columns, quasi_identifiers, sensitive, weights))
    if engine.rows == 0:
        raise ValueError("The dataset has no rows: there is nothing to measure")
    if quasi_identifiers:
        engine.assume_worst(quasi_identifiers)
    rare = engine.rare

    say("measuring attributes")
    attributes = []
    scan_budget = ScanBudget()
    fragments: dict[str, str | None] = {}
    for name, counts in zip(
        engine.columns, engine.counts([[c] for c in engine.columns]), strict=True
    ):
        sizes = counts.rows
        measure = mmaq_from_counts(sizes)
        risk = qir_risk_percent(measure.categories, measure.rows)
        dictionary = engine.dictionary(name)
        sample = sample_distinct(dictionary)
        content = content_of(sample, regions, scan_budget)
        fragments[name] = fragment_kind(sample)
        histogram = np.bincount(np.minimum(sizes, _SIZES_KEPT), minlength=_SIZES_KEPT + 1)
        attributes.append(
            AttributeReport(
                name,
                measure,
                risk,
                qir_class(risk, options.thresholds),
                content,
                int(histogram[1]),
                tuple(int(c) for c in histogram[:_SIZES_KEPT]),
                ColumnPrecision.of(name, dictionary, content.values == NUMBER),
            )
        )

    searched = max_combination_size > 0
    attributes = _split_identifiers(engine, attributes, fragments, regions, scan_budget, searched)

    qi_report, population_report = None, None
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
        if sampled or population is not None:
            say("estimating population risk")
            population_report = _population_report(
                engine, classes, qi_report.anonymity, sizes, population, sampling_fraction, weights
            )
    figures = None
    if options.suda is not None:
        if not quasi_identifiers:
            raise ValueError("SUDA needs quasi-identifiers: it searches their combinations")
        say("SUDA: the minimal sample uniques of each record")
        figures = suda_figures(engine, quasi_identifiers, options.suda)
    sensitive_reports = [
        sensitive_measure_of(engine, name, _known(name, quasi_identifiers, sensitive))
        for name in sensitive
    ]

    found, search = [], None
    if max_combination_size > 0:
        found, search = identifying_combinations(
            engine, engine.columns, max_combination_size, options.unique_threshold, say
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
        population_report,
        0 if rare is None else rare.people,
        0 if rare is None else rare.rows,
        figures,
    )


# Split identifiers: up to this many adjacent columns read together (an IBAN over three, a
# card over four, an IBAN in its seven groups of four), and, besides every adjacent pair, at
# most this many other column sets read per report (a random choice of them past it: each is
# one more count table, a pass over the rows of a file larger than memory).
MAX_SPLIT_COLUMNS = 8
MAX_SPLIT_SETS = 64
# Distinct tuples sampled from each set other than an adjacent pair (a split identifier fills
# its columns: 250 tuples find the 30 % it needs), read no further when under one in eight of
# the first 40 hold evidence (a split identifier in 30 % is missed so once in 400), within a
# candidate budget of their own: past it, the remaining sets are not read (ordinary numbers
# joined over many columns make many candidates; they must not fail every column closed).
EXTRA_SET_SAMPLE = 250
EXTRA_SET_GIVE_UP = 40


def _split_identifiers(
    engine: Engine,
    attributes: list[AttributeReport],
    fragments: dict[str, str | None],
    regions: Sequence[str],
    budget: ScanBudget,
    searched: bool = False,
) -> list[AttributeReport]:
    """Columns, none of them a direct identifier, that may hold the parts of one identifier
    (digits, or single words one of which is a listed name: see
    :func:`~broker.metrics.content.fragment_kind`), read as one on a sample of their distinct
    tuples: 2 to :data:`MAX_SPLIT_COLUMNS` adjacent columns (an IBAN, a card or an id cut in
    parts; past two, most of them digits), any two columns of digits in their order, and any
    two columns of single words, in both orders (a given name and a family name, wherever
    they stand). A finding makes every
    column of the set a direct identifier. An engine that samples distinct tuples
    (:class:`SamplesTuples`) chooses them without counting them all (from its copy of the rows
    when the combination search, ``searched``, will read that copy); otherwise the sets are
    counted, in one more pass of an engine that reads in passes (a set it cannot hold is
    counted as the combination search counts). Then :func:`_vertical_identifiers`."""
    sets = _split_sets(attributes, fragments)
    pairs = sum(1 for c in sets if len(c) == 2 and _adjacent(attributes, c))
    extra_budget = ScanBudget()  # the other sets' own: spent, they are no longer read
    sampling = isinstance(engine, SamplesTuples)
    if sets and not sampling and isinstance(engine, PlansCounts):
        with contextlib.suppress(DatasetTooLarge):
            engine.plan([sorted(set(columns)) for columns in sets], people=False)
    found = {a.name: a for a in attributes}
    sizes = [SAMPLE if index < pairs else EXTRA_SET_SAMPLE for index in range(len(sets))]
    sampled = engine.sample_tuples(sets, sizes, searched) if sampling else None
    dictionaries: dict[str, np.ndarray] = {}
    for index, columns in enumerate(sets):
        if all(found[c].content.direct_identifier for c in columns):
            continue  # already condemned by other sets
        adjacent_pair = index < pairs
        if sampled is not None:
            codes = sampled[index]
        else:
            codes = sampled_codes(engine, columns, sizes[index])
        values = []
        for column, chosen in zip(columns, codes, strict=True):
            if column not in dictionaries:
                dictionaries[column] = dictionary_values(engine.dictionary(column))
            values.append(dictionaries[column][chosen])
        tuples = list(zip(*values, strict=True))
        if adjacent_pair:
            split = split_content(tuples, regions, budget)
        else:
            split = split_content(
                tuples, regions, extra_budget, fail_closed=False, give_up_after=EXTRA_SET_GIVE_UP
            )
        if split is None:
            continue
        named = ", ".join(repr(c) for c in columns)
        where = "adjacent columns" if _adjacent(attributes, columns) else "columns"
        fresh = [c for c in columns if not found[c].content.direct_identifier]
        _condemn(found, fresh, split.kind, f"{split.describe()}, split over the {where} {named}")
    attributes = [found[a.name] for a in attributes]
    return _vertical_identifiers(engine, attributes, regions, budget)


def sampled_codes(engine: Engine, columns: Sequence[str], size: int) -> list[np.ndarray]:
    """The codes of ``size`` distinct tuples of ``columns`` chosen at random (all of them
    when there are no more), from their count table."""
    [table] = engine.counts([sorted(set(columns))])
    chosen = np.arange(table.size)
    if table.size > size:
        chosen = np.random.default_rng(secrets.randbits(64)).choice(table.size, size, False)
    return [table.codes(c)[chosen] for c in columns]


def _split_sets(
    attributes: list[AttributeReport], fragments: dict[str, str | None]
) -> list[tuple[str, ...]]:
    """The column sets :func:`_split_identifiers` reads, adjacent pairs first."""

    def eligible(a: AttributeReport) -> bool:
        return (
            fragments.get(a.name) is not None
            and a.content.values != DATE
            and not a.content.direct_identifier
        )

    names = [a.name for a in attributes]
    ok = [eligible(a) for a in attributes]
    pairs, longer, words = [], [], []
    for width in range(2, MAX_SPLIT_COLUMNS + 1):
        for i in range(len(names) - width + 1):
            window = names[i : i + width]
            kinds = {fragments.get(n) for n in window}
            if not all(ok[i : i + width]) or kinds == {WORDS}:
                continue
            digits = sum(fragments.get(n) == DIGITS for n in window)
            if width == 2:
                pairs.append(tuple(window))
            elif digits * 2 >= width:  # most of a wider window holds digits
                longer.append(tuple(window))
    at = {n: i for i, n in enumerate(names)}
    digits_columns = [
        n for n, good in zip(names, ok, strict=True) if good and fragments[n] == DIGITS
    ]
    for i, a in enumerate(digits_columns):  # digits cut over columns that are not neighbours
        longer += [(a, b) for b in digits_columns[i + 1 :] if at[b] != at[a] + 1]
    worded = [n for n, good in zip(names, ok, strict=True) if good and fragments[n] != DIGITS]
    listed = [n for n in worded if fragments[n] == NAME_WORDS]
    rng = np.random.default_rng(secrets.randbits(64))
    if len(listed) * len(worded) <= MAX_SPLIT_SETS:
        candidates = [(a, b) for a in listed for b in worded]
    else:  # a random choice of them: never the whole product of a wide table's columns
        picks = rng.integers(0, [len(listed), len(worded)], size=(MAX_SPLIT_SETS, 2))
        candidates = list(dict.fromkeys((listed[i], worded[j]) for i, j in picks))
    for a, b in candidates:
        for first, second in ((a, b), (b, a)):
            if first != second and at[second] != at[first] + 1:
                words.append((first, second))
    words = list(dict.fromkeys(words))
    rest = longer + words
    if len(rest) > MAX_SPLIT_SETS:
        chosen = rng.choice(len(rest), MAX_SPLIT_SETS, replace=False)
        rest = [rest[i] for i in sorted(chosen)]
    return pairs + rest


def _adjacent(attributes: list[AttributeReport], columns: Sequence[str]) -> bool:
    names = [a.name for a in attributes]
    at = [names.index(c) for c in columns]
    return at == list(range(at[0], at[0] + len(at)))


def _condemn(found: dict, columns: Sequence[str], kind: str, evidence: str) -> None:
    for name in columns:
        content = replace(found[name].content, direct_identifier=kind)
        found[name] = replace(found[name], content=replace(content, identifier_evidence=evidence))


def _vertical_identifiers(
    engine: Engine,
    attributes: list[AttributeReport],
    regions: Sequence[str],
    budget: ScanBudget,
) -> list[AttributeReport]:
    """Columns that spell an identifier down their rows (one digit per row): the first
    :data:`~broker.metrics.content.VERTICAL_ROWS` rows, in order, of each column not yet a
    direct identifier whose distinct values hold a piece of one
    (:func:`~broker.metrics.content.may_spell_down`: nothing else can be found there), read by
    :func:`~broker.metrics.content.vertical_content`. Only an engine that reads rows in order
    (:class:`ReadsRowsInOrder`) is asked."""
    if not isinstance(engine, ReadsRowsInOrder):
        return attributes
    candidates = [
        a.name
        for a in attributes
        if not a.content.direct_identifier and may_spell_down(engine.dictionary(a.name).tolist())
    ]
    if not candidates:
        return attributes
    head = engine.head(candidates, VERTICAL_ROWS)
    found = {a.name: a for a in attributes}
    for name in candidates:
        vertical = vertical_content(name, head[name].tolist(), regions, budget)
        if vertical is not None:
            evidence = f"{vertical.describe()}, written down the rows of column {name!r}"
            _condemn(found, [name], vertical.kind, evidence)
    return [found[a.name] for a in attributes]


def _population_report(
    engine: Engine,
    classes: CountTable,
    anonymity: KAnonymity,
    population_sizes: np.ndarray | None,
    population: Engine | None,
    sampling_fraction: float | None,
    weights: str | None,
) -> PopulationReport:
    """Population uniqueness, individual risk and k-map of the quasi-identifiers' classes."""
    sample_sizes = classes.rows
    rows = int(sample_sizes.sum())
    weight_sums = None if weights is None else _weight_sums(engine, classes, weights)
    if sampling_fraction is not None:
        fraction, source = sampling_fraction, STATED
    elif population is not None:
        fraction, source = rows / population.rows, POPULATION_TABLE
    else:
        fraction, source = rows / float(weight_sums.sum()), WEIGHTS
    if not (0 < fraction <= 1):
        given = "The weights give" if source == WEIGHTS else "The population table gives"
        raise ValueError(
            f"{given} a sampling fraction of {fraction:.4g}: the population must hold at least "
            "the dataset's rows (sampling weights are at least 1)"
        )
    if weight_sums is None:
        weight_sums, weighted_by = sample_sizes / fraction, UNIFORM
    else:
        weighted_by = weights
    return PopulationReport(
        fraction,
        source,
        population_uniqueness(anonymity.class_size_histogram, fraction),
        individual_risk(sample_sizes, weight_sums, weighted_by),
        None if population_sizes is None else int(population_sizes.min()),
    )


def _weight_sums(engine: Engine, classes: CountTable, weights: str) -> np.ndarray:
    """Each class's sum of weights, from the counts of (quasi-identifiers, weight)."""
    columns = list(classes.columns)
    [table] = engine.counts([[*columns, weights]])
    values = numbers_of(dictionary_of(engine.dictionary(weights)))
    row_weights = values[table.codes(weights)]
    if not np.all(np.isfinite(row_weights)) or np.any(row_weights <= 0):
        raise ValueError(f"Weight column {weights!r} must hold a positive number on every row")
    found = pd.MultiIndex.from_arrays([classes.codes(c) for c in columns]).get_indexer(
        pd.MultiIndex.from_arrays([table.codes(c) for c in columns])
    )
    return np.bincount(found, weights=row_weights * table.rows, minlength=classes.size)


def _known(name: str, quasi_identifiers: list[str], sensitive: list[str]) -> list[str]:
    """The attributes whose classes a sensitive attribute is measured within."""
    return [*quasi_identifiers, *(other for other in sensitive if other != name)]


def _column_sets(
    columns: list[str],
    quasi_identifiers: list[str],
    sensitive: list[str],
    weights: str | None = None,
) -> list[list[str]]:
    """Every column set the report counts, in the order it asks (combinations aside)."""
    sets = [[c] for c in columns] + ([quasi_identifiers] if quasi_identifiers else [])
    if weights is not None and quasi_identifiers:
        sets.append([*quasi_identifiers, weights])
    for name in sensitive:
        known = _known(name, quasi_identifiers, sensitive)
        sets += [known, [*known, name], [name]]
    return sets

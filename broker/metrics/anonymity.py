"""k-anonymity, prosecutor risk, l-diversity and t-closeness over declared quasi-identifiers.

Kernels take count tables (:mod:`broker.engines.base`): k the tuples of the quasi-identifiers
with their people; l and t the (class, value) pairs and the values of the sensitive attribute.

Naming: an *equivalence class* is a set of rows sharing all quasi-identifier values.

- k-anonymity (Sweeney 2002): the size of the smallest equivalence class.
- Prosecutor risk of a row: 1 / the size of its class. ``max`` = 1/k, ``average`` = the mean over
  rows = classes / N, ``unique_share`` = share of rows alone in their class, and
  ``average_per_class`` = the mean of 1 / size over classes (pycanon's ``average_rir``).
- Journalist and marketer risk (El Emam 2013, "Guide to the De-Identification of Personal Health
  Information", as ARX's ``RiskModelSampleSummary`` computes them). The dataset is a sample of a
  population; F_c is the population size of sample class c (f_c rows, n rows in all). Journalist:
  ``max`` = 1 / min F_c, ``average`` = ``max(classes / sum F_c, sum(f_c / F_c) / n)``,
  ``unique_share`` = share of rows in a class that is unique in the population. Marketer: the
  share of rows re-identified on average, ``sum(f_c / F_c) / n``. Without a population table the
  sample is the population (F = f): journalist = prosecutor and marketer = classes / N.
- Distinct l-diversity (Machanavajjhala et al. 2007): fewest distinct sensitive values in a class,
  counting no more values than the class has people (:mod:`broker.engines.people`): the values
  of one person's rows are all that person's, so a class of one person sent three times with
  three diagnoses has l = 1, not 3. Where every row is a person this is the paper's l.
  Entropy l-diversity: ``min over classes of exp(H_class)``, H in nats; exact when it is
  rational (equally frequent values give exactly their number; see :func:`_entropy_l`).
- t-closeness (Li et al. 2007): the largest distance over classes between the class's distribution
  of the sensitive attribute and the whole table's. Categorical: total variation (EMD with equal
  ground distance, ``0.5 sum |p - q|``). Ordered (every present value is a number): the ordered
  EMD ``sum_i |sum_{j<=i} (p_j - q_j)| / (m - 1)`` over the m distinct values in numeric order;
  missing values (NA or a blank string, as :mod:`broker.columns.missing` says) then rank after every
  number, so a CSV file's empty cell keeps the attribute ordered as a JSON null does.

The privacy models of ARX and pycanon beyond l and t ((alpha, k)-anonymity, recursive
(c, l)-diversity, beta-likeness, delta-disclosure) are measured over the same (class, value)
counts by :mod:`broker.metrics.privacy_models`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

import numpy as np
import pandas as pd

from broker.columns.missing import blank_strings
from broker.columns.numbers import numbers_of
from broker.columns.roles import require_columns
from broker.engines.base import CountTable, Engine
from broker.engines.pandas import PandasEngine
from broker.metrics.privacy_models import (
    ClassValueCounts,
    alpha,
    beta_likeness,
    delta_disclosure,
    recursive_diversity,
)

CATEGORICAL = "categorical"
ORDERED = "ordered"


@dataclass(frozen=True)
class ProsecutorRisk:
    max: float
    average: float
    unique_share: float
    average_per_class: float = 0.0


@dataclass(frozen=True)
class JournalistRisk:
    """Re-identification risk of a row by someone who knows the person is in a population table
    (see the module docstring); equal to the prosecutor risk without one."""

    max: float
    average: float
    unique_share: float


@dataclass(frozen=True)
class KAnonymity:
    """How the rows fall into equivalence classes on the quasi-identifiers.

    ``k`` counts rows; ``k_people`` counts the distinct people of the smallest class (see
    :class:`broker.engines.pandas.People`): three copies of one person's row are a class of one.
    """

    k: int
    equivalence_classes: int
    class_size_histogram: dict[int, int]
    prosecutor_risk: ProsecutorRisk
    k_people: int = 0
    journalist_risk: JournalistRisk | None = None
    marketer_risk: float = 0.0
    against_population: bool = False  # False: the sample is taken as the whole population


@dataclass(frozen=True)
class SensitiveMeasure:
    """How well one sensitive attribute is protected inside the equivalence classes.

    ``known_attributes`` are the attributes the classes are formed on (for one sensitive
    attribute, the quasi-identifiers; for several, the quasi-identifiers and the other sensitive
    attributes: see :func:`broker.metrics.report.analyze`) and ``k`` the smallest class, in people.
    """

    name: str
    l_diversity: int
    entropy_l_diversity: float
    t_closeness: float
    t_closeness_method: str
    k: int = 0
    known_attributes: tuple[str, ...] = ()
    alpha: float = 1.0
    recursive_c: int | None = None
    recursive_c_bounds: tuple[float, ...] = ()
    beta_likeness: float = 0.0
    enhanced_beta_likeness: float | None = 0.0
    delta_disclosure: float = 0.0


def k_anonymity_of(classes: CountTable, population: np.ndarray | None = None) -> KAnonymity:
    """Class sizes, k and the risks from the count table of the equivalence classes (with people
    counted, for ``k_people``); ``population`` gives each class's size in a population table
    (:func:`broker.metrics.population.population_class_sizes`) for journalist and marketer risk."""
    sizes = classes.rows
    rows = int(sizes.sum())
    if rows == 0:
        raise ValueError("The dataset has no rows: k-anonymity is not defined")
    size_values, size_counts = np.unique(sizes, return_counts=True)
    k = int(size_values[0])
    journalist, marketer = journalist_and_marketer_risk(sizes, population)
    return KAnonymity(
        k=k,
        equivalence_classes=classes.size,
        class_size_histogram={
            int(s): int(c) for s, c in zip(size_values, size_counts, strict=True)
        },
        prosecutor_risk=ProsecutorRisk(
            max=1.0 / k,
            average=classes.size / rows,
            unique_share=float(size_counts[0]) / rows if k == 1 else 0.0,
            average_per_class=float(np.sum(size_counts / size_values) / classes.size),
        ),
        k_people=classes.smallest_in_people(),
        journalist_risk=journalist,
        marketer_risk=marketer,
        against_population=population is not None,
    )


def journalist_and_marketer_risk(
    sample: np.ndarray, population: np.ndarray | None = None
) -> tuple[JournalistRisk, float]:
    """Journalist and marketer risk from each sample class's size and its population size
    (None: the sample is the population).

    Examples
    --------
    >>> journalist, marketer = journalist_and_marketer_risk(np.array([1, 3]), np.array([2, 6]))
    >>> journalist.max, journalist.average, marketer
    (0.5, 0.25, 0.25)
    """
    population = sample if population is None else population
    if (population < sample).any():
        raise ValueError(
            "The population table holds fewer rows of an equivalence class than the dataset: "
            "it must contain the dataset"
        )
    rows = int(sample.sum())
    found = float(np.sum(sample / population)) / rows
    journalist = JournalistRisk(
        max=1.0 / int(population.min()),
        average=max(sample.size / int(population.sum()), found),
        unique_share=int(sample[population == 1].sum()) / rows,
    )
    return journalist, found


def k_anonymity(frame: pd.DataFrame, quasi_identifiers: Sequence[str]) -> KAnonymity:
    """k, the class-size histogram and prosecutor risk of ``frame`` on ``quasi_identifiers``.

    Examples
    --------
    >>> frame = pd.DataFrame({"age": ["20-30"] * 3 + ["30-40"] * 2, "sex": ["F, M"] * 5})
    >>> result = k_anonymity(frame, ["age", "sex"])
    >>> result.k, result.equivalence_classes, result.class_size_histogram
    (2, 2, {2: 1, 3: 1})
    """
    _require_columns(frame, quasi_identifiers, "Quasi-identifier")
    engine = PandasEngine(frame, quasi_identifiers)
    return k_anonymity_of(engine.counts([quasi_identifiers], people=True)[0])


def sensitive_measure(
    frame: pd.DataFrame, quasi_identifiers: Sequence[str], sensitive: str
) -> SensitiveMeasure:
    """l-diversity (distinct and entropy) and t-closeness of ``sensitive`` within the classes.

    Examples
    --------
    >>> frame = pd.DataFrame({"age": ["20-30"] * 4, "disease": ["flu", "flu", "hiv", "flu"]})
    >>> m = sensitive_measure(frame, ["age"], "disease")
    >>> m.l_diversity, m.t_closeness
    (2, 0.0)
    """
    _require_columns(frame, quasi_identifiers, "Quasi-identifier")
    _require_columns(frame, [sensitive], "Sensitive attribute")
    engine = PandasEngine(frame, [*quasi_identifiers, sensitive])
    return sensitive_measure_of(engine, sensitive, quasi_identifiers)


def sensitive_measure_of(
    engine: Engine, sensitive: str, known: Sequence[str], people: bool = True
) -> SensitiveMeasure:
    """As :func:`sensitive_measure`, from the engine's count tables: the classes of ``known``
    (with their people, for ``k`` and l, unless ``people`` is False: then both count rows), the
    (class, value) pairs and the values of ``sensitive``."""
    known = list(known)
    # Each count table is let go once read: out of core they hold millions of tuples.
    k = engine.counts([known], people=people)[0].smallest_in_people()
    pairs, values = engine.counts([[*known, sensitive], [sensitive]])
    counts = ClassValueCounts.of(pairs, values, known, sensitive)
    del pairs, values
    pair_class, pair_value, pair_counts = counts.pair_class, counts.pair_value, counts.pair_rows
    class_sizes = counts.class_rows
    distinct = np.bincount(pair_class, minlength=class_sizes.size)
    table_share = counts.value_rows / engine.rows
    ordering = _numeric_order(engine.dictionary(sensitive))
    if ordering is None:
        t = _total_variation(pair_class, pair_value, pair_counts, class_sizes, table_share)
        method = CATEGORICAL
    else:
        t = _ordered_emd(
            pair_class,
            ordering[pair_value],
            pair_counts,
            class_sizes,
            table_share[np.argsort(ordering)],
        )
        method = ORDERED
    recursive = recursive_diversity(counts, int(distinct.min()))
    likeness = beta_likeness(counts)
    return SensitiveMeasure(
        name=sensitive,
        # No more values than people, class by class: min over classes of min(values, people)
        # is the smaller of the fewest values and the fewest people (k).
        l_diversity=min(int(distinct.min()), k),
        entropy_l_diversity=_entropy_l(pair_class, pair_counts, class_sizes, distinct),
        t_closeness=float(max(t, 0.0)),
        t_closeness_method=method,
        k=k,
        known_attributes=tuple(known),
        alpha=alpha(counts),
        recursive_c=recursive.c,
        recursive_c_bounds=recursive.bounds,
        beta_likeness=likeness.basic,
        enhanced_beta_likeness=likeness.enhanced,
        delta_disclosure=delta_disclosure(counts),
    )


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], role: str) -> None:
    if len(columns) == 0:
        raise ValueError(f"No {role.lower()} given")
    require_columns(frame.columns, columns, role)
    if len(frame) == 0:
        raise ValueError("The dataset has no rows")


def _numeric_order(uniques: pd.Series) -> np.ndarray | None:
    """Rank of each value code in numeric order, or None when a present value is not a number.

    Missing values (NA, or a blank string: :mod:`broker.columns.missing`, what a CSV file holds for
    an empty cell) rank after every number, so one empty cell gives the same order in every format.
    NA ranks before blank strings, and distinct values that tie (``"7"`` and ``"007"``, ``""``
    and ``" "``) are ordered by their text, not by their codes, which differ between engines.
    ``uniques`` are the distinct values by code, so this costs nothing on large tables.
    """
    if uniques.dtype == bool or isinstance(uniques.dtype, pd.BooleanDtype):
        return None
    values = uniques.to_numpy(dtype=object)  # a handful, most often: no pandas operation each
    na = pd.isna(values)
    blank = blank_strings(values) & ~na
    missing = na | blank
    numbers = numbers_of(np.where(missing, None, values))
    if np.isnan(numbers[~missing]).any() or (~missing).sum() < 2:
        return None
    keys = np.where(missing, np.inf, numbers)
    order = np.lexsort((blank, keys))
    key, kind = keys[order], blank[order]
    if ((key[1:] == key[:-1]) & (kind[1:] == kind[:-1])).any():
        text = uniques.where(~na, "").astype(str).to_numpy()
        order = np.lexsort((text, blank, keys))
    ranks = np.empty_like(order)
    ranks[order] = np.arange(order.size)
    return ranks


def _entropy_l(pair_class, pair_counts, class_sizes, distinct) -> float:
    """min over classes of exp(H_class), exact whenever the minimum is a rational number.

    ``exp(H) = n / g`` where ``g = (prod_v n_v^n_v)^(1/n)`` is the class's counts' geometric
    mean, each count weighted by itself. A class whose d values are equally frequent has
    ``g = n / d`` and exp(H) = d exactly (one value: exactly 1), which the float formula misses
    by a few ulps (``exp(ln 3)`` is 3.0000000000000004). Otherwise exp(H) is rational only when
    ``prod n_v^n_v`` is a perfect n-th power (counts 1, 1, 1, 1, 4 give exactly 4); the classes
    within the float error of the minimum are checked for that in integers (rarely any: only
    unequal counts need it), and the minimum is exact when each of them is rational.
    """
    n_log_n = np.bincount(
        pair_class, weights=pair_counts * np.log(pair_counts), minlength=class_sizes.size
    )
    values = np.exp(np.log(class_sizes) - n_log_n / class_sizes)
    uneven = np.zeros(class_sizes.size, dtype=bool)
    uneven[pair_class[pair_counts * distinct[pair_class] != class_sizes[pair_class]]] = True
    values[~uneven] = distinct[~uneven]
    best = float(values.min())
    # Relative error of the float exp(H) (d terms summed, then ln, divide, exp), with a margin.
    tolerance = 4 * (int(distinct.max()) + 6) * np.finfo(float).eps * np.log(class_sizes.max())
    near = values <= best * (1 + tolerance)
    candidates = near & uneven
    if not candidates.any():
        return best
    # Their counts, class by class, the smallest value first: one irrational class settles it.
    chosen = np.flatnonzero(candidates[pair_class])
    owners = pair_class[chosen]
    order = np.lexsort((owners, values[owners]))
    chosen, owners = chosen[order], owners[order]
    bounds = np.concatenate(([0], np.flatnonzero(owners[1:] != owners[:-1]) + 1, [owners.size]))
    exact = {Fraction(int(d)) for d in np.unique(distinct[near & ~uneven])}
    seen: set[tuple[int, ...]] = set()
    for start, stop in pairwise(bounds.tolist()):
        counts = tuple(sorted(pair_counts[chosen[start:stop]].tolist()))
        if counts in seen:
            continue
        seen.add(counts)
        value = _rational_perplexity(counts)
        if value is None:
            return best
        exact.add(value)
    return float(min(exact))


def _rational_perplexity(counts: tuple[int, ...]) -> Fraction | None:
    """exp(H) of a class with these value counts as an exact fraction, or None if irrational.

    ``prod n_v^n_v = g^n`` has an integer n-th root g exactly when every prime's exponent in it
    is a multiple of n; then exp(H) = n / g.
    """
    n = sum(counts)
    exponents: Counter[int] = Counter()
    for count, times in Counter(counts).items():
        for prime, power in _factorize(count).items():
            exponents[prime] += count * times * power
    if any(power % n for power in exponents.values()):
        return None
    return Fraction(n, math.prod(prime ** (power // n) for prime, power in exponents.items()))


def _factorize(number: int) -> Counter[int]:
    """Prime factors of a positive integer by trial division (numbers here are class sizes)."""
    factors: Counter[int] = Counter()
    divisor = 2
    while divisor * divisor <= number:
        while number % divisor == 0:
            factors[divisor] += 1
            number //= divisor
        divisor += 1 if divisor == 2 else 2
    if number > 1:
        factors[number] += 1
    return factors


def _total_variation(pair_class, pair_value, pair_counts, class_sizes, table_share) -> float:
    """max over classes of 0.5 * sum_v |p_cv - q_v| over all values v (absent ones count q_v)."""
    p = pair_counts / class_sizes[pair_class]
    q = table_share[pair_value]
    # sum_v |p - q| = sum_present (|p - q| - q) + sum_all q = sum_present(...) + 1
    per_class = np.bincount(pair_class, weights=np.abs(p - q) - q, minlength=class_sizes.size)
    return float(np.max(0.5 * (per_class + 1.0)))


def _ordered_emd(pair_class, pair_rank, pair_counts, class_sizes, table_share_by_rank) -> float:
    """max over classes of the ordered EMD, in O(pairs log m) without a classes x m matrix.

    Between two consecutive values present in a class, the class's cumulative share P is constant,
    so ``sum_i |P - Q_i|`` over that run of ranks follows from prefix sums of the table's cumulative
    shares Q (non-decreasing) split at the rank where Q crosses P.
    """
    m = table_share_by_rank.size
    if m < 2:
        return 0.0
    cumulative_q = np.cumsum(table_share_by_rank)
    prefix_q = np.concatenate(([0.0], np.cumsum(cumulative_q)))

    order = np.lexsort((pair_rank, pair_class))
    cls, rank = pair_class[order], pair_rank[order]
    cumulative_p = _cumsum_within(cls, pair_counts[order]) / class_sizes[cls]
    next_rank = np.append(rank[1:], m)
    last_of_class = np.append(cls[1:] != cls[:-1], True)
    next_rank[last_of_class] = m

    # Runs [rank, next_rank) at level cumulative_p, plus the run [0, first rank) at level 0.
    first_of_class = np.insert(cls[1:] != cls[:-1], 0, True)
    starts = np.concatenate((np.zeros(first_of_class.sum(), dtype=np.int64), rank))
    stops = np.concatenate((rank[first_of_class], next_rank))
    levels = np.concatenate((np.zeros(first_of_class.sum()), cumulative_p))
    owners = np.concatenate((cls[first_of_class], cls))

    split = np.clip(np.searchsorted(cumulative_q, levels, side="right"), starts, stops)
    below = levels * (split - starts) - (prefix_q[split] - prefix_q[starts])
    above = (prefix_q[stops] - prefix_q[split]) - levels * (stops - split)
    per_class = np.bincount(owners, weights=below + above, minlength=class_sizes.size)
    return float(per_class.max() / (m - 1))


def _cumsum_within(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` restarting where ``groups`` (sorted) changes."""
    total = np.cumsum(values)
    group_start = np.insert(groups[1:] != groups[:-1], 0, True)
    offset = np.where(group_start, total - values, 0)
    offset = np.maximum.accumulate(np.where(group_start, offset, -1))
    return total - offset

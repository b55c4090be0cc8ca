"""Privacy models over a sensitive attribute's count tables, as ARX and pycanon offer them.

Each model reads :class:`ClassValueCounts`: the (class, value) pairs of a sensitive attribute
with their rows, each equivalence class's rows and each value's rows in the whole table (what
:func:`broker.metrics.anonymity.sensitive_measure_of` gets from the engine's count tables). With
n_cv the rows of value v in class c, n_c the rows of class c, n_v those of v and N the table's,
the class share is ``q_cv = n_cv / n_c`` and the table share ``p_v = n_v / N``.

Naming: each function is named for the figure it returns, the model's parameter.

- (alpha, k)-anonymity (Wong et al. 2006, "(alpha, k)-anonymity: an enhanced k-anonymity model
  for privacy preserving data publishing", KDD): every class has at least k rows and no value a
  share above alpha in any class. :func:`alpha` is ``max q_cv`` (the k is the classes' k); as
  pycanon's ``alpha_k_anonymity``, it bounds every value, not one chosen sensitive value.
- Recursive (c, l)-diversity (Machanavajjhala et al. 2007, "l-diversity: privacy beyond
  k-anonymity", TKDD 1(1), section 4.2): with r_1 >= r_2 >= ... >= r_m a class's value counts,
  ``r_1 < c (r_l + ... + r_m)`` in every class. :func:`recursive_diversity` gives, for each l up
  to the distinct l, the bound that c must exceed, and pycanon's pair: the distinct l with the
  smallest integer c. ARX checks the same inequality (``RecursiveCLDiversity``); pycanon 1.3.5's
  ``recursive_c_l_diversity`` sorts the counts ascending and so takes the *least* frequent value
  for r_1 (and its l - 1 rarest out of the sum), which is not the paper's condition.
- Beta-likeness (Cao and Karras 2012, "Publishing microdata with a robust privacy guarantee",
  PVLDB 5(11)): a value's relative gain in a class, ``(q_cv - p_v) / p_v``, stays at most beta
  (basic) or at most ``min(beta, -ln p_v)`` (enhanced), as ARX's ``BasicBLikeness`` and
  ``EnhancedBLikeness`` check it over the values present in a class. :func:`beta_likeness`
  gives the smallest beta of each: basic is the largest gain (pycanon's
  ``basic_beta_likeness``); enhanced is the same number when every gain is within its
  ``-ln p_v``, else None (no beta holds). pycanon's ``enhanced_beta_likeness`` reports
  ``min(basic, max_v -ln p_v)`` instead, equal to ours whenever ours is a number, and a number
  no beta satisfies otherwise.
- Delta-disclosure privacy (Brickell and Shmatikov 2008, "The cost of privacy: destruction of
  data-mining utility in anonymized data publishing", KDD): ``|ln(q_cv / p_v)| < delta`` for
  the values present in each class (as ARX and pycanon check it). :func:`delta_disclosure` is
  the largest ``|ln(q_cv / p_v)|``, in natural logarithms as pycanon; ARX's
  ``DDisclosurePrivacy`` takes base-2 logarithms (its delta is ours / ln 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from broker.engines.base import CountTable


@dataclass(frozen=True)
class ClassValueCounts:
    """A sensitive attribute within equivalence classes, as counts.

    ``pair_class[j]`` and ``pair_value[j]`` are pair j's class id (0..classes-1, every class has
    a pair) and value code; ``pair_rows[j]`` its rows. ``class_rows[c]`` are class c's rows and
    ``value_rows[v]`` value v's rows in the whole table (0 for a code no row holds).
    """

    pair_class: np.ndarray
    pair_value: np.ndarray
    pair_rows: np.ndarray
    class_rows: np.ndarray
    value_rows: np.ndarray

    @classmethod
    def of(cls, pairs: CountTable, values: CountTable, known: list[str], sensitive: str):
        """From the count tables of (``known``, ``sensitive``) and of ``sensitive`` alone.

        Examples
        --------
        >>> pairs = CountTable.of(["q", "s"], [np.array([0, 0, 1]), np.array([0, 1, 0])],
        ...                       np.array([2, 1, 3]))
        >>> values = CountTable.of(["s"], [np.array([1, 0])], np.array([1, 5]))
        >>> counts = ClassValueCounts.of(pairs, values, ["q"], "s")
        >>> counts.class_rows.tolist(), counts.value_rows.tolist()
        ([3, 3], [5, 1])
        """
        pair_class, classes = pairs.tuple_ids(known)
        pair_rows = pairs.rows.astype(np.int64, copy=False)
        value_rows = np.zeros(values.size, dtype=np.int64)
        value_rows[values.codes(sensitive)] = values.rows
        return cls(
            pair_class,
            pairs.codes(sensitive),
            pair_rows,
            np.bincount(pair_class, weights=pair_rows, minlength=classes).astype(np.int64),
            value_rows,
        )

    @property
    def rows(self) -> int:
        return int(self.class_rows.sum())


@dataclass(frozen=True)
class RecursiveDiversity:
    """``bounds[i]``: recursive (c, i + 2)-diversity holds exactly when c > bounds[i], for l
    from 2 to the distinct l (beyond it a class has fewer than l values: no c holds). ``c``:
    the smallest integer c for the distinct l (pycanon's pair), None when that l is 1."""

    c: int | None
    bounds: tuple[float, ...]


@dataclass(frozen=True)
class BetaLikeness:
    """The smallest beta of basic and of enhanced beta-likeness (None: no beta holds)."""

    basic: float
    enhanced: float | None


def alpha(counts: ClassValueCounts) -> float:
    """The largest share of one sensitive value within a class: ``max over c, v of q_cv``.

    (alpha, k)-anonymity holds for every alpha at least this (and k at most the classes' k).

    Examples
    --------
    >>> counts = ClassValueCounts(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([3, 1, 2]),
    ...                           np.array([4, 2]), np.array([5, 1]))
    >>> alpha(counts)  # class 1 holds one value only
    1.0
    """
    return float(np.max(counts.pair_rows / counts.class_rows[counts.pair_class]))


def recursive_diversity(counts: ClassValueCounts, distinct_l: int) -> RecursiveDiversity:
    """Recursive (c, l)-diversity for l = 2 .. ``distinct_l`` (the fewest values of a class).

    ``bounds[l - 2] = max over classes of r_1 / (r_l + ... + r_m)``, each a correctly rounded
    quotient of integers; ``c = max over classes of floor(r_1 / (r_l + ... + r_m)) + 1`` is
    computed in integers.

    Examples
    --------
    >>> counts = ClassValueCounts(np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 1]),
    ...                           np.array([4, 1, 1, 2, 2]), np.array([6, 4]), np.array([6, 3, 1]))
    >>> recursive_diversity(counts, 2)  # class 0: 4 < c (1 + 1) needs c > 2
    RecursiveDiversity(c=3, bounds=(2.0,))
    """
    if distinct_l < 2:
        return RecursiveDiversity(None, ())
    # One integer key, class then falling count: an unstable sort of it is 5x a lexsort's speed
    # (classes times the largest count stay below N^2, far within int64).
    top = int(counts.pair_rows.max()) + 1
    order = np.argsort(counts.pair_class * top + (top - 1 - counts.pair_rows))
    owner, rows = counts.pair_class[order], counts.pair_rows[order]
    starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
    position = np.arange(rows.size) - starts[owner]  # 0 for a class's most frequent value
    before = np.cumsum(rows) - rows
    from_here = counts.class_rows[owner] - (before - before[starts][owner])  # r_i + ... + r_m
    top = rows[starts][owner]  # r_1
    wanted = (position >= 1) & (position < distinct_l)
    bounds = np.zeros(distinct_l - 1)
    np.maximum.at(bounds, position[wanted] - 1, top[wanted] / from_here[wanted])
    last = position == distinct_l - 1
    c = int(np.max(top[last] // from_here[last])) + 1
    return RecursiveDiversity(c, tuple(bounds.tolist()))


def beta_likeness(counts: ClassValueCounts) -> BetaLikeness:
    """Basic and enhanced beta-likeness from each present (class, value) pair's relative gain
    ``(n_cv N - n_c n_v) / (n_c n_v)``: one rounding of an exact integer quotient, so equal
    distributions give exactly 0.

    Examples
    --------
    >>> counts = ClassValueCounts(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, 1, 2]),
    ...                           np.array([2, 2]), np.array([3, 1]))
    >>> beta_likeness(counts)  # value 1: 1/4 of the table, 1/2 of class 0, a gain of 1
    BetaLikeness(basic=1.0, enhanced=None)

    Enhanced fails on value 0, 3/4 of the table and all of class 1: a gain of 1/3 is above
    -ln 3/4 = 0.288.
    """
    expected = counts.class_rows[counts.pair_class] * counts.value_rows[counts.pair_value]
    gain = (counts.pair_rows * counts.rows - expected) / expected
    basic = float(gain.max())
    cap = np.log(counts.rows / counts.value_rows[counts.pair_value])  # -ln p_v
    return BetaLikeness(basic, basic if bool(np.all(gain <= cap)) else None)


def delta_disclosure(counts: ClassValueCounts) -> float:
    """The largest ``|ln(q_cv / p_v)| = |ln(n_cv N / (n_c n_v))|`` over present pairs; the
    quotient is one rounding of integers, so a share equal to the table's gives exactly 0.

    Examples
    --------
    >>> counts = ClassValueCounts(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, 1, 2]),
    ...                           np.array([2, 2]), np.array([3, 1]))
    >>> round(delta_disclosure(counts), 6)  # value 1: 1/2 of class 0, 1/4 of the table: ln 2
    0.693147
    """
    expected = counts.class_rows[counts.pair_class] * counts.value_rows[counts.pair_value]
    return float(np.max(np.abs(np.log(counts.pair_rows * counts.rows / expected))))

"""SUDA: the special uniques of a table, each record's minimal sample uniques and its risk scores.

Definitions (Elliot, Manning, Mayes, Gurd and Bane 2002, "SUDA: a program for detecting special
uniques"; Elliot, Manning and Ford 2002, "A computational algorithm for handling the special
uniques problem", IJUFKS 10(5); Manning, Haglin and Keane 2008, "A recursive search algorithm for
statistical disclosure assessment", Data Min Knowl Disc 16), as sdcMicro's ``suda2`` computes
them (sdcMicro 5.x, ``src/Suda2.h`` and ``R/suda2.R``, read to match the definitions, never
copied). M quasi-identifiers (keys), records are rows:

- A **sample unique** on a set S of keys: a record whose values on S no other record shares.
- A **minimal sample unique** (MSU) of a record: a set S on which it is sample unique while it is
  not on any proper subset of S. Since uniqueness only grows with S, checking the M subsets that
  drop one key is enough.
- **SUDA score**: ``sum over the record's MSUs of (M - |S|)!`` (``original_scores = TRUE``,
  sdcMicro's default since 5.0.3): a small MSU weighs most.
- **Attribute contribution** of key j, percent: ``100 * sum_r sum_{MSUs S of r, j in S}
  (M - |S|)! / sum_r score_r`` (0 when no record scores). They need not sum to 100: an MSU of
  size k counts once for each of its k keys.
- **DIS-SUDA** (Skinner and Elliot 2002, "A measure of disclosure risk for microdata", JRSS B
  64(4)), with the sampling fraction f (``dis_fraction``): U the records unique on all keys, P the
  records whose tuple of all keys is held by exactly two records, ``DIS = U f / (U f + P (1 - f))``,
  ``Q = 1 + (8 - M) / 20`` and ``A = sum over scoring records of score**-Q``; a record scoring s > 0
  has ``1 / (1 + (U / DIS - U) / (s**Q * A))``, one scoring 0 has 0.

Departures from sdcMicro, each on purpose: sdcMicro counts U as the records alone in a 16-bit hash
bucket of their tuple, which misses uniques whose tuples collide (small integer codes often do);
U here is the true count, so DIS-SUDA equals sdcMicro's whenever no unique collides. sdcMicro
computes DIS and Q in single precision (a relative error near 1e-7); here in double. With fewer
than 3 keys sdcMicro pads the data with constant keys (so M = 3 in its weights); here M is the
number of keys given. A missing value is a category, as everywhere in the broker (sdcMicro's
``missing`` code never takes part in an MSU).

``max_msu_size`` L bounds the search to MSUs of at most L keys: the MSUs counted and their weights
``(M - k)!`` stay those of the full search (M is still the number of keys), so a limited score is
the full score less the MSUs larger than L, a lower bound that loses the lightest terms.

SUDA counts rows, not people: one person sent twice with the same values is not unique on any
key set, and scores 0. The broker's people counts (a person key, identical rows as one person)
do not enter these scores; k and the people-based measures are what see such a person.

The search: a depth-first walk over key sets (the keys with most values first, whose prefixes
single records out soonest), each set's classes built from its prefix's (mixed-radix keys and
``bincount``), keeping only the records not yet unique on the prefix (a record unique on a set
stays unique on every superset); a subtree where every record is already unique costs nothing.
Each set's sample uniques are kept as a packed bit row, and a set's MSUs are its uniques not
unique on any of the subsets dropping one key, found with bitwise operations on those rows. Its
cost is bounded: at most ``MAX_KEY_SETS`` key sets and ``MAX_UNIQUE_BITS`` bits kept.

Explained in ``docs/explanations/measures.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

DEFAULT_DIS_FRACTION = 0.01
# Column sets searched at most (threat: a combinatorial search on many keys): 14 keys in full,
# or more keys with a bounded MSU size.
MAX_KEY_SETS = 1 << 14
# Bits kept at most: one per (key set, distinct tuple), 256 MiB.
MAX_UNIQUE_BITS = 1 << 31
# What the broker's own searches keep at most (a decision's max_dis_suda rule, the analysis
# API): 16 MiB of bits, about 2 s of CPU (14 keys and 8,000 tuples, 10 keys and 100,000),
# since requests run side by side and a remedy measures SUDA again at each attempt.
BROKER_MAX_UNIQUE_BITS = 1 << 27
# Mixed-radix keys up to this many times the tuples are counted with bincount, else sorted.
_DIRECT_RANGE = 8


@dataclass(frozen=True, eq=False)
class Suda:
    """Each record's SUDA figures, in input order, and the table's.

    ``msus_by_size[r, k - 1]`` is record r's number of MSUs of k keys; ``contributions[r, j]``
    the sum of the weights of its MSUs holding key j.
    """

    columns: tuple[str, ...]
    msus_by_size: np.ndarray
    scores: np.ndarray
    dis_scores: np.ndarray
    contributions: np.ndarray
    dis_fraction: float
    max_msu_size: int
    sample_uniques: int = 0  # U of DIS: records unique on every key
    pair_records: int = 0  # P of DIS: records whose tuple of every key two records hold

    @property
    def msus(self) -> np.ndarray:
        """Each record's number of MSUs."""
        return self.msus_by_size.sum(axis=1)

    @property
    def attribute_contributions(self) -> dict[str, float]:
        """Key -> percent of the total score its MSUs carry (sdcMicro's
        ``attribute_contributions``)."""
        total = float(self.scores.sum())
        sums = self.contributions.sum(axis=0)
        return {
            name: 100.0 * float(value) / total if total else 0.0
            for name, value in zip(self.columns, sums, strict=True)
        }

    def riskiest(self, count: int = 10) -> np.ndarray:
        """The rows of the ``count`` highest DIS-SUDA scores (ties: higher score, earlier row),
        scoring rows only."""
        order = np.lexsort((np.arange(self.scores.size), -self.scores, -self.dis_scores))
        order = order[self.scores[order] > 0]
        return order[:count]

    def record(self, row: int) -> dict:
        return {
            "row": int(row),
            "msus": int(self.msus_by_size[row].sum()),
            "score": float(self.scores[row]),
            "dis_score": float(self.dis_scores[row]),
        }

    def figures(self, riskiest: int = 10) -> SudaFigures:
        """The table's figures, with the ``riskiest`` records (their rows), without the list of
        every record."""
        scoring = self.scores[self.scores > 0]
        return SudaFigures(
            quasi_identifiers=self.columns,
            dis_fraction=self.dis_fraction,
            max_msu_size=self.max_msu_size,
            records_with_msus=int(np.count_nonzero(self.msus)),
            max_score=float(self.scores.max(initial=0.0)),
            max_dis_score=float(self.dis_scores.max(initial=0.0)),
            attribute_contributions=self.attribute_contributions,
            riskiest=tuple(self.record(r) for r in self.riskiest(riskiest)),
            sample_uniques=self.sample_uniques,
            pair_records=self.pair_records,
            dis_weight_sum=float(np.sum(scoring ** -dis_power(len(self.columns)))),
        )

    def as_dict(self, riskiest: int = 10, records: bool = True) -> dict:
        """The figures; ``records`` (one per input row) unless asked not to."""
        document = self.figures(riskiest).as_dict()
        if records:
            document["records"] = [
                {"row": r, "msus": m, "score": s, "dis_score": d}
                for r, (m, s, d) in enumerate(
                    zip(
                        self.msus.tolist(),
                        self.scores.tolist(),
                        self.dis_scores.tolist(),
                        strict=True,
                    )
                )
            ]
        return document


@dataclass(frozen=True)
class SudaFigures:
    """A table's SUDA figures without a list of every record: what a report keeps.

    ``sample_uniques`` (U), ``pair_records`` (P) and ``dis_weight_sum`` (A, the sum over scoring
    records of ``score**-Q``) are what DIS-SUDA needs besides a record's score, so
    :meth:`max_dis_at` gives the highest DIS-SUDA score at any sampling fraction exactly,
    without searching again.
    """

    quasi_identifiers: tuple[str, ...]
    dis_fraction: float
    max_msu_size: int
    records_with_msus: int
    max_score: float
    max_dis_score: float
    attribute_contributions: dict[str, float]
    riskiest: tuple[dict, ...] = ()
    sample_uniques: int = 0
    pair_records: int = 0
    dis_weight_sum: float = 0.0

    def max_dis_at(self, fraction: float) -> float:
        """The highest DIS-SUDA score of any record at sampling fraction ``fraction`` (the
        record of the highest SUDA score: DIS-SUDA grows with the score).

        Examples
        --------
        >>> frame = pd.DataFrame({"a": [0, 1, 1, 1], "b": [0, 0, 1, 1]})
        >>> figures = suda_of_frame(frame, ["a", "b"], dis_fraction=0.5).figures()
        >>> figures.max_dis_score, figures.max_dis_at(0.5), round(figures.max_dis_at(0.01), 6)
        (0.5, 0.5, 0.01)
        """
        if not 0 < fraction <= 1:
            raise ValueError(f"the DIS sampling fraction is in (0, 1], got {fraction}")
        if self.max_score <= 0:
            return 0.0
        return float(
            _dis_scores(
                np.array([self.max_score]),
                self.sample_uniques,
                self.pair_records,
                len(self.quasi_identifiers),
                fraction,
                self.dis_weight_sum,
            )[0]
        )

    def as_dict(self) -> dict:
        return {
            "quasi_identifiers": list(self.quasi_identifiers),
            "dis_fraction": self.dis_fraction,
            "max_msu_size": self.max_msu_size,
            "records_with_msus": self.records_with_msus,
            "max_score": self.max_score,
            "max_dis_score": self.max_dis_score,
            "attribute_contributions": dict(self.attribute_contributions),
            "riskiest": [dict(record) for record in self.riskiest],
            "sample_uniques": self.sample_uniques,
            "pair_records": self.pair_records,
            "dis_weight_sum": self.dis_weight_sum,
        }

    @classmethod
    def of_dict(cls, document: dict) -> SudaFigures:
        """The figures :meth:`as_dict` wrote."""
        return cls(
            quasi_identifiers=tuple(document["quasi_identifiers"]),
            dis_fraction=document["dis_fraction"],
            max_msu_size=document["max_msu_size"],
            records_with_msus=document["records_with_msus"],
            max_score=document["max_score"],
            max_dis_score=document["max_dis_score"],
            attribute_contributions=dict(document["attribute_contributions"]),
            riskiest=tuple(dict(record) for record in document["riskiest"]),
            sample_uniques=document["sample_uniques"],
            pair_records=document["pair_records"],
            dis_weight_sum=document["dis_weight_sum"],
        )


def no_uniques(columns: Sequence[str], dis_fraction: float = DEFAULT_DIS_FRACTION) -> SudaFigures:
    """The figures of a table where every tuple of the keys is held by two records or more: no
    record is unique on any key set (uniqueness only grows with the set), so nothing scores,
    and no search is needed."""
    return SudaFigures(
        quasi_identifiers=tuple(columns),
        dis_fraction=dis_fraction,
        max_msu_size=len(columns),
        records_with_msus=0,
        max_score=0.0,
        max_dis_score=0.0,
        attribute_contributions=dict.fromkeys(columns, 0.0),
    )


def over_budget(
    keys: int, tuples: int, max_msu_size: int | None = None, max_bits: int = MAX_UNIQUE_BITS
) -> str | None:
    """Why a search on ``keys`` keys and ``tuples`` distinct tuples would pass the search's
    bounds (:data:`MAX_KEY_SETS`, ``max_bits``); None when it stays within them."""
    limit = keys if max_msu_size is None else max_msu_size
    key_sets = sum(math.comb(keys, size) for size in range(1, limit + 1))
    if key_sets > MAX_KEY_SETS:
        return (
            f"SUDA on {keys} quasi-identifiers searches {key_sets} key sets, more than "
            f"{MAX_KEY_SETS}: bound the MSU size"
        )
    if key_sets * tuples > max_bits:
        return (
            f"SUDA on {tuples} distinct tuples and {key_sets} key sets needs more than "
            f"{max_bits / (8 << 20):g} MiB: bound the MSU size"
        )
    return None


def suda_of_frame(
    frame: pd.DataFrame,
    columns: Sequence[str],
    *,
    dis_fraction: float = DEFAULT_DIS_FRACTION,
    max_msu_size: int | None = None,
    max_bits: int = MAX_UNIQUE_BITS,
) -> Suda:
    """SUDA of the rows of ``frame`` on the keys ``columns`` (a missing value is a category).

    Examples
    --------
    >>> frame = pd.DataFrame({"a": [1, 1, 2], "b": [0, 3, 0], "c": [0, 6, 0]})
    >>> result = suda_of_frame(frame, ["a", "b", "c"])
    >>> result.scores.tolist(), result.attribute_contributions
    ([2.0, 4.0, 2.0], {'a': 50.0, 'b': 37.5, 'c': 37.5})
    """
    missing = [name for name in columns if name not in frame.columns]
    if missing:
        raise ValueError(f"SUDA key {missing[0]!r} is not a column of the dataset")
    twice = [name for name in set(columns) if list(columns).count(name) > 1]
    if twice or frame.columns.duplicated().any():
        name = twice[0] if twice else frame.columns[frame.columns.duplicated()][0]
        raise ValueError(f"SUDA key {name!r} is named more than once")
    codes, widths = [], []
    for name in columns:
        column_codes, uniques = pd.factorize(frame[name], use_na_sentinel=False)
        codes.append(column_codes.astype(np.int64))
        widths.append(max(len(uniques), 1))
    tuples, rows_of = _distinct(codes, widths, len(frame))
    per_tuple = suda(
        [code[tuples.first] for code in codes],
        widths,
        tuples.rows,
        columns=columns,
        dis_fraction=dis_fraction,
        max_msu_size=max_msu_size,
        max_bits=max_bits,
    )
    return Suda(
        per_tuple.columns,
        per_tuple.msus_by_size[rows_of],
        per_tuple.scores[rows_of],
        per_tuple.dis_scores[rows_of],
        per_tuple.contributions[rows_of],
        dis_fraction,
        per_tuple.max_msu_size,
        per_tuple.sample_uniques,
        per_tuple.pair_records,
    )


@dataclass(frozen=True)
class _Tuples:
    first: np.ndarray  # a row holding each distinct tuple
    rows: np.ndarray  # the rows holding it


def _distinct(codes: list[np.ndarray], widths: list[int], n: int) -> tuple[_Tuples, np.ndarray]:
    """The distinct tuples of the rows and each row's tuple."""
    if n == 0:
        return _Tuples(np.zeros(0, np.int64), np.zeros(0, np.int64)), np.zeros(0, np.int64)
    ids = np.zeros(n, np.int64)
    groups = 1
    for code, width in zip(codes, widths, strict=True):
        ids, groups = _dense(ids * width + code, groups * width)
    first = np.full(groups, n, np.int64)
    np.minimum.at(first, ids, np.arange(n))
    return _Tuples(first, np.bincount(ids, minlength=groups)), ids


def _dense(keys: np.ndarray, space: int) -> tuple[np.ndarray, int]:
    """Keys in [0, space) renumbered 0..g-1 (g the distinct keys)."""
    ids, groups, _ = _classes(keys, space)
    return ids, groups


def _classes(keys: np.ndarray, space: int) -> tuple[np.ndarray, int, np.ndarray]:
    """Keys in [0, space) renumbered 0..g-1, g, and the size of each key's class."""
    if space <= max(_DIRECT_RANGE * keys.size, 1 << 16):
        sizes = np.bincount(keys, minlength=space)
        numbers = np.cumsum(sizes > 0) - 1
        return numbers[keys], int(numbers[-1]) + 1, sizes[keys]
    distinct, inverse, sizes = np.unique(keys, return_inverse=True, return_counts=True)
    return inverse.astype(np.int64), int(distinct.size), sizes[inverse]


def weights(keys: int) -> list[int]:
    """``(M - k)!`` for k = 1..M: the weight of an MSU of k keys among M."""
    return [math.factorial(keys - size) for size in range(1, keys + 1)]


def suda(
    codes: Sequence[np.ndarray],
    widths: Sequence[int],
    rows: np.ndarray,
    *,
    columns: Sequence[str],
    dis_fraction: float = DEFAULT_DIS_FRACTION,
    max_msu_size: int | None = None,
    max_bits: int = MAX_UNIQUE_BITS,
) -> Suda:
    """SUDA of a count table: the distinct tuples of the keys (``codes[j][t]`` in
    ``range(widths[j])``) and the rows holding each (``rows``). The figures are per tuple; a
    tuple of several rows is never unique and scores 0.

    Examples
    --------
    >>> result = suda([np.array([0, 1, 1]), np.array([0, 0, 1])], [2, 2], np.array([1, 1, 2]),
    ...               columns=["a", "b"])
    >>> result.msus_by_size.tolist(), result.scores.tolist()
    ([[1, 0], [0, 1], [0, 0]], [1.0, 1.0, 0.0])
    """
    keys = len(columns)
    if keys == 0:
        raise ValueError("SUDA needs at least one quasi-identifier")
    if len(codes) != keys or len(widths) != keys:
        raise ValueError("SUDA needs one code array and one width per quasi-identifier")
    if not 0 < dis_fraction <= 1:
        raise ValueError(f"the DIS sampling fraction is in (0, 1], got {dis_fraction}")
    limit = keys if max_msu_size is None else max_msu_size
    if not 1 <= limit <= keys:
        raise ValueError(f"the largest MSU size is between 1 and {keys}, got {limit}")
    rows = np.asarray(rows, dtype=np.int64)
    tuples = rows.size
    refused = over_budget(keys, tuples, limit, max_bits)
    if refused is not None:
        raise ValueError(refused)
    # Keys with many values first: their prefixes single records out soonest, and the walk
    # drops them from the subtrees below.
    order = sorted(range(keys), key=lambda j: -widths[j])
    walked = _unique_bits(
        [np.asarray(codes[j], np.int64) for j in order], [widths[j] for j in order], rows, limit
    )
    uniques = {sum(1 << order[p] for p in _members(mask)): bits for mask, bits in walked.items()}
    # by_size[k - 1, r]: record r's MSUs of k keys; carried[j, r]: the weights of those holding j.
    weight = np.array(weights(keys), np.float64)
    by_size = np.zeros((keys, tuples), np.int64)
    carried = np.zeros((keys, tuples), np.float64)
    for mask, bits in uniques.items():
        size = mask.bit_count()
        if size == 1:
            minimal = bits
        else:
            below = np.zeros_like(bits)
            for j in _members(mask):
                below |= uniques[mask ^ (1 << j)]
            minimal = bits & ~below
        if not minimal.any():
            continue
        holders = np.flatnonzero(np.unpackbits(minimal, count=tuples))
        by_size[size - 1, holders] += 1
        for j in _members(mask):
            carried[j, holders] += weight[size - 1]
    scores = weight @ by_size
    uniques = int(np.count_nonzero(rows == 1))
    pairs = 2 * int(np.count_nonzero(rows == 2))
    return Suda(
        tuple(columns),
        by_size.T.copy(),
        scores,
        _dis_scores(scores, uniques, pairs, keys, dis_fraction),
        carried.T.copy(),
        dis_fraction,
        limit,
        uniques,
        pairs,
    )


def _members(mask: int) -> list[int]:
    return [j for j in range(mask.bit_length()) if mask >> j & 1]


def _unique_bits(
    codes: list[np.ndarray], widths: list[int], rows: np.ndarray, limit: int
) -> dict[int, np.ndarray]:
    """Key-set mask -> the tuples unique on that set (packed bits), for every set of at most
    ``limit`` keys."""
    tuples = rows.size
    everyone = np.packbits(np.ones(tuples, bool))
    found: dict[int, np.ndarray] = {}

    single = rows == 1  # a tuple of several rows is unique nowhere
    several = not single.all()

    def walk(mask: int, last: int, alive: np.ndarray, ids: np.ndarray, groups: int) -> None:
        # ``alive``: the tuples not unique on ``mask`` (ascending), ``ids`` their classes.
        for j in range(last + 1, len(codes)):
            child = mask | (1 << j)
            if not alive.size:
                _fill(child, j, found, everyone, len(codes), limit)
                continue
            key = ids * widths[j] + codes[j][alive]
            child_ids, child_groups, sizes = _classes(key, groups * widths[j])
            unique = sizes == 1
            if several:
                unique &= single[alive]
            bits = np.ones(tuples, bool)
            bits[alive[~unique]] = False
            found[child] = np.packbits(bits)
            if child.bit_count() < limit and j + 1 < len(codes):
                keep = ~unique
                kept_ids, kept_groups = _dense(child_ids[keep], child_groups)
                walk(child, j, alive[keep], kept_ids, kept_groups)

    walk(0, -1, np.arange(tuples), np.zeros(tuples, np.int64), 1)
    return found


def _fill(
    mask: int, last: int, found: dict[int, np.ndarray], everyone: np.ndarray, keys: int, limit: int
) -> None:
    """Every tuple is unique on ``mask`` and on the sets the walk reaches from it."""
    found[mask] = everyone
    if mask.bit_count() < limit:
        for j in range(last + 1, keys):
            _fill(mask | (1 << j), j, found, everyone, keys, limit)


def dis_power(keys: int) -> float:
    """DIS-SUDA's power Q = 1 + (8 - M) / 20 of the scores, for M keys."""
    return 1.0 + (8.0 - keys) / 20.0


def _dis_scores(
    scores: np.ndarray,
    uniques: int,
    in_pairs: int,
    keys: int,
    fraction: float,
    adjustment: float | None = None,
) -> np.ndarray:
    """DIS-SUDA of each score (see the module docstring); ``adjustment``, A, from ``scores``
    unless given."""
    scoring = scores > 0
    result = np.zeros(scores.size, np.float64)
    if not scoring.any():
        return result
    dis = uniques * fraction / (uniques * fraction + in_pairs * (1.0 - fraction))
    powered = scores[scoring] ** dis_power(keys)
    if adjustment is None:
        adjustment = float(np.sum(1.0 / powered))
    result[scoring] = 1.0 / (1.0 + (uniques / dis - uniques) / (powered * adjustment))
    return result

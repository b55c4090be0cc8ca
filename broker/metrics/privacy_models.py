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

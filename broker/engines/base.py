"""What an engine gives the pure core: count tables. The contract every engine keeps.

Every measure the broker reports is a function of *count tables*: the distinct tuples of a chosen
column set, each with its number of rows (and, when asked, of people). k and prosecutor risk need
the tuples of the quasi-identifiers; Mmaq and the QIR risk those of each column; l and t those of
(known attributes, sensitive value); the combination search those of small column sets. So
:mod:`broker.metrics` takes count tables, and an engine produces them: the pandas engine for data
in memory today; an out-of-core or a cluster engine adds one module that keeps this contract.

Counts are asked per column set, never as one table of all columns: a near-unique column would
make that as large as the data.

The contract (``tests/engines/test_contract.py`` runs every case through every engine):

- **Values as written.** A category is a distinct value as the reader produced it: CSV values
  are text, so ``"007"`` and ``"7"`` are two categories, and ``1`` and ``"1"`` differ in JSON.
- **Missing values** (None, NaN, NaT, pd.NA: the reader's missing cells) are one category of their
  own, counted like any value (pandas and Dask need ``dropna=False`` for this). A blank string is
  a value as written when counting; the transformations and the content checks treat it as
  missing (:func:`broker.columns.missing.missing_values`), which is the one rule for what "missing"
  means.
- **Codes.** Each column has a dictionary of its distinct values; a count table names each tuple's
  values by their codes (positions in those dictionaries), so the core never compares values.
- **People.** An engine knows who each row is: identical rows are one person (the broker cannot
  tell one person sent three times from three people), and rows sharing a declared person key are
  one person; a tuple's people are the fewer of the two counts. Without a key, once told the
  quasi-identifiers (:meth:`Engine.assume_worst`), the rows of a *rare* quasi-identifier tuple
  are one person too, whatever else differs in them: the worst case, defined and computed once in
  :mod:`broker.engines.people`. What people counts is fixed on the table as sent: a recoded table
  counts the people of the rows it was made from.

What needs more than counts says so where it lives: information loss needs a row-aligned join
(:mod:`broker.anonymize.loss`); Mondrian and the partition method, masking, the output shuffle
and writing are row-level and run inside the engine that holds the rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from broker.engines.people import RareTuples

# How an engine counts people: by a declared person key, identical rows as one person, or also
# the rows of each rare quasi-identifier tuple as one person (no key: the worst case).
PERSON_KEY = "person_key"
IDENTICAL_ROWS = "identical_rows"
WORST_CASE = "worst_case"


def dictionary_of(values: pd.Series) -> pd.Series:
    """A column's distinct values as the contract hands them over: objects, a missing value as
    None, numbered 0..m-1 by position."""
    return pd.Series(dictionary_values(values), dtype=object, copy=False)


def dictionary_values(values: pd.Series) -> np.ndarray:
    """:func:`dictionary_of` as an array of objects (what a reader indexing it by codes
    needs, without a Series built for it).

    Examples
    --------
    >>> dictionary_values(pd.Series([1.5, float("nan"), 2.0])).tolist()
    [1.5, None, 2.0]
    """
    found = values.to_numpy(dtype=object, copy=True)
    found[pd.isna(found)] = None
    return found


@dataclass(frozen=True, eq=False)
class CountTable:
    """The distinct tuples of ``columns``, in no particular order.

    ``rows[j]`` is the number of rows holding tuple j and ``people[j]``, when asked for, the
    number of distinct people among them; :meth:`codes` gives each tuple's value in a column as
    its code (its position in the engine's :meth:`Engine.dictionary` of that column).

    An engine may hand the codes over as functions, computed when a measure first asks (k needs
    only the sizes), and may say which tuples share a prefix of the columns (``prefix``: the
    prefix's columns and a function giving each tuple's prefix id and the number of prefixes),
    which it often knows for free: the classes of a (class, value) table.

    ``person_groups``, with people counted in the worst case (:mod:`broker.engines.people`):
    for each tuple, the one person all its rows may be (-1: its people are counted as usual),
    so that tuples which merge count each such person once.
    """

    columns: tuple[str, ...]
    rows: np.ndarray
    people: np.ndarray | None = None
    value_codes: Mapping[str, np.ndarray | Callable[[], np.ndarray]] = field(
        default_factory=dict, repr=False
    )
    prefix: tuple[tuple[str, ...], Callable[[], tuple[np.ndarray, int]]] | None = field(
        default=None, repr=False
    )
    person_groups: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def of(
        cls,
        columns: Sequence[str],
        codes: Sequence[np.ndarray],
        rows: np.ndarray,
        people: np.ndarray | None = None,
    ) -> CountTable:
        """A count table from its codes, one array per column."""
        return cls(tuple(columns), rows, people, dict(zip(columns, codes, strict=True)))

    @classmethod
    def of_keys(
        cls,
        columns: Sequence[str],
        widths: Sequence[int],
        keys: np.ndarray,
        rows: np.ndarray,
        people: np.ndarray | None = None,
    ) -> CountTable:
        """A count table from one int64 key a tuple, its codes in mixed radix (``widths``: each
        column's number of codes, their product below 2**63), the keys in ascending order.

        One array instead of one a column is what an out-of-core engine hands over for millions
        of tuples; each column's codes and the classes of the columns but the last (the prefix)
        are computed from it only when a measure asks.

        Examples
        --------
        >>> table = CountTable.of_keys(["q", "s"], [3, 2], np.array([1, 4, 5]), np.array([2, 1, 3]))
        >>> table.codes("q").tolist(), table.codes("s").tolist(), table.tuple_ids(["q"])[1]
        ([0, 2, 2], [1, 0, 1], 2)
        """
        strides = mixed_radix_strides(widths)
        codes = {
            name: (lambda stride=stride, width=width: keys // stride % width)
            for name, stride, width in zip(columns, strides, widths, strict=True)
        }
        prefix = None
        if len(columns) > 1:
            prefix = (tuple(columns[:-1]), lambda: _sorted_ids(keys // widths[-1]))
        return cls(tuple(columns), rows, people, codes, prefix)

    @property
    def size(self) -> int:
        """The number of distinct tuples."""
        return int(self.rows.size)

    def codes(self, column: str) -> np.ndarray:
        """Each tuple's code in ``column``."""
        found = self.value_codes[column]
        if callable(found):
            found = found()
            self.value_codes[column] = found  # type: ignore[index]  # computed once
        return found

    def smallest_in_people(self) -> int:
        """The fewest people holding one tuple (rows when people were not counted)."""
        return int((self.rows if self.people is None else self.people).min())

    def merged(self, codes: Sequence[np.ndarray], widths: Sequence[int]) -> CountTable:
        """The table with each tuple's codes replaced by ``codes`` (one array a column, each
        column's codes in ``[0, width)``): tuples that now agree become one, their rows (and
        people) added up. What a value -> label map does to a count table.

        >>> table = CountTable.of(["q"], [np.array([0, 1, 2])], np.array([2, 1, 3]))
        >>> merged = table.merged([np.array([0, 0, 1])], [2])
        >>> merged.codes("q").tolist(), merged.rows.tolist()
        ([0, 1], [3, 3])
        """
        grouped = Grouped.of(codes, widths)
        people, groups = self._people_of(grouped)
        rows = grouped.added(self.rows)
        if grouped.packed:
            found = CountTable.of_keys(self.columns, widths, grouped.keys, rows, people)
            if grouped.unmoved:  # no tuple met another or moved: its codes are those given
                given = zip(self.columns, codes, strict=True)
                found.value_codes.update({name: np.asarray(c, dtype=np.int64) for name, c in given})
        else:
            one = grouped.representatives()
            kept = [np.asarray(c[one], dtype=np.int64) for c in codes]
            found = CountTable.of(self.columns, kept, rows, people)
        return found if groups is None else replace(found, person_groups=groups)

    def projected(self, columns: Sequence[str]) -> CountTable:
        """The table of ``columns`` (some of this table's), the tuples that agree on them
        merged, their rows and people added up as in :meth:`merged`.

        >>> table = CountTable.of(["q", "s"], [np.array([0, 0, 1]), np.array([0, 1, 1])],
        ...                       np.array([2, 1, 3]))
        >>> table.projected(["q"]).rows.tolist()
        [3, 3]
        """
        codes = [self.codes(c) for c in columns]
        widths = [int(c.max()) + 1 if c.size else 1 for c in codes]
        grouped = Grouped.of(codes, widths)
        people, groups = self._people_of(grouped)
        one = grouped.representatives()
        found = CountTable.of(columns, [c[one] for c in codes], grouped.added(self.rows), people)
        return found if groups is None else replace(found, person_groups=groups)

    def _people_of(self, grouped: Grouped) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The people of each merged tuple, and its person group (a tuple whose people all
        were one group's stays that group's), when people are counted."""
        if self.people is None:
            return None, None
        if self.person_groups is None:
            return grouped.added(self.people), None
        grouped_people = self.person_groups >= 0
        counted = grouped.added(np.where(grouped_people, 0, self.people))
        pairs = np.unique(
            np.stack([grouped.inverse[grouped_people], self.person_groups[grouped_people]]),
            axis=1,
        )
        counted += np.bincount(pairs[0], minlength=grouped.keys.size).astype(np.int64)
        # A merged tuple is one group's when all its tuples are that group's.
        first = np.full(grouped.keys.size, -1, dtype=np.int64)
        first[grouped.inverse] = self.person_groups
        same = np.ones(grouped.keys.size, dtype=bool)
        np.logical_and.at(same, grouped.inverse, self.person_groups == first[grouped.inverse])
        return counted, np.where(same, first, -1)

    def tuple_ids(self, columns: Sequence[str]) -> tuple[np.ndarray, int]:
        """For each tuple, the id of its projection on ``columns`` (a prefix or any subset), and
        how many distinct projections there are: the classes of a (class, value) table."""
        if not columns:
            return np.zeros(self.size, dtype=np.int64), 1
        if self.prefix is not None and tuple(columns) == self.prefix[0]:
            return self.prefix[1]()
        ids = np.zeros(self.size, dtype=np.int64)
        space = 1
        for name in columns:
            codes = self.codes(name)
            width = int(codes.max()) + 1 if codes.size else 1
            ids, space = _compact(ids * width + codes, space * width)
        return ids, space


def mixed_radix_strides(widths: Sequence[int]) -> list[int]:
    """Each column's weight in a mixed-radix key (the last column's is 1): the key of codes
    c_i is sum(c_i * stride_i), as :meth:`CountTable.of_keys` reads it back.

    >>> mixed_radix_strides([3, 2, 5])
    [10, 5, 1]
    """
    return np.cumprod([1, *widths[:0:-1]])[::-1].tolist()


@dataclass(frozen=True, eq=False)
class Grouped:
    """Tuples of codes grouped by sorting one key a tuple: the distinct ``keys`` in ascending
    order (:func:`tuple_keys`), each tuple's position among them (``inverse``), and whether the
    keys are the codes in mixed radix throughout (``packed``)."""

    keys: np.ndarray
    inverse: np.ndarray
    packed: bool
    unmoved: bool = False  # each tuple its own distinct tuple, in place (keys given ascending)

    @classmethod
    def of(cls, codes: Sequence[np.ndarray], widths: Sequence[int]) -> Grouped:
        """Sorting is the cost, and two cases need none (the result is ``np.unique``'s): keys
        already distinct and ascending (a count table relabelled one-to-one, in order), and
        keys in a space no larger than a few times their number, marked in a bitmap."""
        keys, packed = tuple_keys(codes, widths)
        if bool((keys[1:] > keys[:-1]).all()):
            return cls(keys, np.arange(keys.size, dtype=np.intp), packed, unmoved=True)
        space = math.prod(int(width) for width in widths)
        small = packed and space <= max(1 << 22, 4 * keys.size)
        if small and keys.min() >= 0 and keys.max() < space:
            present = np.zeros(space, dtype=bool)
            present[keys] = True
            rank = np.cumsum(present, dtype=np.intp) - 1
            return cls(np.flatnonzero(present).astype(keys.dtype), rank[keys], packed)
        distinct, inverse = np.unique(keys, return_inverse=True)
        return cls(distinct, inverse, packed)

    def added(self, counts: np.ndarray) -> np.ndarray:
        """``counts`` (one a tuple) added up per distinct tuple."""
        if self.unmoved:
            return np.asarray(counts).astype(np.int64)
        return np.bincount(self.inverse, weights=counts, minlength=self.keys.size).astype(np.int64)

    def representatives(self) -> np.ndarray:
        """The position of one tuple of each distinct tuple."""
        if self.unmoved:
            return np.arange(self.keys.size, dtype=np.intp)
        one = np.empty(self.keys.size, dtype=np.intp)
        one[self.inverse] = np.arange(self.inverse.size)
        return one


def tuple_keys(codes: Sequence[np.ndarray], widths: Sequence[int]) -> tuple[np.ndarray, bool]:
    """One int64 key a tuple, the codes in mixed radix (each column's in ``[0, width)``), so
    that tuples compare as their keys do; and whether the key is that mixed radix throughout.
    Where the product of the widths would overflow, the key of the columns so far is renumbered
    first (order kept), so the last column is always its last digit.

    >>> keys, packed = tuple_keys([np.array([1, 0]), np.array([2, 1])], [2, 3])
    >>> keys.tolist(), packed
    ([5, 1], True)
    """
    key = np.zeros(codes[0].size if codes else 0, dtype=np.int64)
    space, packed = 1, True
    for column, width in zip(codes, widths, strict=True):
        if space * width >= 2**63:
            distinct, key = np.unique(key, return_inverse=True)
            space, packed = distinct.size, False
        column = np.asarray(column)
        if column.dtype.kind == "i" or column.dtype == bool:
            key *= width  # in place: a million tuples' keys are not allocated again a column
            key += column
        else:
            key = key * width + column
        space *= width
    return key, packed


def _sorted_ids(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids 0..m-1 for ascending ``keys``, and m: a running count of changes."""
    if not keys.size:
        return np.zeros(0, dtype=np.int64), 0
    ids = np.empty(keys.size, dtype=np.int64)
    ids[0] = 0
    np.cumsum(keys[1:] != keys[:-1], out=ids[1:])
    return ids, int(ids[-1]) + 1


def _compact(mixed: np.ndarray, space: int) -> tuple[np.ndarray, int]:
    """Dense ids 0..m-1 for the distinct values of ``mixed`` (which lie in [0, space))."""
    if space <= max(1 << 22, 4 * mixed.size):
        present = np.zeros(space, dtype=bool)
        present[mixed] = True
        remap = np.cumsum(present) - 1
        return remap[mixed], int(present.sum())
    codes, uniques = pd.factorize(mixed)
    return codes.astype(np.int64, copy=False), len(uniques)


class RecentTables:
    """The last few count tables an engine gave, by column set: a report asks for the
    quasi-identifiers' classes for k and again for each sensitive attribute, and the checks of
    an anonymization ask for them once more. A table counted with people also answers a
    question without them.

    Kept: at most ``kept`` tables of several columns, holding at most ``max_tuples`` tuples
    together. A column alone is cheap to count again (and a report asks for every column,
    which would push out the tables worth keeping); a table of millions of tuples, out of core,
    would hold its codes in memory for as long as it is kept, so it is not kept. Past ``kept``
    tables the one of fewest tuples goes (the oldest of those), as it is the cheapest to count
    again: the small sets a combination search or a linkage check asks for between them do not
    push out the quasi-identifiers' tables, which out of core come back from disk as a
    million-tuple fetch each time. Past ``max_tuples`` the oldest goes.
    """

    def __init__(self, kept: int = 2, max_tuples: int = 1 << 21):
        self._kept = kept
        self._max_tuples = max_tuples
        self._tables: dict[tuple[str, ...], CountTable] = {}

    def get(self, columns: Sequence[str], people: bool) -> CountTable | None:
        found = self._tables.get(tuple(columns))
        if found is None or (people and found.people is None):
            return None
        if people or found.people is None:
            return found
        return replace(found, people=None, person_groups=None)

    def clear(self) -> None:
        """Forget every table (people are now counted otherwise)."""
        self._tables.clear()

    def keep(self, table: CountTable) -> CountTable:
        if len(table.columns) < 2 or table.size > self._max_tuples:
            return table
        self._tables.pop(table.columns, None)
        self._tables[table.columns] = table
        while len(self._tables) > self._kept:
            cheapest = min(self._tables, key=lambda columns: self._tables[columns].size)
            self._tables.pop(cheapest)  # min() keeps the first, the oldest, of equals
        while sum(t.size for t in self._tables.values()) > self._max_tuples:
            self._tables.pop(next(iter(self._tables)))
        return table


@dataclass(frozen=True)
class RecodePlan:
    """What a generalization does to a table, as data an engine applies while it reads.

    ``labels[column]`` maps a value (as written) to its label; a value the map does not name keeps
    itself. ``drop`` lists columns that do not leave. Because a map acts on distinct values, its
    effect on a count table is known without reading the rows (:meth:`Engine.recode` applies it to
    the rows for the output).
    """

    labels: Mapping[str, Mapping[Any, Any]] = field(default_factory=dict)
    drop: tuple[str, ...] = ()


def composed(
    first: RecodePlan, then: RecodePlan, dictionary: Callable[[str], pd.Series]
) -> RecodePlan:
    """``then`` applied after ``first``, as one plan on the table ``first`` recodes (whose
    distinct values ``dictionary(column)`` gives).

    >>> plan = composed(RecodePlan({"age": {"21": "20-29"}}), RecodePlan({"age": {"20-29": "*"}}),
    ...                 lambda name: pd.Series(["21", "35"]))
    >>> plan.labels["age"]
    {'21': '*', '35': '35'}
    """
    labels = {}
    for name in {*first.labels, *then.labels} - set(then.drop):
        before, after = first.labels.get(name, {}), then.labels.get(name, {})
        values = dictionary(name).tolist()
        labels[name] = {v: after.get(before.get(v, v), before.get(v, v)) for v in values}
    return RecodePlan(labels, (*first.drop, *then.drop))


class Engine(Protocol):
    """A table held by some engine, seen through counts."""

    @property
    def columns(self) -> list[str]:
        """The column names, in order."""

    @property
    def rows(self) -> int:
        """The number of rows."""

    @property
    def people_counted_by(self) -> str:
        """``"person_key"`` when a declared key says who the rows are, ``"worst_case"`` when
        rows of a rare quasi-identifier tuple count as one person, else ``"identical_rows"``."""

    def dictionary(self, column: str) -> pd.Series:
        """The distinct values of ``column`` as written, indexed by their code (0..m-1)."""

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        """One count table per column set (none: one tuple holding every row), in order.

        With ``people``, each table also counts the distinct people of each tuple.
        """

    def tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Only the rows of each tuple of each column set: what a search over thousands of
        column sets needs, without the codes."""

    def duplicate_rows(self) -> int:
        """Rows identical (on every column) to an earlier row."""

    def recode(self, plan: RecodePlan) -> Engine:
        """The table with ``plan`` applied (people stay who they were)."""

    def assume_worst(self, quasi_identifiers: Sequence[str]) -> None:
        """From now on, count people assuming the worst for the rows of each rare tuple of
        ``quasi_identifiers`` (:mod:`broker.engines.people`).

        Nothing changes when a person key is declared (it says who the rows are) or when the
        table is a recoded or anonymized version of another (its people are the rows' of the
        table as sent).
        """

    @property
    def rare(self) -> RareTuples | None:
        """The rare tuples people are counted with (the table as sent's); None when the worst
        case was not assumed."""


@runtime_checkable
class ReadsRowsInOrder(Protocol):
    """An engine that can give a table's first rows in the order they were sent (what an
    identifier written down a column's rows needs; counts lose the order)."""

    def head(self, columns: Sequence[str], rows: int) -> pd.DataFrame:
        """The first ``rows`` rows of ``columns``, in order, values as the engine holds them."""


@runtime_checkable
class PlansCounts(Protocol):
    """An engine that reads its source in passes (a file larger than memory) can count many
    column sets in one pass when it is told them all before the first question."""

    def plan(self, column_sets: Sequence[Sequence[str]], people: bool = True) -> None:
        """Announce the column sets whose counts (with or without people), dictionaries,
        ``rows`` and ``duplicate_rows`` will be asked; other questions stay answered.

        Without ``people`` the pass is cheaper: neither people nor duplicate rows are
        counted (a later plan counts them). A later plan counts only what no earlier one did."""


@runtime_checkable
class SamplesTuples(Protocol):
    """An engine that can choose distinct tuples of a column set at random without counting
    them all (a file larger than memory, where a set with a near-unique column has about as
    many tuples as rows)."""

    def sample_tuples(
        self,
        column_sets: Sequence[Sequence[str]],
        sizes: Sequence[int],
        read_again: bool = False,
    ) -> list[list[np.ndarray]]:
        """For each column set, the codes, column by column, of its ``size`` distinct tuples,
        each as likely to be chosen whatever its number of rows, by randomness a sender cannot
        predict (all of them when there are no more), in a random order. ``read_again``: the
        rows will be read again after (a combination search), so an engine that copies them
        for that may copy them now and sample from the copy."""

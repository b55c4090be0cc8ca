"""The pandas engine: count tables of a frame in memory (see :mod:`broker.engines.base`).

Columns are coded once (:mod:`broker.engines.codes`) and every count table is read off the codes;
:class:`People` says who the rows are. Fastest for data that fits in memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from broker.columns.roles import require_columns
from broker.engines.base import (
    IDENTICAL_ROWS,
    PERSON_KEY,
    WORST_CASE,
    CountTable,
    RecentTables,
    RecodePlan,
)
from broker.engines.codes import (
    Grouping,
    combine,
    combined_counts,
    encode_columns,
    map_in_threads,
)
from broker.engines.people import RareTuples, components, key_codes, rare_tuples

if TYPE_CHECKING:
    from broker.datasets import Dataset

# Odd 64-bit multipliers of the row hash (digits of pi and e; any large odd numbers would do).
_ROW_HASH_MULTIPLIERS = (
    0x243F6A8885A308D3,
    0x13198A2E03707345,
    0xA4093822299F31D1,
    0x2B7E151628AED2A7,
)
# Up to this many (column set, row) cells, a search counts its sets in one sorted matrix.
_SMALL_SEARCH_CELLS = 1 << 21
# Multi-column groupings kept for reuse as prefixes (each holds one code per row).
_RECENT_GROUPINGS = 2


class People:
    """Who each row of a table as sent may be: identical rows are one person, and so are the
    rows of a rare quasi-identifier tuple (the worst case, once the engine is told the
    quasi-identifiers: :mod:`broker.engines.people`) and rows that share a declared person key
    (folded: ``P001``, ``p001 `` and ``P0O1`` are one key). A key only merges: a person is every
    row joined to another by any of these (their connected components), so a member that
    invents one key per row, or look-alike keys, still sends one person.

    Fixed on the table as sent and looked up by row label in its anonymized versions, where
    generalization makes different people's rows identical on purpose.
    """

    def __init__(
        self,
        rows: np.ndarray,
        key: np.ndarray | None,
        by: str,
        worst: np.ndarray | None = None,
        rare: RareTuples | None = None,
    ):
        self.rows = rows  # identical-row codes, one per row of the table as sent, in order
        self.key = key  # folded person-key codes, when a key was declared
        self.by = by  # PERSON_KEY, IDENTICAL_ROWS or WORST_CASE
        # identical rows, each rare tuple's rows and (with a key) a key's rows as one code each
        self.worst = worst
        self.rare = rare  # the rare tuples behind ``worst``
        self._own: list[Grouping] | None = None  # the table as sent's rows, grouped

    @classmethod
    def of(cls, frame: pd.DataFrame, key: pd.Series | None = None) -> People:
        """Who the rows of ``frame`` (the table as sent) are, with ``key`` when declared."""
        return PandasEngine(frame, person_key=key).people

    def labellings(self) -> tuple[np.ndarray, ...]:
        """The person codes of each signal, one per row of the table as sent (the worst case
        alone when assumed: it joins whatever identical rows join)."""
        if self.worst is not None:
            return (self.worst,)
        return tuple(codes for codes in (self.rows, self.key) if codes is not None)

    def groupings(self, table: pd.DataFrame | None = None) -> list[Grouping]:
        """The rows of ``table`` (labelled as in the table as sent; None: that table itself,
        row by row, grouped once) grouped by each signal."""
        if table is None:
            if self._own is None:
                self._own = [_grouping_of(codes) for codes in self.labellings()]
            return self._own
        positions = table.index.to_numpy()
        return [_grouping_of(codes[positions]) for codes in self.labellings()]


def _grouping_of(codes: np.ndarray) -> Grouping:
    compact, uniques = pd.factorize(codes)
    return Grouping(compact.astype(np.int64), len(uniques))


class PandasEngine:
    """A frame in memory, its columns factorized once so that every count table shares the work.

    Who the rows are: for the table as sent, identical rows and, with ``person_key`` (one value
    per row), that key (:attr:`people`, computed from this engine's own coding); for an anonymized
    version, pass ``people``, the one of the table as sent.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        columns: Sequence[str] | None = None,
        people: People | None = None,
        person_key: pd.Series | None = None,
    ):
        columns = list(frame.columns if columns is None else columns)
        require_columns(frame.columns, columns)
        self.frame = frame
        self._names = columns
        self._rows = len(frame)
        self._people = people
        self._person_key = person_key
        self._rare: RareTuples | None = None  # told by assume_worst
        self._columns: dict[str, Grouping] = {}  # encoded when first counted
        self._dictionaries: dict[str, pd.Series] = {}  # a report asks for each several times
        self._recent: OrderedDict[tuple[str, ...], Grouping] = OrderedDict()
        self._recent_tables = RecentTables(_RECENT_GROUPINGS)

    @property
    def columns(self) -> list[str]:
        return list(self._names)

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def people_counted_by(self) -> str:
        return self.people.by

    @cached_property
    def people(self) -> People:
        """Who the rows are (see the class docstring)."""
        if self._people is not None:
            return self._people
        rows = self.rows_grouping().codes
        worst = None
        if self._rare is not None and not self._rare.empty:
            grouping = self.grouping(self._rare.columns)
            one = grouping.representatives()
            at = CountTable.of(
                self._rare.columns,
                [self._columns[name].codes[one] for name in self._rare.columns],
                grouping.counts(),
            )
            group = self._rare.group_of(at)[grouping.codes]
            worst = np.where(group >= 0, int(rows.max()) + 1 + group, rows)
        if self._person_key is not None:
            # The key only merges: its people are the rows sharing a (folded) key, identical
            # rows or a rare tuple's rows, joined (broker.engines.people).
            key = key_codes(self._person_key)
            together = components(rows if worst is None else worst, key)
            return People(rows, key, PERSON_KEY, together, self._rare)
        if worst is None:
            return People(rows, None, IDENTICAL_ROWS)
        return People(rows, None, WORST_CASE, worst, self._rare)

    def assume_worst(self, quasi_identifiers: Sequence[str]) -> None:
        if self._people is not None:
            return
        self._rare = rare_tuples(self, quasi_identifiers)
        self.__dict__.pop("people", None)  # counted again, with the worst case
        self._recent_tables.clear()

    @property
    def rare(self) -> RareTuples | None:
        return self._rare if self._people is None else self._people.rare

    def dictionary(self, column: str) -> pd.Series:
        found = self._dictionaries.get(column)
        if found is None:
            grouping = self.grouping([column])
            if grouping.uniques is not None:
                found = pd.Series(grouping.uniques, copy=False)
            else:
                found = self.frame[column].iloc[grouping.representatives()].reset_index(drop=True)
            self._dictionaries[column] = found
        return found

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        self._encode([name for columns in column_sets for name in columns])  # in threads, at once
        return [self._count_table(tuple(columns), people) for columns in column_sets]

    def _count_table(self, columns: tuple[str, ...], people: bool) -> CountTable:
        """One count table, kept among the recent ones: a report asks for the quasi-identifiers'
        classes for k and again for each sensitive attribute."""
        found = self._recent_tables.get(columns, people)
        if found is None:
            self._encode(columns)
            # People first: hashing whole rows is the report's largest transient, and is best
            # done before this grouping is held too.
            persons = self._person_groupings() if people else None
            grouping, prefix = self._grouping_reusing(columns)
            found = CountTable(
                columns,
                grouping.counts(),
                None if persons is None else people_per_class(grouping, persons),
                self._codes_of(columns, grouping),
                prefix and (prefix[0], _prefix_ids(prefix[1], grouping)),
            )
            self._recent_tables.keep(found)
        return found

    def _codes_of(self, columns: tuple[str, ...], grouping: Grouping) -> dict:
        if len(columns) == 1:  # a column's own codes number its values
            return {columns[0]: np.arange(grouping.categories)}
        return {name: _at_representatives(self._columns[name], grouping) for name in columns}

    def tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Only the rows of each tuple, for searches over many column sets.

        Sets sharing all but their last column (``itertools.combinations`` yields them one after
        the other) share the grouping of that prefix, so each costs one mixing and one count over
        the rows; the prefixes are spread over the available cores.
        """
        self._encode([name for columns in column_sets for name in columns])
        if column_sets and self._rows * len(column_sets) <= _SMALL_SEARCH_CELLS:
            return self._small_tuple_sizes(column_sets)
        by_prefix: dict[tuple[str, ...], list[int]] = {}
        for position, columns in enumerate(column_sets):
            by_prefix.setdefault(tuple(columns[:-1]), []).append(position)

        def measure(prefix: tuple[str, ...]) -> list[tuple[int, np.ndarray]]:
            positions = by_prefix[prefix]
            if not prefix:
                return [(i, self.grouping(column_sets[i]).counts()) for i in positions]
            shared = self.grouping(prefix)
            return [
                (i, combined_counts(shared, self.grouping(column_sets[i][-1:]))) for i in positions
            ]

        work = self._rows * (len(column_sets) + len(by_prefix))
        sizes: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(column_sets)
        for part in map_in_threads(measure, list(by_prefix), work):
            for position, counts in part:
                sizes[position] = counts
        return sizes

    def _small_tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The same sizes for a small table, with array operations over all the sets at once
        instead of a hash table per set: one key per (set, row) mixed from the column codes,
        one sort of the whole matrix, and the runs of equal keys in each row of it."""
        keys = np.zeros((len(column_sets), self._rows), dtype=np.int64)
        width = np.ones(len(column_sets), dtype=np.int64)
        for depth in range(max(len(columns) for columns in column_sets)):
            for position, columns in enumerate(column_sets):
                if depth < len(columns):
                    grouping = self._columns[columns[depth]]
                    keys[position] = keys[position] * grouping.categories + grouping.codes
                    width[position] *= grouping.categories
        if (width > np.iinfo(np.int64).max // 2).any():  # could have wrapped: the exact way
            return [self.grouping(columns).counts() for columns in column_sets]
        keys.sort(axis=1)
        starts = np.ones_like(keys, dtype=bool)
        starts[:, 1:] = keys[:, 1:] != keys[:, :-1]
        sizes = []
        for row in starts:
            first = np.flatnonzero(row)
            sizes.append(np.diff(np.append(first, self._rows)))
        return sizes

    def duplicate_rows(self) -> int:
        return self._rows - self.rows_grouping().categories

    def head(self, columns: Sequence[str], rows: int) -> pd.DataFrame:
        require_columns(self._names, columns)
        return self.frame[list(columns)].head(rows)

    def recode(self, plan: RecodePlan) -> PandasEngine:
        return PandasEngine(recoded(self.frame, plan), people=self.people)  # who the rows are stays

    def write(self, like: Dataset, shuffle: bool = False) -> bytes:
        """The rows written in ``like``'s format (and delimiter); ``shuffle`` puts them in a
        fresh random order, so that two releases of one table cannot be lined up by position."""
        # Imported here: the reader checks column names with broker.metrics, which counts with
        # this engine, so a module-level import would be circular.
        from broker.datasets import write_dataset

        frame = self.frame
        if shuffle:
            frame = frame.sample(frac=1, random_state=np.random.default_rng())
        return write_dataset(frame.reset_index(drop=True), like)

    def _person_groupings(self) -> list[Grouping]:
        if self._people is not None:  # an anonymized version: rows found by label
            return self._people.groupings(self.frame)
        if self._person_key is None and (self._rare is None or self._rare.empty):
            return [self.rows_grouping()]
        return self.people.groupings()  # the table as sent, whatever its row labels

    def rows_grouping(self) -> Grouping:
        """Rows grouped by their whole content (identical rows share a code), computed once.

        Mixing a million near-unique tuples column by column costs a hash table per column, so
        the rows' codes are hashed into one 64-bit number per row instead (a polynomial hash with
        wrap-around), and those are factorized once: 15 columns of 1M rows take about 60 ms
        instead of 600. Two different rows with the same hash (odds about N^2 / 2^65, 3e-8 for a
        million rows) would be counted as one person: fewer people, never more, so a collision
        can only make a decision stricter.
        """
        return self._rows_grouping

    @cached_property
    def _rows_grouping(self) -> Grouping:
        self._encode(list(self.frame.columns))  # every column takes part, also those not named
        hashed = np.zeros(self._rows, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for position, name in enumerate(self.frame.columns):
                multiplier = np.uint64(_ROW_HASH_MULTIPLIERS[position % len(_ROW_HASH_MULTIPLIERS)])
                # In place: a million-row report holds every column's codes already.
                np.multiply(hashed, multiplier, out=hashed)
                np.add(hashed, self._columns[name].codes.view(np.uint64), out=hashed)
                np.add(hashed, np.uint64(1), out=hashed)
        codes, uniques = pd.factorize(hashed)
        return Grouping(codes.astype(np.int64, copy=False), len(uniques))

    def grouping(self, columns: Sequence[str]) -> Grouping:
        """The grouping of rows by one column or by the tuple of several (none: one group)."""
        if not columns:
            return Grouping(np.zeros(self._rows, dtype=np.int64), 1)
        self._encode(columns)
        return combine([self._columns[name] for name in columns])

    def _grouping_reusing(
        self, columns: tuple[str, ...]
    ) -> tuple[Grouping, tuple[tuple[str, ...], Grouping] | None]:
        """:meth:`grouping`, built on the longest recently counted prefix (a report counts the
        quasi-identifiers' classes, then the (class, sensitive value) pairs), and that prefix."""
        found = self._recent.get(columns)
        prefix = None
        if found is None:
            prefixes = range(len(columns) - 1, 1, -1)
            cut = next((n for n in prefixes if columns[:n] in self._recent), 0)
            if cut:
                prefix = (columns[:cut], self._recent[columns[:cut]])
                rest = [self._columns[name] for name in columns[cut:]]
                found = combine([prefix[1], *rest])
            else:
                found = self.grouping(columns)
        self._recent[columns] = found
        self._recent.move_to_end(columns)
        while len(self._recent) > _RECENT_GROUPINGS:
            self._recent.popitem(last=False)
        return found, prefix

    def _encode(self, names: Sequence[str]) -> None:
        """Encode the columns not encoded yet, in parallel threads when worth it."""
        missing = list(dict.fromkeys(name for name in names if name not in self._columns))
        if missing:
            require_columns(self.frame.columns, missing)
            encoded = encode_columns([self.frame[name] for name in missing])
            self._columns.update(zip(missing, encoded, strict=True))


def recoded(frame: pd.DataFrame, plan: RecodePlan) -> pd.DataFrame:
    """``frame`` with ``plan`` applied: its columns dropped, its values relabelled (row labels
    kept, so the output lines up with the input)."""
    frame = frame.drop(columns=[c for c in plan.drop if c in frame.columns])
    for column, labels in plan.labels.items():
        if column in frame.columns:
            values = frame[column]
            mapped = values.map(labels)
            frame = frame.assign(**{column: mapped.where(values.map(labels.__contains__), values)})
    return frame


def _at_representatives(values: Grouping, grouping: Grouping):
    """A function giving ``values``' code at one row of each of ``grouping``'s categories:
    computed only if a measure asks (k needs only the sizes)."""
    return lambda: values.codes[grouping.representatives()]


def _prefix_ids(prefix: Grouping, grouping: Grouping):
    """A function giving each of ``grouping``'s categories its ``prefix`` category, and how
    many there are."""
    return lambda: (prefix.codes[grouping.representatives()], prefix.categories)


def people_per_class(classes: Grouping, people: Sequence[Grouping]) -> np.ndarray:
    """The number of distinct people in each class: for each labelling of the rows by person,
    the people of each class, and the fewest any labelling sees."""
    counts = [_people_per_class(classes, one) for one in people]
    return np.minimum.reduce(counts) if counts else classes.counts()


def _people_per_class(classes: Grouping, people: Grouping) -> np.ndarray:
    # Usually each person sits in one class (always when people are identical rows, which agree
    # on every attribute): then counting the people of each class needs no sort. The others
    # (a person key's visits, a rare tuple's rows with several diagnoses) are usually few: only
    # their rows are sorted.
    class_of_person = np.empty(people.categories, dtype=np.int64)
    class_of_person[people.codes] = classes.codes
    elsewhere = class_of_person[people.codes] != classes.codes
    if not elsewhere.any():
        return np.bincount(class_of_person, minlength=classes.categories)
    spanning = np.zeros(people.categories, dtype=bool)
    spanning[people.codes[elsewhere]] = True
    counted = np.bincount(class_of_person[~spanning], minlength=classes.categories)
    rows = spanning[people.codes]
    pairs = np.unique(classes.codes[rows] * people.categories + people.codes[rows])
    return counted + np.bincount(pairs // people.categories, minlength=classes.categories)

"""Who the rows may be when no person key says: the worst case for rows of a rare tuple.

Rows are not people. Identical rows are one person (nothing tells them apart), and a declared
person key says who the others are. Without a key, rows that agree on every quasi-identifier
and differ elsewhere (another diagnosis, another visit number) may be one person sent several
times or several people who share those values: the broker cannot know. When the values are
common (an age band and a sex), several people is the likely reading and the count of today
stands. When they are *rare*, the rows are most likely one person's, and a recipient who knows
that person's values finds every one of those rows: so the broker assumes the worst.

Definitions (the quasi-identifiers as declared and inferred for the transfer):

- Two rows have the same *tuple* when their quasi-identifier values agree *by meaning*: dates,
  postcodes and ages as :mod:`broker.columns.precision` reads them (``12/04/1983`` is
  ``1983-04-12``, ``75 011`` is ``75011``, ``93 ans`` is ``93``), other values folded
  (:func:`broker.columns.precision.fold`: ``F`` and ``f ``, ``34`` and ``34.0`` agree).
- A tuple is *rare* when it holds a value at identifying precision as HIPAA's Safe Harbor draws
  it (:data:`broker.columns.precision.SAFE_HARBOR`: a date finer than its year, a postcode of more
  than three characters, an age over 89; an unreadable value in such a column too). Such values are
  what Safe Harbor refuses to release because few people share them (Sweeney 2000 found 87 % of
  the United States population unique on a full birth date, a 5-digit ZIP code and sex); the
  broker has no census to tell how many people share any other tuple, and a tuple of coarse
  values (an age band, a sex, a region) is taken to be shared.
- Two rare tuples are *nudged* apart when they hold a date to the day and agree on every other
  value but that date, up to :data:`NUDGE_DAYS` days apart, and postcodes that differ in their
  last character: one person's copies written a little differently so that no tuple repeats
  (a birth date a day later, a postcode's last digit changed) are still one person's, since
  the release generalizes them into one class. Tuples join transitively (runs of close days).
- All the rows of a rare tuple, and of the rare tuples nudged apart from it, held by two rows
  or more, are one person: its *worst case*. A class of released rows then counts one person
  per rare tuple among its rows, plus its other rows' people as before (identical rows as
  one); k counts those people, and l counts no more distinct values than the class has people
  (the values of one person's rows are all that person's: a recipient who knows the class is
  one person learns them all).

What does not change: a table where no rare tuple repeats is counted as before (a table of age
bands, sexes and regions, however many rows repeat each combination; a table of unique rows).
What does: rows that legitimately repeat a rare tuple, the visits of one patient given by birth
date and postcode, count as that one patient, which they are; and distinct people who happen
to share a rare tuple (twins born in one postcode) count as one, which they may not be.
A member that knows who its rows are says so with a person key (``person_key``), and the key
only merges: a row's person is every row joined to it by a shared key (folded:
:func:`key_codes`), identical content or the worst case (:func:`components`). A key cannot
split what the worst case joins (a fresh key on each copy, look-alike keys), so a lying key
gains nothing; an honest key still joins one person's visits under different values.

Every engine computes the same thing: the pandas engine labels each row with its possible person
and counts distinct labels per class (:class:`broker.engines.pandas.People`), the Dask engine
does the same on its workers, and the DuckDB engine and recoded tables read it off their count
tables (:meth:`RareTuples.counted`): the people of a tuple of a rare tuple's rows become one, and
:attr:`~broker.engines.base.CountTable.person_groups` keeps each such person counted once when
tuples merge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from broker.columns.precision import (
    DATE,
    DATE_LEVELS,
    DAY,
    POSTCODE,
    SAFE_HARBOR,
    column_kind,
    fold,
    read_column,
    sample_of,
)
from broker.engines.base import CountTable, Engine, Grouped, mixed_radix_strides, tuple_keys


@dataclass(frozen=True, eq=False)
class RareTuples:
    """The tuples of ``columns`` (the quasi-identifiers) whose rows are one person at worst.

    ``codes``: the rare tuples as written, one array a column (codes in the engine's
    dictionaries); ``groups``: each one's possible person (writings of one tuple share one);
    ``people``: how many possible persons; ``rows``: the rows they hold.
    """

    columns: tuple[str, ...]
    codes: tuple[np.ndarray, ...]
    groups: np.ndarray
    people: int
    rows: int

    @property
    def empty(self) -> bool:
        return self.groups.size == 0

    def group_of(self, table: CountTable) -> np.ndarray:
        """For each tuple of ``table`` (whose columns include the quasi-identifiers), its
        possible person, or -1 when its rows are counted as usual."""
        if self.empty:
            return np.full(table.size, -1, dtype=np.int64)
        found = _positions(self.codes, [table.codes(c) for c in self.columns])
        return np.where(found >= 0, self.groups[np.maximum(found, 0)], -1).astype(np.int64)

    def counted(self, table: CountTable) -> CountTable:
        """``table``, counted with people, with the worst case assumed: each tuple of a rare
        tuple's rows is one person (and says which)."""
        if self.empty or table.people is None:
            return table
        missing = [c for c in self.columns if c not in table.columns]
        if missing:
            raise ValueError(f"the worst case counts tables holding the columns {missing}")
        groups = self.group_of(table)
        people = np.where(groups >= 0, 1, table.people).astype(np.int64)
        return replace(table, people=people, person_groups=groups)


def _positions(known: Sequence[np.ndarray], asked: Sequence[np.ndarray]) -> np.ndarray:
    """For each tuple of ``asked`` (one code array a column), its position among the distinct
    tuples ``known``, or -1. One int64 key a tuple (mixed radix), found by a binary search in
    the sorted known keys, when the codes fit in one; else a MultiIndex, as many times slower
    and larger as a count table of a million tuples makes it.

    >>> _positions([np.array([2, 0]), np.array([1, 1])], [np.array([0, 2, 2]), np.array([1, 0, 1])])
    array([ 1, -1,  0])
    """
    if not len(known[0]):
        return np.full(len(asked[0]), -1, dtype=np.int64)
    widths = [
        max(int(k.max(initial=0)), int(a.max(initial=0))) + 1
        for k, a in zip(known, asked, strict=True)
    ]
    negative = any(int(c.min(initial=0)) < 0 for c in (*known, *asked))
    if negative or math.prod(widths) >= 2**62:
        index = pd.MultiIndex.from_arrays(list(known))
        return index.get_indexer(pd.MultiIndex.from_arrays(list(asked))).astype(np.int64)
    strides = mixed_radix_strides(widths)

    def keys(codes: Sequence[np.ndarray]) -> np.ndarray:
        packed = np.zeros(len(codes[0]), dtype=np.int64)
        for column, stride in zip(codes, strides, strict=True):
            packed += column.astype(np.int64) * stride
        return packed

    known_keys = keys(known)
    order = np.argsort(known_keys, kind="stable")
    ordered = known_keys[order]
    # The known tuples are few: a tuple holding a code none of them holds in some column is
    # none of them, so only the others are keyed and searched.
    candidates = None
    for column, width, held in zip(asked, widths, known, strict=True):
        within = np.zeros(width, dtype=bool)
        within[held] = True
        if candidates is None:
            candidates = np.flatnonzero(within[column])
        else:
            candidates = candidates[within[column[candidates]]]
    wanted = keys([column[candidates] for column in asked])
    at = np.minimum(np.searchsorted(ordered, wanted), ordered.size - 1)
    found = np.full(len(asked[0]), -1, dtype=np.int64)
    found[candidates] = np.where(ordered[at] == wanted, order[at], -1)
    return found


def counted_with(engine: Engine, rare: RareTuples | None, column_sets, tables) -> list:
    """The engine's ``tables`` of ``column_sets`` (counted with people as usual) with the
    worst case assumed; a set lacking a quasi-identifier is counted with them, then projected."""
    if rare is None or rare.empty:
        return list(tables)
    found = []
    for columns, table in zip(column_sets, tables, strict=True):
        columns = list(columns)
        if set(rare.columns) <= set(columns):
            found.append(rare.counted(table))
            continue
        wider = [*columns, *(c for c in rare.columns if c not in columns)]
        [whole] = engine.counts([wider], people=True)
        found.append(whole.projected(columns) if columns else _one_class(whole))
    return found


def _one_class(table: CountTable) -> CountTable:
    """The table of no column: one tuple holding every row."""
    grouped = Grouped(np.zeros(1, dtype=np.int64), np.zeros(table.size, dtype=np.intp), True)
    people, _groups = table._people_of(grouped)
    return CountTable((), np.array([int(table.rows.sum())]), people)


# One person's copies written a little apart ("nudged") are still one person at worst: dates
# up to this many days apart, postcodes that differ in their last character.
NUDGE_DAYS = 3
_NO_DAY = np.iinfo(np.int64).min


def rare_tuples(
    engine: Engine, quasi_identifiers: Sequence[str], table: CountTable | None = None
) -> RareTuples:
    """The rare tuples of ``quasi_identifiers`` whose rows may be one person (see the module
    docstring), from the engine's count table of them and their dictionaries: the rows of one
    tuple read by meaning, and of tuples *nudged* apart (:func:`_nudges`), held by two rows or
    more.

    Only the tuples that could be in such a person are grouped: one holds, in every column,
    the meaning of some identifying tuple there (a person joins tuples of one meaning, and
    nudges join identifying tuples only), which leaves out most of a table of coarse values
    before its million tuples are sorted. ``table``: the engine's count table of
    ``quasi_identifiers`` (its rows are read, not its people), when the caller has it."""
    columns = tuple(quasi_identifiers)
    if not columns:
        return RareTuples((), (), np.zeros(0, dtype=np.int64), 0, 0)
    if table is None:
        [table] = engine.counts([list(columns)])
    read, identifying = [], np.zeros(table.size, dtype=bool)
    days = np.full(table.size, _NO_DAY, dtype=np.int64)  # the first day column's day, if told
    day_column = None
    postcodes = []  # (position among the columns, each code's postcode when identifying)
    for position, name in enumerate(columns):
        dictionary = engine.dictionary(name)
        kind = column_kind(name, sample_of(dictionary))
        codes = table.codes(name)
        if kind is None:
            spelled = fold(dictionary)
        else:
            reading = read_column(kind, dictionary)
            unread = np.array([c is None for c in reading.canonical], dtype=bool)
            spelled = np.array([f"{kind}:{c}" for c in reading.canonical], dtype=object)
            spelled[unread] = fold(dictionary[unread])
            exceeding = reading.exceeding(SAFE_HARBOR)
            identifying |= exceeding[codes]
            if kind == DATE and day_column is None:
                found_days = _day_numbers(reading)[codes]
                if (found_days != _NO_DAY).any():
                    days, day_column = found_days, position
            elif kind == POSTCODE:
                told = np.where(exceeding & ~reading.unreadable, reading.canonical, None)
                postcodes.append((position, told))
        found, uniques = pd.factorize(spelled)
        read.append((codes, found.astype(np.int64), len(uniques)))
    kept = _sharing_meanings(read, identifying)
    meanings = [(meaning[codes[kept]], width) for codes, meaning, width in read]
    identifying = identifying[kept]
    told = [(position, by_code[read[position][0][kept]]) for position, by_code in postcodes]
    tuples = Grouped.of([m for m, _ in meanings], [w for _, w in meanings])
    nudged = _nudges(meanings, day_column, days[kept], told, identifying)
    person = components(tuples.inverse, *nudged)
    groups, first = pd.factorize(person)
    rows = np.bincount(groups, weights=table.rows[kept], minlength=len(first)).astype(np.int64)
    rare = (np.bincount(groups, weights=identifying, minlength=len(first)) > 0) & (rows >= 2)
    chosen = rare[groups]
    compact, _ = pd.factorize(groups[chosen])
    return RareTuples(
        columns,
        tuple(table.codes(name)[kept[chosen]] for name in columns),
        compact.astype(np.int64),
        int(rare.sum()),
        int(rows[rare].sum()),
    )


def _sharing_meanings(read, identifying: np.ndarray) -> np.ndarray:
    """The positions, ascending, of the tuples holding in every column a meaning some
    identifying tuple holds there (``read``: each column's codes by tuple, meaning by code and
    number of meanings); the columns whose identifying tuples hold fewest meanings first."""
    held = []
    for codes, meaning, width in read:
        within = np.zeros(width, dtype=bool)
        within[meaning[codes[identifying]]] = True
        held.append((int(within.sum()), within, codes, meaning))
    kept = np.arange(identifying.size)
    for _, within, codes, meaning in sorted(held, key=lambda found: found[0]):
        kept = kept[within[meaning[codes[kept]]]]
    return kept


def _day_numbers(reading) -> np.ndarray:
    """Each value's day (days since 1970-01-01) when it is a date to the day, else
    :data:`_NO_DAY`."""
    day = np.full(len(reading.canonical), _NO_DAY, dtype=np.int64)
    told = np.flatnonzero(reading.precision == DATE_LEVELS.index(DAY))
    if told.size:
        written = [reading.canonical[i] for i in told.tolist()]
        day[told] = np.array(written, dtype="datetime64[D]").astype(np.int64)
    return day


def _nudges(meanings, day_column, days, postcodes, identifying) -> list[np.ndarray]:
    """A labelling of the tuples under which a label joins tuples *nudged* apart: identifying
    tuples holding a date to the day (in ``day_column``, the first such column) that agree on
    every other value but that date, up to :data:`NUDGE_DAYS` days apart, and postcodes that
    differ in their last character. Tuples are sorted by day within their other values (each
    postcode without its last character), and each run of days no more than ``NUDGE_DAYS``
    apart is one label: close days join (no grid whose edges a sender could straddle), along
    one axis within one block, so a dense table joins short runs, never the whole table."""
    eligible = identifying & (days != _NO_DAY)
    if day_column is None or not eligible.any():
        return []
    block = list(meanings)
    for position, told in postcodes:
        block[position] = _without_last(told, meanings[position])
    others = [block[i] for i in range(len(block)) if i != day_column]
    if others:
        key, _ = tuple_keys([c for c, _ in others], [w for _, w in others])
        key = pd.factorize(key)[0].astype(np.int64)
    else:
        key = np.zeros(days.size, dtype=np.int64)
    return [_runs(np.where(eligible, key, -1 - np.arange(days.size)), days)]


def _without_last(told: np.ndarray, meaning: tuple[np.ndarray, int]):
    """Codes of each tuple's postcode without its last character (a tuple whose postcode is
    not identifying keeps its meaning, apart from every shortened one)."""
    spelled = np.array(
        [
            f"m:{c[:-1]}" if c is not None else f"v:{v}"
            for c, v in zip(told.tolist(), meaning[0].tolist(), strict=True)
        ],
        dtype=object,
    )
    codes, uniques = pd.factorize(spelled)
    return codes.astype(np.int64), len(uniques)


def _runs(key: np.ndarray, days: np.ndarray) -> np.ndarray:
    """A label for each element: those of one ``key`` whose days, in order, are no more than
    :data:`NUDGE_DAYS` apart from the next share it (a negative key is alone)."""
    order = np.lexsort((days, key))
    sorted_key, sorted_day = key[order], days[order]
    start = np.ones(key.size, dtype=bool)
    start[1:] = (sorted_key[1:] != sorted_key[:-1]) | (
        sorted_day[1:] - sorted_day[:-1] > NUDGE_DAYS
    )
    start |= sorted_key < 0
    labels = np.empty(key.size, dtype=np.int64)
    labels[order] = np.cumsum(start)
    return labels


# --- a declared person key: it may merge, never split -----------------------------------------


def key_codes(keys: pd.Series) -> np.ndarray:
    """One code per declared person key, the keys folded first
    (:func:`broker.columns.precision.fold`:
    NFKC, case, blanks, invisible characters and look-alike characters such as ``0`` and ``O``
    removed or joined; ``P001``, ``P001 ``, ``p001`` and ``P0O1`` share one code; every missing
    key one code). Coarser than equality on purpose: keys it joins are one person at worst.

    >>> key_codes(pd.Series(["P001", "P001 ", "p001", "P0O1", "P002"])).tolist()
    [0, 0, 0, 0, 1]
    """
    keys = pd.Series(keys, dtype=object).reset_index(drop=True)
    raw, distinct = pd.factorize(keys, use_na_sentinel=False)
    folded, _ = pd.factorize(fold(pd.Series(distinct, dtype=object)))
    return folded.astype(np.int64)[raw]


def components(*labellings: np.ndarray) -> np.ndarray:
    """Each row's person when rows sharing a label in any of ``labellings`` (one integer label
    a row each) are one person: the connected components of that relation, numbered by the
    smallest row of each (a row-aligned array).

    Union by hooking each labelling's groups to their smallest member and pointer jumping,
    vectorized: a few passes over the rows, even for long chains.

    >>> components(np.array([0, 0, 1, 2]), np.array([5, 6, 6, 7])).tolist()
    [0, 0, 0, 3]
    """
    size = labellings[0].size if labellings else 0
    parent = np.arange(size, dtype=np.int64)
    groups = []
    for labels in labellings:
        codes, uniques = pd.factorize(np.asarray(labels))
        groups.append((codes.astype(np.int64), len(uniques)))
    while True:
        changed = False
        for codes, width in groups:
            lowest = np.full(width, size, dtype=np.int64)
            np.minimum.at(lowest, codes, parent)
            target = lowest[codes]
            # Hook each row's root to the smallest root its group reaches.
            roots = parent
            moved = target < parent[roots]
            if moved.any():
                np.minimum.at(parent, roots[moved], target[moved])
                changed = True
            while True:  # pointer jumping: every row points at its root
                jumped = parent[parent]
                if np.array_equal(jumped, parent):
                    break
                parent = jumped
        if not changed:
            return parent

"""Who one person is in an aggregate release, and keys taken from the data that single one out.

Every bound of a release is a bound on one person's rows, so the release needs a partition of
the rows into *possible persons* that is never finer than the true one (a person split in two
would count twice). :func:`people_of` draws it from what the table says:

- the **person key**, when one is declared: its value names each row's person, its spellings
  folded (case, blanks, invisible characters, compatibility forms, ``7`` and ``7.0``:
  :func:`broker.columns.precision.fold`), so that ``P-X`` and `` p-x`` are one person;
- without one, **each row** is its own person (the sender's word, as before);
- and, in both cases, the **worst case of a rare tuple** (:mod:`broker.engines.people`): the
  rows that share a quasi-identifier tuple at identifying precision (a full birth date, a
  five-digit postcode, an age over 89) are one person whatever the key says, since they most
  likely are. A person key that gives each of one person's rows a fresh value (a lying key)
  then still bounds them, when their tuple is rare. Persons linked through a rare tuple are
  merged (connected components of person values and rare tuples), so that the partition stays
  coarser than both.

The quasi-identifiers are those the request declares and every column that holds dates,
postcodes or ages (:func:`broker.columns.precision.column_kind`): an aggregate release measures no
k, so nothing else names them.

**Keys that single out a person** (:func:`singled_out`). A ``count_by`` whose keys come from the
data releases the keys themselves. The detector refuses columns of identifiers, and the
threshold keeps a key that one person's *bounded* rows hold from showing, but a key held by
one person's many rows under several person values, or without a person key, passes any
threshold. Whatever the detector finds in its text, a key ``k`` whose rows (at least half the
threshold) are dominated by one person is refused: one view ``v`` of the rows (the possible
person; each quasi-identifier alone; the tuple of all of them; the tuple of the other columns
the release reads) has a value ``x`` that holds at least half of ``k``'s rows while at least
half of ``x``'s rows are ``k``'s and ``x`` is not held by most of the table. A person's rows
agree on their age, birth date, place and sex: their name, as a key, coincides with those
values; a category (a diagnosis, a ward, a village) spreads over them. The person view asks
the first half only. A category that coincides with one value of a quasi-identifier (an age
band that is one ward's) is refused too: counting it would count that value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from broker.columns.precision import column_kind, sample_of
from broker.engines.base import CountTable, Engine
from broker.engines.people import components, key_codes, rare_tuples

DOMINATES = 0.5  # a share of the key's rows and of the value's rows that makes them one
COMMON = 0.5  # a value held by more of the table than this names no one


@dataclass(frozen=True)
class People:
    """The table's count table over every column (the person key among them) and, for each of
    its tuples, the code of its possible person; ``single``: the tuples whose rows are a person
    each (no person key, no rare tuple)."""

    table: CountTable
    person: np.ndarray
    single: np.ndarray
    quasi_identifiers: tuple[str, ...]
    person_key: str | None


def quasi_identifiers_of(
    engine: Engine, declared: Sequence[str], person_key: str | None
) -> tuple[str, ...]:
    """The declared quasi-identifiers and every column of dates, postcodes or ages."""
    found = [c for c in declared if c in engine.columns and c != person_key]
    for name in engine.columns:
        if name in found or name == person_key:
            continue
        if column_kind(name, sample_of(engine.dictionary(name))) is not None:
            found.append(name)
    return tuple(found)


def people_of(
    engine: Engine,
    person_key: str | None,
    declared: Sequence[str] = (),
    read: Sequence[str] | None = None,
) -> People:
    """Each tuple of the count table of the person key, the quasi-identifiers and the columns
    the queries ``read`` (None: every column), with its possible person (see the module
    docstring). Only those columns: a near-unique column no query reads would make the table
    as large as the data."""
    quasi = quasi_identifiers_of(engine, declared, person_key)
    wanted = set(engine.columns if read is None else read) | set(quasi) | {person_key}
    [table] = engine.counts([[c for c in engine.columns if c in wanted]])
    groups = rare_tuples(engine, quasi).group_of(table) if quasi else np.full(table.size, -1)
    if person_key is None:
        base = np.arange(table.size, dtype=np.int64)
        single = groups < 0
    else:
        # spellings of one key are one person: "P-X", " p-x", "ｐ－ｘ", as every engine folds them
        folded = key_codes(pd.Series(engine.dictionary(person_key), dtype=object))
        base = folded[table.codes(person_key)]
        single = np.zeros(table.size, dtype=bool)
    # a row of no rare group is a group of its own: -1 - row never meets a real group
    alone = -1 - np.arange(table.size, dtype=np.int64)
    linked = components(base, np.where(groups >= 0, groups, alone))
    _, person = np.unique(linked, return_inverse=True)  # numbered 0, 1, ... as People needs
    return People(table, person.astype(np.int64).reshape(-1), single, quasi, person_key)


def bounded_table(
    people: People, columns: Sequence[str], contributions: int, rng: np.random.Generator
) -> CountTable:
    """The count table of ``columns`` with each possible person's rows cut to
    ``contributions`` (taken in a random order: what a person keeps depends on their rows
    only); the rows of a tuple whose rows are a person each are all kept."""
    table = people.table
    kept = table.rows.astype(np.int64).copy()
    grouped = ~people.single
    if grouped.any():
        kept[grouped] = bounded_rows(
            people.person[grouped], table.rows[grouped], contributions, rng
        )
    return _projected(table, columns, kept)


def _projected(table: CountTable, columns: Sequence[str], kept: np.ndarray) -> CountTable:
    ids, size = table.tuple_ids(list(columns))
    rows = np.bincount(ids, weights=kept, minlength=size).astype(np.int64)
    first = np.full(size, -1, dtype=np.int64)
    first[ids[::-1]] = np.arange(ids.size - 1, -1, -1)
    present = rows > 0  # a tuple whose every row was left out is not in the bounded table
    codes = [table.codes(c)[first[present]] for c in columns]
    return CountTable.of(tuple(columns), codes, rows[present])


def bounded_rows(
    person: np.ndarray, rows: np.ndarray, limit: int, rng: np.random.Generator
) -> np.ndarray:
    """How many of each tuple's ``rows`` to keep so that each person (``person``: each
    tuple's person code) keeps at most ``limit`` rows in all: a person's tuples are taken in a
    random order and filled until the limit. What one person keeps depends on their own rows
    only, so adding or removing a person changes the bounded table by at most ``limit`` rows.

    Examples
    --------
    >>> kept = bounded_rows(np.array([0, 0, 1]), np.array([150, 2, 1]), 3, np.random.default_rng(1))
    >>> int(kept[:2].sum()), int(kept[2])
    (3, 1)
    """
    order = np.lexsort((rng.random(person.size), person))
    who, count = person[order], rows[order].astype(np.int64)
    ends = np.cumsum(count)
    starts = ends - count
    first = np.r_[True, who[1:] != who[:-1]] if who.size else np.zeros(0, dtype=bool)
    person_start = np.maximum.accumulate(np.where(first, starts, 0))
    kept = np.empty_like(count)
    kept[order] = np.clip(limit - (starts - person_start), 0, count)
    return kept


def persons_per_value(people: People, column: str) -> np.ndarray:
    """For each value of ``column`` (in order of its codes' first tuples), how many possible
    persons hold it: a tuple whose rows are a person each counts its rows, the others their
    distinct persons."""
    table = people.table
    ids, size = table.tuple_ids([column])
    counted = np.bincount(ids[people.single], weights=table.rows[people.single], minlength=size)
    shared = ~people.single
    if shared.any():
        pairs = np.unique(np.stack([ids[shared], people.person[shared]]), axis=1)
        counted += np.bincount(pairs[0], minlength=size)
    return counted.astype(np.int64)


@dataclass(frozen=True)
class SingledOut:
    """A key that one person dominates: which view showed it, and the key's rows."""

    view: str
    rows: int


def singled_out(people: People, columns: Sequence[str], min_rows: int) -> SingledOut | None:
    """The first key of ``columns`` (of at least ``min_rows`` rows) that one person dominates
    in some view (see the module docstring), or None."""
    table = people.table
    keys, key_space = table.tuple_ids(list(columns))
    key_rows = np.bincount(keys, weights=table.rows, minlength=key_space)
    total = float(table.rows.sum())
    candidates = key_rows >= max(min_rows, 2)
    if not candidates.any():
        return None
    others = [c for c in table.columns if c not in columns and c != people.person_key]
    quasi = [c for c in people.quasi_identifiers if c not in columns]
    views: list[tuple[str, np.ndarray, bool]] = []
    views.append(("one person", np.where(people.single, -1, people.person), False))
    for name in quasi:
        views.append((f"the quasi-identifier {name!r}", table.tuple_ids([name])[0], True))
    if len(quasi) > 1:
        views.append(("the quasi-identifiers together", table.tuple_ids(quasi)[0], True))
    if others:
        views.append(("the other columns together", table.tuple_ids(others)[0], True))
    for label, values, both_ways in views:
        found = _dominated(keys, values, table.rows, key_rows, candidates, total, both_ways)
        if found is not None:
            return SingledOut(label, int(key_rows[found]))
    return None


def _dominated(keys, values, rows, key_rows, candidates, total, both_ways) -> int | None:
    """A candidate key id whose rows one value (>= 0) dominates, or None."""
    present = values >= 0
    if not present.any():
        return None
    keys, values, rows = keys[present], values[present], rows[present]
    _, values = np.unique(values, return_inverse=True)
    value_rows = np.bincount(values, weights=rows)
    pairs, inverse = np.unique(keys * (int(values.max()) + 1) + values, return_inverse=True)
    pair_rows = np.bincount(inverse, weights=rows)
    pair_key = pairs // (int(values.max()) + 1)
    pair_value = pairs % (int(values.max()) + 1)
    hit = candidates[pair_key] & (pair_rows >= DOMINATES * key_rows[pair_key])
    if both_ways:
        hit &= pair_rows >= DOMINATES * value_rows[pair_value]
        hit &= value_rows[pair_value] <= COMMON * total
    if not hit.any():
        return None
    return int(pair_key[np.argmax(hit)])

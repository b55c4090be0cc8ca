"""An aggregate release: each query's share of the budget, its mechanism, its answer.

:func:`plan` needs no data: it splits the release's epsilon (and delta) between the queries and
calibrates each mechanism through OpenDP, so a dry run or a refused release can say what each
answer would cost and how accurate it would be without touching the data. :func:`compute` then
answers the planned queries from an engine's count tables (any engine: in memory or out of
core) through :mod:`broker.privacy.mechanisms`.

The budget split. A query may state its own ``epsilon``; the queries that do not share what the
release's epsilon leaves, equally. A mean spends half of its share on the sum and half on the
count it divides by; a quantile query shares its epsilon between the quantiles it asks. Delta
goes, in equal shares, to the queries that need one (counts by columns whose keys come from the
data); a release without such a query spends no delta. Every share is an exact fraction, and the
shares add up exactly to the epsilon and delta recorded against the budget.

One person, bounded. With a person key (a column naming whose each row is), every query counts
at most ``contributions`` rows of each person (:func:`bounded_rows`, on the count table of
(person, the query's columns): which rows a person keeps depends on their rows alone), and is
calibrated to that many rows a person (Wilson et al. 2020). Without one, each row is taken to be
one person, or ``contributions`` rows to be at most one person's if the query says so: the
sender's statement, which the broker cannot check. With or without a key, the rows of a rare
quasi-identifier tuple are one person at worst (:mod:`broker.privacy.persons`).

Keys that leave. A key column taken from the data whose values look like identifiers, or whose
values nearly all belong to one person each, is refused before anything is decided
(:func:`check_key_columns`), and so is a key one person's rows dominate, whatever its text
(:func:`broker.privacy.persons.singled_out`); a released key that holds an identifier is
withheld, a function of the released keys alone (post-processing: the guarantee holds), and the
answer says how many were withheld.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from broker.columns.numbers import numbers_of
from broker.engines.base import CountTable, Engine, dictionary_values
from broker.metrics.content import SAMPLE, content_of, sample_distinct, split_content
from broker.metrics.report import sampled_codes
from broker.privacy import mechanisms
from broker.privacy.budget import show, split, stored, total
from broker.privacy.persons import (  # bounded_rows: where it was first
    People,
    bounded_table,
    people_of,
    persons_per_value,
    singled_out,
)
from broker.privacy.queries import (
    COUNT,
    COUNT_BY,
    MEAN,
    QUANTILE,
    SUM,
    Queries,
    Query,
    QueryError,
    check_columns,
    identifier_in_key,
    key_text,
)

CONFIDENCE = 1 - mechanisms.ALPHA
# A key column whose values belong to one person each, for at least this share of its values,
# identifies people: its keys would name them.
ONE_PERSON_SHARE = Fraction(9, 10)


class ReleaseError(QueryError):
    """The data cannot answer a query as asked (an empty table, a column that is not numeric)."""


@dataclass(frozen=True)
class Part:
    """One query with its share of the budget and its calibrated mechanisms (a mean has two,
    the sum and the count; a quantile query one per quantile)."""

    query: Query
    epsilon: Fraction
    delta: Fraction
    mechanisms: tuple[mechanisms.Calibrated, ...]

    @property
    def contributions(self) -> int:
        """The rows of one person the query reads, as calibrated."""
        return self.mechanisms[0].d_in


@dataclass(frozen=True)
class Plan:
    parts: tuple[Part, ...]
    epsilon: Fraction
    delta: Fraction

    def as_dict(self) -> list[dict[str, Any]]:
        """Each query's cost and accuracy, without any answer (what a dry run shows)."""
        return [_described(part) for part in self.parts]


def plan(
    queries: Queries, epsilon: Fraction, delta: Fraction = Fraction(0), contributions: int = 1
) -> Plan:
    """Split ``epsilon`` and ``delta`` between ``queries`` and calibrate each mechanism, each
    to the rows one person may hold in it (its ``contributions``, else ``contributions``).

    Examples
    --------
    >>> from broker.privacy.queries import parse_queries
    >>> text = '[{"type": "count"}, {"type": "count_by", "columns": ["sex"]}]'
    >>> planned = plan(parse_queries(text), Fraction(1), Fraction(1, 10**6))
    >>> [(p.query.type, p.epsilon, p.delta) for p in planned.parts]
    [('count', Fraction(1, 2), Fraction(0, 1)), ('count_by', Fraction(1, 2), Fraction(1, 1000000))]
    >>> planned.parts[0].mechanisms[0].scale
    2.0
    """
    items = queries.items
    stated = total(q.epsilon for q in items if q.epsilon is not None)
    unstated = [q for q in items if q.epsilon is None]
    if stated > epsilon:
        raise QueryError(
            f"the queries state epsilons that add up to {show(stated)}, above the release's "
            f"epsilon {show(epsilon)}"
        )
    if unstated and stated == epsilon:
        raise QueryError(
            f"the queries that state an epsilon use all of the release's {show(epsilon)}, "
            "leaving nothing for the others"
        )
    if not unstated and stated != epsilon:
        raise QueryError(
            f"every query states its epsilon and they add up to {show(stated)}, not the "
            f"release's epsilon {show(epsilon)}: make them agree"
        )
    shares = iter(split(epsilon - stated, len(unstated)) if unstated else [])
    needing_delta = [q for q in items if q.needs_delta]
    if needing_delta and delta <= 0:
        position = items.index(needing_delta[0]) + 1
        raise QueryError(
            f"query {position} (count_by {', '.join(needing_delta[0].columns)}) takes its keys "
            "from the data, which needs a delta above 0 (keys are released only above a "
            "threshold, and delta bounds the chance that a key held by one person shows): "
            "send delta, or declare each column's keys"
        )
    deltas = iter(split(delta, len(needing_delta)) if needing_delta else [])
    parts = []
    for position, query in enumerate(items, 1):
        share = query.epsilon if query.epsilon is not None else next(shares)
        query_delta = next(deltas) if query.needs_delta else Fraction(0)
        rows = query.contributions or contributions
        try:
            calibrated = _calibrate(query, share, query_delta, rows)
        except mechanisms.LibraryError as error:
            raise QueryError(
                f"query {position} ({query.type}) cannot be calibrated to epsilon {show(share)}"
                f" and delta {show(query_delta)}: {str(error).strip().splitlines()[-1][:200]}"
            ) from None
        parts.append(Part(query, share, query_delta, calibrated))
    spent_delta = delta if needing_delta else Fraction(0)
    return Plan(tuple(parts), epsilon, spent_delta)


def _calibrate(query: Query, epsilon: Fraction, delta: Fraction, rows: int) -> tuple:
    if query.type == COUNT:
        return (mechanisms.count(epsilon, rows),)
    if query.type == COUNT_BY:
        if query.keys is None:
            return (mechanisms.count_by_threshold(epsilon, delta, rows),)
        return (mechanisms.count_by_categories(cell_names(query), epsilon, rows),)
    if query.type == SUM:
        return (mechanisms.clamped_sum(query.bounds, epsilon, rows),)
    if query.type == MEAN:
        half = epsilon / 2
        return (mechanisms.clamped_sum(query.bounds, half, rows), mechanisms.count(half, rows))
    each = epsilon / len(query.quantiles)
    candidates = _candidates(query)
    return tuple(mechanisms.quantile(candidates, q, each, rows) for q in query.quantiles)


def _candidates(query: Query) -> list[float]:
    lower, upper = query.bounds
    return [float(v) for v in np.linspace(lower, upper, query.candidates)]


def cell_names(query: Query) -> list[str]:
    """Each declared cell (one key per column) as the one text OpenDP's categories hold."""
    return [json.dumps(list(cell)) for cell in itertools.product(*query.keys)]


def validate(
    engine: Engine, planned: Plan, person: str | None = None, quasi: Sequence[str] = ()
) -> People:
    """What the data must be for the queries to be answered (rows, the columns named, numbers
    where a sum, mean or quantile reads them, key columns that do not identify people, keys
    that do not single one out, the person key read by no query): checked before any decision,
    so that a mistake is an error that spends nothing, never a refusal or a release. Returns
    who the possible persons are (:func:`broker.privacy.persons.people_of`; ``quasi``: the
    declared quasi-identifiers)."""
    if engine.rows == 0:
        raise ReleaseError("the dataset has no rows: there is nothing to release")
    check_columns(Queries(tuple(p.query for p in planned.parts)), engine.columns)
    people = None
    read = Queries(tuple(p.query for p in planned.parts)).columns()
    for position, part in enumerate(planned.parts, 1):
        if person is not None and person in part.query.columns:
            raise ReleaseError(
                f"query {position} ({part.query.type}) reads the person key {person!r}: it "
                "names people, so no answer may be computed from it"
            )
        if part.query.type in (SUM, MEAN, QUANTILE):
            numeric_values(engine, part.query)
        if part.query.type == COUNT_BY and part.query.keys is None:
            people = people or people_of(engine, person, quasi, read)
            check_key_columns(engine, part.query, position, people)
            _check_keys_of_one_person(people, part, position)
    return people or people_of(engine, person, quasi, read)


def _check_keys_of_one_person(people: People, part: Part, position: int) -> None:
    """Refuse keys from the data that one person dominates (:func:`persons.singled_out`),
    whatever their text: judged on every key of at least half the threshold's rows."""
    found = singled_out(people, part.query.columns, (part.mechanisms[0].threshold or 2) // 2)
    if found is not None:
        raise ReleaseError(
            f"query {position} (count_by {', '.join(part.query.columns)}): a key of "
            f"{found.rows:,} rows taken from the data is one person's ({found.view} holds most "
            "of its rows, and they most of that value's): its presence would single them out, "
            "whatever it spells; declare the keys, count a coarser column, or drop that "
            "person's rows"
        )


def check_key_columns(engine: Engine, query: Query, position: int, people: People) -> None:
    """Refuse a column whose values would become keys when they identify people: content the
    detector classifies as a direct identifier (e-mail addresses, phone numbers, national ids,
    in a sample of its distinct values), or values that belong to one possible person each
    (:mod:`broker.privacy.persons`) for at least :data:`ONE_PERSON_SHARE` of them."""
    label = f"query {position} (count_by {', '.join(query.columns)})"
    for column in query.columns:
        found = content_of(sample_distinct(engine.dictionary(column))).direct_identifier
        if found is not None:
            raise ReleaseError(
                f"{label}: the values of {column!r} look like {found.replace('_', ' ')}s; keys "
                "taken from the data cross the border, so such a column cannot give them: "
                "declare the keys, or count another column"
            )
        persons = persons_per_value(people, column)
        persons = persons[persons > 0]
        alone = int((persons == 1).sum())
        if persons.size > 1 and Fraction(alone, persons.size) >= ONE_PERSON_SHARE:
            raise ReleaseError(
                f"{label}: {column!r} identifies people ({alone:,} of its {persons.size:,} "
                "values belong to one person each): its keys would name them; count a coarser "
                "column, or declare the keys"
            )
    _check_split_over_key_columns(engine, query, label)


def _check_split_over_key_columns(engine: Engine, query: Query, label: str) -> None:
    """Refuse columns whose values, each clean alone, hold an identifier once a key's values
    are read side by side (a card in four columns of four digits, a given and a family name):
    a sample of their distinct tuples, in the query's order (the delivered keys' order), read
    as the split-identifier reading of uploads reads adjacent columns
    (:func:`~broker.metrics.content.split_content`)."""
    if len(query.columns) < 2:
        return
    columns = list(query.columns)
    codes = sampled_codes(engine, columns, SAMPLE)
    values = [
        dictionary_values(engine.dictionary(column))[chosen]
        for column, chosen in zip(columns, codes, strict=True)
    ]
    found = split_content(list(zip(*values, strict=True)))
    if found is not None:
        raise ReleaseError(
            f"{label}: the keys taken from the data hold {found.describe()} once a key's "
            "values are read side by side; keys cross the border, so these columns cannot "
            "give them: declare the keys, or count other columns"
        )


def compute(
    engine: Engine,
    planned: Plan,
    person: str | None = None,
    rng: np.random.Generator | None = None,
    quasi: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Answer every planned query from ``engine``; one dict a query (see :func:`_described`)
    with its ``result``. ``person``: the column naming each row's person; every query then
    reads at most its ``contributions`` rows of each possible person (the person key's, merged
    by rare quasi-identifier tuples: :mod:`broker.privacy.persons`; ``quasi``: the declared
    quasi-identifiers); ``rng`` chooses which rows (tests seed it)."""
    people = validate(engine, planned, person, quasi)
    counter = _Counter(engine, people, rng or np.random.default_rng())
    answers = []
    for part in planned.parts:
        answer = _described(part)
        answer["result"] = _answer(counter, part)
        answers.append(answer)
    return answers


@dataclass(frozen=True)
class _Counter:
    """Count tables of the rows a query reads: each possible person's bounded share."""

    engine: Engine
    people: People
    rng: np.random.Generator

    def table(self, columns: tuple[str, ...], contributions: int) -> CountTable:
        return bounded_table(self.people, columns, contributions, self.rng)

    def dictionary(self, column: str) -> pd.Series:
        return self.engine.dictionary(column)


def _described(part: Part) -> dict[str, Any]:
    query = part.query
    first = part.mechanisms[0]
    body: dict[str, Any] = {
        "query": query.as_dict(),
        "mechanism": first.mechanism if query.type != MEAN else "noisy sum / noisy count",
        "epsilon": show(part.epsilon),
        "epsilon_exact": stored(part.epsilon),
        "delta": show(part.delta),
        "contributions": part.contributions,
        "scale": [m.scale for m in part.mechanisms] if len(part.mechanisms) > 1 else first.scale,
        "accuracy": _accuracy(part),
    }
    if first.threshold is not None:
        body["threshold"] = first.threshold
        body["delta_of_threshold"] = first.delta_spent
    return body


def _accuracy(part: Part) -> dict[str, Any]:
    query, first = part.query, part.mechanisms[0]
    if query.type in (COUNT, COUNT_BY, SUM):
        return {
            "confidence": CONFIDENCE,
            "half_width": first.half_width,
            "meaning": f"the released {'sum' if query.type == SUM else 'count'} is within "
            f"{first.half_width:.6g} of the exact one with probability {CONFIDENCE:.0%}"
            + (" (for a key that is released)" if first.threshold is not None else ""),
        }
    if query.type == MEAN:
        return {
            "confidence": CONFIDENCE,
            "half_width": None,
            "meaning": "the mean's interval (result.interval) holds the exact mean with "
            f"probability at least {CONFIDENCE:.0%}: it is formed from the noisy sum and count, "
            f"each within its {1 - mechanisms.ALPHA / 2:.1%} half-width",
        }
    return {
        "confidence": None,
        "half_width": None,
        "meaning": "a quantile's error is counted in ranks and depends on how the data spreads "
        f"near it; the value is one of {query.candidates} candidates evenly spaced in the bounds",
    }


def _answer(counter: _Counter, part: Part) -> dict[str, Any]:
    query = part.query
    if query.type == COUNT:
        rows = int(counter.table((), part.contributions).rows.sum())
        return {"count": mechanisms.noisy_count(rows, part.mechanisms[0])}
    if query.type == COUNT_BY:
        if query.keys is None:
            return _from_data_keys(counter, part)
        return _declared_keys(counter, part)
    values = numeric_values(counter.engine, query, counter.table(query.columns, part.contributions))
    if query.type == SUM:
        return {"sum": mechanisms.noisy_sum(values, query.bounds, part.mechanisms[0])}
    if query.type == MEAN:
        return _mean(values, query, *part.mechanisms)
    candidates = _candidates(query)
    return {
        "quantiles": [
            {"quantile": q, "value": mechanisms.noisy_quantile(values, candidates, q, m)}
            for q, m in zip(query.quantiles, part.mechanisms, strict=True)
        ]
    }


def _texts(engine: Engine, column: str) -> list[str | None]:
    return [key_text(v) for v in engine.dictionary(column).tolist()]


def declared_counts(engine: Engine, query: Query, table: CountTable | None = None) -> list[int]:
    """The exact count of each declared cell (in :func:`cell_names` order), then of every
    other row: from the engine's count table (or ``table``, bounded), vectorized. OpenDP's
    own transformation, ``make_count_by_categories``, gives the same vector on the rows (a
    test checks it)."""
    if table is None:
        [table] = engine.counts([list(query.columns)])
    cell = np.zeros(table.size, dtype=np.int64)
    outside = np.zeros(table.size, dtype=bool)
    widths = [len(keys) for keys in query.keys]
    stride = 1
    for column, keys, width in reversed(list(zip(query.columns, query.keys, widths, strict=True))):
        position = {key: i for i, key in enumerate(keys)}
        lookup = np.array([position.get(t, -1) for t in _texts(engine, column)], dtype=np.int64)
        index = lookup[table.codes(column)] if table.size else np.zeros(0, dtype=np.int64)
        outside |= index < 0
        cell += np.maximum(index, 0) * stride
        stride *= width
    cells = int(np.prod(widths))
    exact = np.bincount(cell[~outside], weights=table.rows[~outside], minlength=cells)
    return [*exact.astype(np.int64).tolist(), int(table.rows[outside].sum())]


def _declared_keys(counter: _Counter, part: Part) -> dict[str, Any]:
    """Counts of the declared cells, the other values in one cell, with OpenDP's noise."""
    query = part.query
    table = counter.table(query.columns, part.contributions)
    exact = declared_counts(counter.engine, query, table)
    noisy = mechanisms.noisy_counts(exact, cell_names(query), part.mechanisms[0])
    return {
        "columns": list(query.columns),
        "cells": [
            {"key": list(key), "count": n}
            for key, n in zip(itertools.product(*query.keys), noisy[:-1], strict=True)
        ],
        "other": noisy[-1],
    }


def _from_data_keys(counter: _Counter, part: Part) -> dict[str, Any]:
    """Counts of the keys the data holds, released only above the threshold; a released key
    that holds an identifier is withheld (counted in ``withheld``)."""
    query, calibrated = part.query, part.mechanisms[0]
    table = counter.table(query.columns, part.contributions)
    texts = [_texts(counter.engine, c) for c in query.columns]
    codes = [table.codes(c) for c in query.columns]
    exact = {
        json.dumps([texts[i][int(code[j])] for i, code in enumerate(codes)]): int(table.rows[j])
        for j in range(table.size)
    }
    noisy = mechanisms.noisy_counts_above_threshold(exact, calibrated)
    released = [(json.loads(key), n) for key, n in noisy.items()]
    kept = [(key, n) for key, n in released if not any(map(_identifying, key))]
    return {
        "columns": list(query.columns),
        "cells": [{"key": key, "count": n} for key, n in sorted(kept, key=_order)],
        "threshold": calibrated.threshold,
        "withheld": len(released) - len(kept),
    }


def _identifying(value: str | None) -> bool:
    return value is not None and identifier_in_key(value) is not None


def _order(cell: tuple[list, int]) -> tuple:
    """Released cells in key order (never in the data's order)."""
    return tuple((value is None, value or "") for value in cell[0])


def numeric_values(engine: Engine, query: Query, table: CountTable | None = None) -> np.ndarray:
    """The column's values as numbers, one per row holding one (missing values are left out:
    a per-row filter, which keeps the neighbouring relation); a value that is not a number is
    an error naming it. ``table``: the column's (bounded) count table, else every row."""
    column = query.column
    dictionary = engine.dictionary(column)
    present = dictionary.notna() & (dictionary.astype(str).str.strip() != "")
    numbers = pd.Series(numbers_of(dictionary.where(present)), index=dictionary.index)
    wrong = present & numbers.isna()
    if wrong.any():
        example = str(dictionary[wrong].iloc[0])[:40]
        raise ReleaseError(
            f"query on {column!r} ({query.type}) needs numbers, and the column holds "
            f"{example!r}: choose a numeric column, or count it by its values instead"
        )
    if table is None:
        [table] = engine.counts([[column]])
    codes = table.codes(column)
    keep = present.to_numpy()[codes]
    return np.repeat(numbers.to_numpy(dtype=float)[codes[keep]], table.rows[keep])


def _mean(values: np.ndarray, query: Query, sum_mechanism, count_mechanism) -> dict[str, Any]:
    """A noisy sum over a noisy count (post-processing of two releases), clamped into the
    bounds, with an interval that holds the exact mean whenever both noises stay within their
    half-widths at ALPHA / 2 each (so with probability at least 1 - ALPHA)."""
    noisy_sum = mechanisms.noisy_sum(values, query.bounds, sum_mechanism)
    noisy_count = mechanisms.noisy_count(int(values.size), count_mechanism)
    lower, upper = query.bounds
    mean = min(max(noisy_sum / max(noisy_count, 1), lower), upper)
    sum_width = mechanisms.half_width(sum_mechanism, mechanisms.ALPHA / 2)
    count_width = mechanisms.half_width(count_mechanism, mechanisms.ALPHA / 2)
    interval = None
    fewest = noisy_count - count_width
    if fewest > 0:
        most = noisy_count + count_width
        ends = [
            (noisy_sum - sum_width) / most,
            (noisy_sum - sum_width) / fewest,
            (noisy_sum + sum_width) / most,
            (noisy_sum + sum_width) / fewest,
        ]
        interval = [max(min(ends), lower), min(max(ends), upper)]
    return {"mean": mean, "sum": noisy_sum, "count": noisy_count, "interval": interval}

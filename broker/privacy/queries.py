"""The queries of an aggregate release: parsed from JSON, checked against the table's columns.

A release asks a list of queries, each a JSON object with its ``type``:

- ``{"type": "count"}``: the number of rows;
- ``{"type": "count_by", "columns": ["sex", "region"], "keys": {"sex": ["F", "M"]}}``: the
  number of rows of each combination of values (a histogram with one column, a contingency
  table with several). A column's ``keys`` are the values to count, declared by the asker;
  rows holding another value are counted together in one ``other`` cell. Without keys for
  every column, the combinations are taken from the data and only those whose noisy count
  passes a threshold are released (a combination that exists because of one person must not
  leak through its key), which needs a delta;
- ``{"type": "sum", "column": "age", "bounds": [0, 120]}``: the sum of a numeric column, each
  value first clamped into the bounds;
- ``{"type": "mean", "column": "age", "bounds": [0, 120]}``: its mean (a noisy sum over a noisy
  count, each with half the query's epsilon);
- ``{"type": "quantile", "column": "age", "bounds": [0, 120], "quantiles": [0.5, 0.9]}``:
  quantiles, each chosen among ``candidates`` (default 101) evenly spaced values in the bounds.

Bounds are never taken from the data: the sensitivity of a sum is what one person can add to
it, which only bounds stated in advance limit. A query may carry its own ``epsilon``; those
without one share equally what the release's epsilon leaves. A query may carry
``contributions``: the most rows of one person it reads (with a person key the broker keeps at
most that many of each person's rows; without one it is the sender's statement; default: the
release's).

Keys cross the border with the answers, so a declared key is text the detector must find clean
(:func:`identifier_in_key`), and two keys of one column must differ by more than case,
look-alike letters or invisible characters (:func:`broker.columns.names.attribute_key`). Keys
are also read as the destination reads a contingency table's cells, side by side
(:func:`_keys_read_together`): an identifier cut into pieces, one a column, is refused as the
split-identifier reading of uploads refuses it.

Errors are :class:`QueryError` (a ``ValueError``) naming the query by its position and the field.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from broker.columns.digits import significant_digits
from broker.columns.names import attribute_key, visible_text
from broker.identifiers.scan import ScanBudget
from broker.identifiers.short_text import identifier_in_text
from broker.metrics.content import SAMPLE, split_content
from broker.privacy.budget import BudgetError, positive_epsilon
from broker.wire import json_limits

COUNT, COUNT_BY, SUM, MEAN, QUANTILE = "count", "count_by", "sum", "mean", "quantile"
TYPES = (COUNT, COUNT_BY, SUM, MEAN, QUANTILE)
NUMERIC = (SUM, MEAN, QUANTILE)
MAX_QUERIES = 50
MAX_COLUMNS = 5  # columns of one contingency table
MAX_KEYS = 10_000  # declared cells of one contingency table (product of each column's keys)
MAX_KEY_CHARS = 200
MAX_CANDIDATES = 1_000
MAX_QUANTILES = 20  # of one query (each is calibrated and answered on its own)
# Of a whole release: calibrating one quantile takes about 0.04 s (101 candidates) to 0.1 s
# (1,000), in the request, so a release of a few kilobytes is bounded to a few seconds.
MAX_RELEASE_QUANTILES = 40
DEFAULT_CANDIDATES = 101
MAX_CONTRIBUTIONS = 100  # rows of one person a query may read (the noise grows with it)
MAX_QUERIES_TEXT = 1_000_000  # characters of the queries' JSON
# Significant digits of a number a query states (bounds, quantiles): they are echoed in the
# document the destination receives, so a sender's own digits must not carry an identifier.
MAX_STATED_DIGITS = 6


class QueryError(ValueError):
    """A query that cannot be answered as asked: the message names it and the field."""


@dataclass(frozen=True)
class Query:
    """One query, checked. ``keys`` (count_by): each column's declared values, or None when the
    keys come from the data; ``bounds`` (numeric): the clamping interval."""

    type: str
    columns: tuple[str, ...] = ()
    keys: tuple[tuple[str | None, ...], ...] | None = None
    bounds: tuple[float, float] | None = None
    quantiles: tuple[float, ...] = ()
    candidates: int = DEFAULT_CANDIDATES
    epsilon: Fraction | None = None
    contributions: int | None = None

    @property
    def column(self) -> str:
        return self.columns[0]

    @property
    def declared_keys(self) -> bool:
        return self.keys is not None

    @property
    def needs_delta(self) -> bool:
        """Keys taken from the data are released above a threshold, which only an
        (epsilon, delta) guarantee covers."""
        return self.type == COUNT_BY and self.keys is None

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.type}
        if self.type == COUNT_BY:
            body["columns"] = list(self.columns)
            if self.keys is not None:
                body["keys"] = {c: list(k) for c, k in zip(self.columns, self.keys, strict=True)}
        elif self.type in NUMERIC:
            body["column"] = self.column
            body["bounds"] = list(self.bounds or ())
        if self.type == QUANTILE:
            body["quantiles"] = list(self.quantiles)
            body["candidates"] = self.candidates
        if self.contributions is not None:
            body["contributions"] = self.contributions
        return body


@dataclass(frozen=True)
class Queries:
    items: tuple[Query, ...] = field(default_factory=tuple)

    def columns(self) -> list[str]:
        """Every column some query reads, once, in the order first named."""
        return list(dict.fromkeys(c for q in self.items for c in q.columns))


def parse_queries(text: str | Sequence[Any]) -> Queries:
    """The queries of a release from their JSON (a list of objects, or one object).

    Examples
    --------
    >>> text = '[{"type": "count"}, {"type": "sum", "column": "age", "bounds": [0, 120]}]'
    >>> [(q.type, q.bounds) for q in parse_queries(text).items]
    [('count', None), ('sum', (0.0, 120.0))]
    >>> parse_queries('[{"type": "sum", "column": "age"}]')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    broker.privacy.queries.QueryError: query 1 (sum of 'age'): bounds are required for a sum: ...
    """
    if isinstance(text, str):
        if len(text) > MAX_QUERIES_TEXT:
            raise QueryError(f"the queries are longer than {MAX_QUERIES_TEXT:,} characters")
        if not text.strip():
            raise QueryError('no query: send queries as JSON, e.g. [{"type": "count"}]')
        try:
            loaded = json_limits.loads(text)
        except json_limits.JsonTooComplex as error:
            raise QueryError(f"the queries cannot be read: {error}") from None
        except json.JSONDecodeError as error:
            raise QueryError(
                f"the queries are not JSON: {error.msg} at line {error.lineno}, column "
                f"{error.colno}"
            ) from None
    else:
        loaded = list(text)
    if isinstance(loaded, dict):
        loaded = [loaded]
    if not isinstance(loaded, list):
        raise QueryError("the queries must be a JSON list of objects, each with a 'type'")
    if not loaded:
        raise QueryError('no query: send at least one, e.g. [{"type": "count"}]')
    if len(loaded) > MAX_QUERIES:
        raise QueryError(f"{len(loaded)} queries: a release asks at most {MAX_QUERIES}")
    queries = Queries(tuple(_query(i + 1, item) for i, item in enumerate(loaded)))
    _keys_read_together(queries)
    asked = sum(len(q.quantiles) for q in queries.items)
    if asked > MAX_RELEASE_QUANTILES:
        raise QueryError(
            f"{asked} quantiles in all: a release asks at most {MAX_RELEASE_QUANTILES} (each is "
            "calibrated on its own); send the others in another release"
        )
    return queries


_COMMON = {"type", "epsilon", "contributions"}
_FIELDS = {
    COUNT: _COMMON,
    COUNT_BY: _COMMON | {"columns", "keys"},
    SUM: _COMMON | {"column", "bounds"},
    MEAN: _COMMON | {"column", "bounds"},
    QUANTILE: _COMMON | {"column", "bounds", "quantiles", "candidates"},
}


def _query(position: int, item: Any) -> Query:
    if not isinstance(item, dict):
        raise QueryError(f"query {position} is not an object with a 'type'")
    kind = item.get("type")
    if kind not in TYPES:
        raise QueryError(
            f"query {position}: type {kind!r} is not one of {', '.join(TYPES)}"
            if kind is not None
            else f"query {position} has no 'type' (one of {', '.join(TYPES)})"
        )
    unknown = sorted(set(item) - _FIELDS[kind])
    if unknown:
        raise QueryError(
            f"query {position} ({kind}): unknown field {unknown[0]!r}; a {kind} takes "
            + ", ".join(sorted(_FIELDS[kind]))
        )
    epsilon = None
    if item.get("epsilon") is not None:
        try:
            epsilon = positive_epsilon(item["epsilon"])
        except BudgetError as error:
            raise QueryError(f"query {position} ({kind}): {error}") from None
    query = _typed(position, kind, item, epsilon)
    contributions = item.get("contributions")
    if contributions is None:
        return query
    if (
        not isinstance(contributions, int)
        or isinstance(contributions, bool)
        or not 1 <= contributions <= MAX_CONTRIBUTIONS
    ):
        raise QueryError(
            f"query {position} ({kind}): 'contributions' (the most rows of one person it reads) "
            f"must be a whole number from 1 to {MAX_CONTRIBUTIONS}"
        )
    return replace(query, contributions=contributions)


def _typed(position: int, kind: str, item: dict, epsilon: Fraction | None) -> Query:
    if kind == COUNT:
        return Query(COUNT, epsilon=epsilon)
    if kind == COUNT_BY:
        return _count_by(position, item, epsilon)
    column = item.get("column")
    if not isinstance(column, str) or not column.strip():
        raise QueryError(f"query {position} ({kind}): 'column' must name one column")
    label = f"query {position} ({kind} of {column!r})"
    bounds = _bounds(label, kind, item.get("bounds"))
    if kind != QUANTILE:
        return Query(kind, (column,), bounds=bounds, epsilon=epsilon)
    wanted = item.get("quantiles", [0.5])
    if (
        not isinstance(wanted, list)
        or not wanted
        or not all(_number(q) and 0 <= q <= 1 for q in wanted)
    ):
        raise QueryError(f"{label}: 'quantiles' must be a list of numbers from 0 to 1, e.g. [0.5]")
    if any(significant_digits(q) > MAX_STATED_DIGITS for q in wanted):
        raise QueryError(f"{label}: quantiles {_STATED}")
    if len(wanted) > MAX_QUANTILES:
        raise QueryError(f"{label}: at most {MAX_QUANTILES} quantiles")
    candidates = item.get("candidates", DEFAULT_CANDIDATES)
    if not isinstance(candidates, int) or isinstance(candidates, bool) or candidates < 2:
        raise QueryError(f"{label}: 'candidates' must be a whole number of at least 2")
    if candidates > MAX_CANDIDATES:
        raise QueryError(f"{label}: at most {MAX_CANDIDATES} candidates")
    return Query(
        QUANTILE,
        (column,),
        bounds=bounds,
        quantiles=tuple(float(q) for q in wanted),
        candidates=candidates,
        epsilon=epsilon,
    )


def _number(value: Any) -> bool:
    """A finite JSON number of a sane size (a 400-digit integer does not fit a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) < 1e15 if isinstance(value, int) else math.isfinite(value)


def _bounds(label: str, kind: str, bounds: Any) -> tuple[float, float]:
    if bounds is None:
        raise QueryError(
            f"{label}: bounds are required for a {kind}: [lower, upper], stated in advance "
            "(never taken from the data: one person's value could then set them)"
        )
    if not isinstance(bounds, list) or len(bounds) != 2 or not all(map(_number, bounds)):
        raise QueryError(f"{label}: bounds must be two finite numbers [lower, upper]")
    lower, upper = float(bounds[0]), float(bounds[1])
    if not lower < upper:
        raise QueryError(f"{label}: the lower bound must be below the upper ({lower:g}, {upper:g})")
    if max(abs(lower), abs(upper)) > 1e12:
        raise QueryError(f"{label}: bounds beyond 1e12 in magnitude are refused")
    if any(significant_digits(b) > MAX_STATED_DIGITS for b in bounds):
        raise QueryError(f"{label}: bounds {_STATED}")
    return lower, upper


# What a stated number may be: the reason it is bounded.
_STATED = (
    f"are written with at most {MAX_STATED_DIGITS} significant digits (e.g. 125000, 0.0125): "
    "they cross the border in the answer's document"
)


def _count_by(position: int, item: dict, epsilon: Fraction | None) -> Query:
    columns = item.get("columns")
    if isinstance(columns, str):
        columns = [columns]
    if (
        not isinstance(columns, list)
        or not columns
        or not all(isinstance(c, str) and c.strip() for c in columns)
    ):
        raise QueryError(f"query {position} (count_by): 'columns' must list one or more columns")
    if len(set(columns)) != len(columns):
        raise QueryError(f"query {position} (count_by): a column is named twice")
    if len(columns) > MAX_COLUMNS:
        raise QueryError(f"query {position} (count_by): at most {MAX_COLUMNS} columns")
    label = f"query {position} (count_by {', '.join(columns)})"
    keys = item.get("keys")
    if keys is None:
        return Query(COUNT_BY, tuple(columns), epsilon=epsilon)
    if not isinstance(keys, dict):
        raise QueryError(f"{label}: 'keys' must map each column to the list of its values")
    extra = [name for name in keys if name not in columns]
    if extra:
        raise QueryError(f"{label}: 'keys' names {extra[0]!r}, which is not among its columns")
    missing = [c for c in columns if c not in keys]
    if missing:
        # Partly declared keys would still take the other columns' values from the data.
        raise QueryError(
            f"{label}: 'keys' must declare every column's values, or none (then the keys come "
            f"from the data, above a threshold); {missing[0]!r} has none"
        )
    declared = []
    cells = 1
    for column in columns:
        values = keys[column]
        if not isinstance(values, list) or not values:
            raise QueryError(f"{label}: the keys of {column!r} must be a non-empty list")
        texts = tuple(_key_text(label, column, i, v) for i, v in enumerate(values, 1))
        _distinct_keys(label, column, texts)
        declared.append(texts)
        cells *= len(texts)
    if cells > MAX_KEYS:
        raise QueryError(
            f"{label}: {cells:,} declared cells (the product of each column's keys); at most "
            f"{MAX_KEYS:,}"
        )
    return Query(COUNT_BY, tuple(columns), keys=tuple(declared), epsilon=epsilon)


def key_text(value: Any) -> str | None:
    """A value as the text keys are compared by: values as written (CSV holds text), a number
    its usual spelling, None (JSON ``null``) the missing value.

    Examples
    --------
    >>> key_text("007"), key_text(7), key_text(2.5), key_text(None)
    ('007', '7', '2.5', None)
    """
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN: the reader's missing value
        return None
    if isinstance(value, str):
        return value
    return repr(value) if isinstance(value, float) else str(value)


def _key_text(label: str, column: str, position: int, value: Any) -> str | None:
    """A declared key, checked as text that leaves: never echoed in an error (it may be the
    very identifier refused), named by its position instead."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int | float)):
        raise QueryError(f"{label}: the keys of {column!r} must be strings, numbers or null")
    text = key_text(value)
    if text is None:
        return None
    where = f"{label}: key {position} of {column!r}"
    if len(text) > MAX_KEY_CHARS:
        raise QueryError(f"{where} is longer than {MAX_KEY_CHARS} characters")
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise QueryError(f"{where} holds control characters")
    if found := identifier_in_key(text):
        raise QueryError(
            f"{where} holds what looks like {found}; keys cross the border with the answers, "
            "so they must name categories, never people"
        )
    return text


def _keys_read_together(queries: Queries) -> None:
    """Refuse a contingency table whose declared keys hold an identifier once a cell's keys
    (one from each column) are read side by side, as the delivered document shows them: read as
    the split-identifier reading of uploads reads adjacent columns
    (:func:`~broker.metrics.content.split_content`: strong evidence that needs every piece, in
    a share of the cells, so that digits joined by chance in a large table of codes do not
    count), on at most :data:`~broker.metrics.content.SAMPLE` of a table's cells chosen at
    random, each table under a scan budget of its own, past which it is refused (fail closed).
    A refusal names the query, never the keys (they may be the very identifier)."""
    for position, query in enumerate(queries.items, 1):
        if query.keys is None or len(query.keys) < 2:
            continue
        present = [[t for t in texts if t is not None] for texts in query.keys]
        cells = list(itertools.product(*present))
        if len(cells) > SAMPLE:  # as uploads' tuples: a share of a random sample
            chosen = random.SystemRandom().sample(range(len(cells)), SAMPLE)
            cells = [cells[i] for i in sorted(chosen)]
        found = split_content(cells, budget=ScanBudget())
        if found is not None:
            raise QueryError(
                f"query {position} (count_by): its cells' keys, read side by side, hold what "
                f"looks like {found.describe()}; keys cross the border with the answers, so "
                "they must name categories, never people"
            )


def _distinct_keys(label: str, column: str, texts: tuple[str | None, ...]) -> None:
    """Two keys of one column that a reader would take for one (case, look-alike letters,
    invisible characters) are refused: one of them would count what the other seems to."""
    seen: dict[str | None, int] = {}
    for position, text in enumerate(texts, 1):
        folded = None if text is None else attribute_key(text)
        if folded in seen:
            raise QueryError(
                f"{label}: keys {seen[folded]} and {position} of {column!r} are the same or "
                "differ only by case, look-alike letters or invisible characters"
            )
        seen[folded] = position


def identifier_in_key(text: str) -> str | None:
    """What direct identifier a key or label holds (the broker's one detector, on the text as
    written and on its NFKC form without invisible characters), or None.

    Examples
    --------
    >>> identifier_in_key("Dakar"), identifier_in_key("ana@example.org")
    (None, 'an e-mail address')
    """
    found = identifier_in_text(text)
    if found is None:
        folded = visible_text(unicodedata.normalize("NFKC", text))
        if folded != text:
            found = identifier_in_text(folded)
    return found


def check_columns(queries: Queries, columns: Sequence[str]) -> None:
    """Every column a query names is a column of the table (a ``KeyError``-free message
    listing the table's columns otherwise)."""
    present = set(columns)
    for position, query in enumerate(queries.items, 1):
        for name in query.columns:
            if name not in present:
                raise UnknownQueryColumn(
                    f"query {position} ({query.type}) names {name!r}, which is not a column of "
                    "the dataset",
                    name,
                )


class UnknownQueryColumn(QueryError):
    def __init__(self, message: str, column: str):
        super().__init__(message)
        self.column = column

"""Parsing and checking the queries of an aggregate release: every mistake is a clear error."""

import json
from fractions import Fraction

import pytest

from broker.privacy.queries import QueryError, UnknownQueryColumn, check_columns, parse_queries


def test_every_kind_of_query_parses():
    queries = parse_queries(
        json.dumps(
            [
                {"type": "count"},
                {
                    "type": "count_by",
                    "columns": ["sex", "zip"],
                    "keys": {"sex": ["F", "M"], "zip": [75001, None]},
                },
                {"type": "count_by", "columns": "sex"},
                {"type": "sum", "column": "age", "bounds": [0, 120], "epsilon": "0.25"},
                {"type": "mean", "column": "age", "bounds": [0, 120]},
                {"type": "quantile", "column": "age", "bounds": [0, 120], "quantiles": [0.5, 0.9]},
            ]
        )
    )
    kinds = [q.type for q in queries.items]
    assert kinds == ["count", "count_by", "count_by", "sum", "mean", "quantile"]
    assert queries.items[1].keys == (("F", "M"), ("75001", None))
    assert queries.items[2].keys is None and queries.items[2].needs_delta
    assert queries.items[3].epsilon == Fraction(1, 4)
    assert queries.columns() == ["sex", "zip", "age"]


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        ("", "no query"),
        ("[]", "no query"),
        ("{not json", "not JSON"),
        ('"count"', "must be a JSON list"),
        ('[{"type": "median"}]', "type 'median' is not one of"),
        ('[{"columns": ["a"]}]', "has no 'type'"),
        ('[{"type": "sum", "column": "age"}]', "bounds are required for a sum"),
        ('[{"type": "mean", "column": "age"}]', "bounds are required for a mean"),
        ('[{"type": "sum", "column": "age", "bounds": [5, 5]}]', "lower bound must be below"),
        ('[{"type": "sum", "column": "age", "bounds": [0, "x"]}]', "two finite numbers"),
        ('[{"type": "count", "epsilon": 0}]', "epsilon must be above 0"),
        ('[{"type": "count", "epsilon": -1}]', "epsilon must be above 0"),
        ('[{"type": "count", "bounds": [0, 1]}]', "unknown field 'bounds'"),
        ('[{"type": "count_by", "columns": []}]', "one or more columns"),
        ('[{"type": "count_by", "columns": ["a", "a"]}]', "named twice"),
        ('[{"type": "count_by", "columns": ["a", "b"], "keys": {"a": ["x"]}}]', "'b' has none"),
        ('[{"type": "count_by", "columns": ["a"], "keys": {"a": []}}]', "non-empty list"),
        ('[{"type": "count_by", "columns": ["a"], "keys": {"a": ["x", "x"]}}]', "are the same"),
        (
            '[{"type": "quantile", "column": "a", "bounds": [0, 1], "quantiles": [2]}]',
            "from 0 to 1",
        ),
    ],
)
def test_bad_queries_are_refused_with_the_reason(queries, message):
    with pytest.raises(QueryError, match=message):
        parse_queries(queries)


def test_too_many_declared_cells_are_refused():
    keys = {c: [str(i) for i in range(101)] for c in ("a", "b")}
    with pytest.raises(QueryError, match="10,201 declared cells"):
        parse_queries([{"type": "count_by", "columns": ["a", "b"], "keys": keys}])


def test_a_query_on_an_unknown_column_names_it():
    queries = parse_queries('[{"type": "sum", "column": "agee", "bounds": [0, 1]}]')
    with pytest.raises(UnknownQueryColumn, match="'agee', which is not a column") as raised:
        check_columns(queries, ["age", "sex"])
    assert raised.value.column == "agee"


def test_a_release_asks_at_most_forty_quantiles_in_all():
    """Each quantile is calibrated on its own in the request (a tenth of a second at 1,000
    candidates): a few kilobytes of queries must not hold the broker for a minute."""
    query = {"type": "quantile", "column": "age", "bounds": [0, 120], "quantiles": [0.5] * 20}
    assert len(parse_queries([query, query]).items) == 2  # 40: allowed
    with pytest.raises(QueryError, match="41 quantiles in all: a release asks at most 40"):
        parse_queries([query, query, {**query, "quantiles": [0.5]}])

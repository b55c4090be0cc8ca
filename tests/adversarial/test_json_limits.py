"""A hostile member sends JSON that costs the parser more than it is worth: nested thousands of
levels deep, or a number of thousands of digits (Python's ``int()`` refuses more than 4,300
digits with a ValueError, its parser recurses once a level). Through a real broker: every such
JSON, wherever the broker reads it (an aggregate release's queries, a JSON body of any route, a
JSON dataset), is a 422 problem+json that does not repeat it; never a 500.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.conftest import DESTINATION, SOURCE, assert_clean_refusal

DIGITS = "9" * 5000
DEEP = 5000


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def assert_refused_unechoed(answer, *secrets: str) -> None:
    assert_clean_refusal(answer, (422,))
    for secret in secrets:
        assert secret not in answer.text


@pytest.mark.parametrize(
    "queries",
    [
        nested(DEEP, '{"type": "count"}'),
        json.dumps([{"type": "count_by", "columns": ["x"], "keys": {"x": ["a"]}}])[:-1]
        + ", "
        + nested(DEEP)
        + "]",
        '[{"type": "count", "contributions": ' + DIGITS + "}]",
        '[{"type": "sum", "column": "age", "bounds": [0, ' + DIGITS + "]}]",
        '[{"type": "sum", "column": "age", "bounds": [0, 1' + "0" * 5000 + ".5]}]",
    ],
    ids=["deep list", "deep inside", "huge int", "huge bound", "huge float"],
)
def test_queries_too_deep_or_too_long_a_number_are_422(broker, queries):
    answer = broker.post(
        b"age,x\n30,a\n40,b\n",
        kind="aggregate",
        queries=queries,
        epsilon="0.5",
        delta="1e-6",
    )
    assert_refused_unechoed(answer, DIGITS[:200], "[[[[[[[[[[")
    assert "queries cannot be read" in answer.json()["detail"]


def _call(broker, member, method, path, content: str):
    headers = {
        "Authorization": f"Bearer {broker.keys[member]}",
        "Content-Type": "application/json",
    }
    return broker.client.request(method, f"{broker.url}{path}", headers=headers, content=content)


@pytest.mark.parametrize(
    ("member", "method", "path"),
    [
        (DESTINATION, "POST", "/v1/negotiations"),
        (SOURCE, "POST", "/v1/catalog/datasets"),
        (SOURCE, "POST", "/v1/negotiations/00000000-0000-0000-0000-000000000000/terminate"),
    ],
)
@pytest.mark.parametrize(
    "body",
    [
        '{"dataset_id": ' + nested(DEEP) + ', "purpose": "research"}',
        '{"dataset_id": "x", "purpose": "research", "limit": ' + DIGITS + "}",
        '{"title": "t", "columns": [{"name": "a", "role": "other", "rows": -' + DIGITS + "}]}",
    ],
    ids=["deep", "huge int", "huge negative int"],
)
def test_json_bodies_too_deep_or_too_long_a_number_are_422_on_every_route(
    broker, member, method, path, body
):
    answer = _call(broker, member, method, path, body)
    assert_refused_unechoed(answer, DIGITS[:200], "[[[[[[[[[[")
    assert "request body cannot be read" in answer.json()["detail"]


def test_a_shallow_body_with_ordinary_numbers_still_reaches_its_route(broker):
    """The bound is not a wall: a body a few levels deep is read and answered by its route."""
    answer = _call(
        broker,
        SOURCE,
        "POST",
        "/v1/catalog/datasets",
        json.dumps({"title": "t", "columns": [{"name": "a", "role": "other"}], "rows": 12}),
    )
    assert answer.status_code in (201, 422), answer.text
    assert "request body cannot be read" not in answer.text


@pytest.mark.parametrize(
    "data",
    [nested(DEEP, '{"a": 1}'), '[{"age": ' + DIGITS + "}]"],
    ids=["deep", "huge int"],
)
def test_a_json_dataset_too_deep_or_too_long_a_number_is_422(broker, data):
    answer = broker.post(data.encode(), "data.json", quasi_identifiers="age")
    assert_refused_unechoed(answer, DIGITS[:200])

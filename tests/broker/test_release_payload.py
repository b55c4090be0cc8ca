"""The destination's payload of an aggregate release is built from the stored document's typed
models, and is byte for byte what the answers as computed (``broker.privacy.release.compute``)
give when written as they are, which is what the broker sent before the document was typed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from fractions import Fraction

import pytest

from broker.engines.pandas import PandasEngine
from broker.privacy.budget import show
from broker.privacy.queries import parse_queries
from broker.privacy.release import compute, plan
from broker.transfers.aggregate import payload_of, release_document
from broker.transfers.models import Transfer
from broker.transfers.release import StoredRelease
from tests.broker.test_aggregate_releases import people

EVERY_KIND = [
    {"type": "count"},
    {"type": "count_by", "columns": ["sex"], "keys": {"sex": ["F", "M"]}},
    {"type": "count_by", "columns": ["region"]},
    {"type": "sum", "column": "age", "bounds": [0, 100]},
    {"type": "mean", "column": "age", "bounds": [0, 100], "contributions": 2},
    {"type": "quantile", "column": "age", "bounds": [0, 100], "quantiles": [0.25, 0.5]},
]


def test_the_payload_is_the_computed_answers_written_as_they_are():
    planned = plan(parse_queries(json.dumps(EVERY_KIND)), Fraction(3), Fraction(1, 10**6))
    answers = compute(PandasEngine(people(600)), planned)
    assert [type(a["result"]) for a in answers] == [dict] * len(EVERY_KIND)
    document = release_document(planned, answers, "k" * 64)
    # what the transfer row holds, read back as the decision reads it before delivering
    stored = StoredRelease.of(json.loads(json.dumps(document.stored())))
    transfer = Transfer(
        id="t-1",
        source_id="sn-hospital",
        purpose="research",
        created_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    )
    sent = payload_of(transfer, planned, stored, person_key=False)
    before = {
        "kind": "aggregate",
        "transfer_id": "t-1",
        "source": "sn-hospital",
        "purpose": "research",
        "released_at": "2026-11-27T12:00:00+00:00",
        "epsilon": show(planned.epsilon),
        "delta": show(planned.delta),
        "guarantee": json.loads(sent)["guarantee"],
        "answers": answers,
    }
    assert sent == json.dumps(before, indent=1, allow_nan=False).encode()
    assert [type(a).__name__ for a in stored.answers] == [
        "CountAnswer",
        "DeclaredCountsAnswer",
        "DataKeyCountsAnswer",
        "SumAnswer",
        "MeanAnswer",
        "QuantilesAnswer",
    ]


def test_a_release_not_released_delivers_nothing_and_its_answers_match_its_queries():
    planned = plan(parse_queries(json.dumps(EVERY_KIND[:2])), Fraction(1), Fraction(0))
    refused = release_document(planned, None, "k" * 64)
    assert refused.answers is None and refused.queries[1].query.keys == {"sex": ["F", "M"]}
    with pytest.raises(ValueError, match="delivers nothing"):
        refused.delivered_answers()
    with pytest.raises(ValueError, match="1 answers for 2 queries"):
        StoredRelease.model_validate({**refused.stored(), "answers": [{"count": 3}]})

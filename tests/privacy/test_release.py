"""Releases through OpenDP, checked statistically.

The data is made from fixed seeds; OpenDP's noise is not seedable (it draws from the operating
system's CSPRNG, on purpose), so each statistical check repeats a mechanism many times and
holds the result to what the mechanism promises within five standard errors of the estimate:
a correct mechanism fails such a check about once in 1.7 million runs, while a mechanism with
the wrong scale (half or double) fails it every time.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from broker.engines.pandas import PandasEngine
from broker.privacy import mechanisms
from broker.privacy.queries import parse_queries
from broker.privacy.release import ReleaseError, cell_names, compute, declared_counts, plan

RUNS = 4000
SIGMAS = 5


def discrete_laplace_variance(scale: float) -> float:
    q = math.exp(-1 / scale)
    return 2 * q / (1 - q) ** 2


def table(rows: int = 500, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], rows),
            "region": rng.choice(["north", "south", "east"], rows, p=[0.5, 0.3, 0.2]),
            "age": rng.integers(18, 90, rows).astype(str),
        }
    )


def check_noise(errors: np.ndarray, variance: float, half_width: float, coverage: float):
    """Mean 0, the promised variance and the promised share within the half-width."""
    n = errors.size
    assert abs(errors.mean()) <= SIGMAS * math.sqrt(variance / n)
    # the sample variance of Laplace noise (kurtosis 6) has standard error sigma^2 sqrt(5 / n)
    assert abs(errors.var() - variance) <= SIGMAS * variance * math.sqrt(5 / n)
    within = float(np.mean(np.abs(errors) < half_width))
    assert abs(within - coverage) <= SIGMAS * math.sqrt(coverage * (1 - coverage) / n)
    assert within >= 0.95 - SIGMAS * math.sqrt(0.95 * 0.05 / n)


def test_a_count_has_the_mean_and_spread_the_mechanism_promises():
    calibrated = mechanisms.count(Fraction(1, 2))
    assert calibrated.scale == 2.0 and calibrated.epsilon_spent <= 0.5
    errors = np.array([mechanisms.noisy_count(1000, calibrated) - 1000 for _ in range(RUNS)])
    # the exact share within the half-width: P(|X| >= m) = 2 q^m / (1 + q) for discrete Laplace
    q, m = math.exp(-1 / calibrated.scale), math.ceil(calibrated.half_width)
    coverage = 1 - 2 * q**m / (1 + q)
    check_noise(errors, discrete_laplace_variance(2.0), calibrated.half_width, coverage)


def test_histogram_cells_are_noised_independently_with_the_promised_spread():
    frame = table()
    queries = parse_queries(
        [
            {
                "type": "count_by",
                "columns": ["region"],
                "keys": {"region": ["north", "south", "east"]},
            }
        ]
    )
    planned = plan(queries, Fraction(1))
    [part] = planned.parts
    calibrated = part.mechanisms[0]
    exact = declared_counts(PandasEngine(frame), part.query)
    assert exact == [*frame.region.value_counts()[["north", "south", "east"]].tolist(), 0]
    runs = [
        np.array(mechanisms.noisy_counts(exact, cell_names(part.query), calibrated)) - exact
        for _ in range(RUNS // 4)
    ]
    errors = np.concatenate(runs)
    q, m = math.exp(-1 / calibrated.scale), math.ceil(calibrated.half_width)
    check_noise(
        errors,
        discrete_laplace_variance(calibrated.scale),
        calibrated.half_width,
        1 - 2 * q**m / (1 + q),
    )
    assert abs(np.corrcoef(np.array(runs)[:, 0], np.array(runs)[:, 1])[0, 1]) < 0.15


def test_a_clamped_sum_has_the_promised_spread():
    values = np.array([10.0, 20.0, 500.0] * 50)  # 500 is clamped to 100
    calibrated = mechanisms.clamped_sum((0.0, 100.0), Fraction(1))
    assert 100 <= calibrated.scale <= 100.001  # sensitivity max(|L|, |U|) = 100, epsilon 1
    exact = float(np.clip(values, 0, 100).sum())
    errors = np.array(
        [mechanisms.noisy_sum(values, (0.0, 100.0), calibrated) - exact for _ in range(RUNS)]
    )
    check_noise(errors, 2 * calibrated.scale**2, calibrated.half_width, 0.95)


def test_the_engine_counts_what_opendps_own_transformation_counts():
    frame = table(300, seed=3)
    frame.loc[5, "region"] = "west"  # a value outside the declared keys: the other cell
    query = parse_queries(
        [
            {
                "type": "count_by",
                "columns": ["sex", "region"],
                "keys": {"sex": ["F", "M"], "region": ["north", "south", "east"]},
            }
        ]
    ).items[0]
    rows = [json.dumps([s, r]) for s, r in zip(frame.sex, frame.region, strict=True)]
    ours = declared_counts(PandasEngine(frame), query)
    assert ours == mechanisms.reference_counts(rows, cell_names(query))
    assert ours[-1] == 1


def test_a_key_held_by_one_person_is_not_released_from_the_data():
    frame = table(400, seed=11)
    frame.loc[0, "region"] = "Ndiaganiao"  # one person's village: its name would identify them
    queries = parse_queries([{"type": "count_by", "columns": ["region"]}])
    planned = plan(queries, Fraction(1), Fraction(1, 10**9))
    engine = PandasEngine(frame)
    seen = set()
    for _ in range(300):
        [answer] = compute(engine, planned)
        seen |= {cell["key"][0] for cell in answer["result"]["cells"]}
    assert seen == {"north", "south", "east"}
    assert answer["threshold"] > 1 and answer["delta"] == "0.000000001"


def test_declared_keys_are_released_even_when_absent_and_nothing_else_is():
    frame = table(200)
    queries = parse_queries(
        [{"type": "count_by", "columns": ["region"], "keys": {"region": ["north", "mars"]}}]
    )
    [answer] = compute(PandasEngine(frame), plan(queries, Fraction(1)))
    assert [cell["key"] for cell in answer["result"]["cells"]] == [["north"], ["mars"]]
    assert "other" in answer["result"]


def test_the_accuracy_figure_agrees_with_the_empirical_error_of_releases():
    frame = table(1000, seed=5)
    queries = parse_queries([{"type": "count"}])
    planned = plan(queries, Fraction(1, 4))
    engine = PandasEngine(frame)
    errors = np.array(
        [compute(engine, planned)[0]["result"]["count"] - 1000 for _ in range(RUNS // 2)]
    )
    half_width = planned.parts[0].mechanisms[0].half_width
    empirical = np.quantile(np.abs(errors), 0.95)
    assert abs(empirical - half_width) <= 0.2 * half_width


def test_the_mean_interval_holds_the_exact_mean_at_least_as_often_as_stated():
    frame = table(300, seed=9)
    exact = frame.age.astype(float).clip(0, 100).mean()
    planned = plan(
        parse_queries([{"type": "mean", "column": "age", "bounds": [0, 100]}]), Fraction(1)
    )
    engine = PandasEngine(frame)
    held = 0
    for _ in range(400):
        result = compute(engine, planned)[0]["result"]
        low, high = result["interval"]
        held += low <= exact <= high
    assert held / 400 >= 0.95 - SIGMAS * math.sqrt(0.95 * 0.05 / 400)


def test_a_quantile_lands_near_the_true_one():
    frame = table(2000, seed=13)
    planned = plan(
        parse_queries(
            [{"type": "quantile", "column": "age", "bounds": [0, 100], "quantiles": [0.5]}]
        ),
        Fraction(1),
    )
    median = frame.age.astype(float).median()
    released = compute(PandasEngine(frame), planned)[0]["result"]["quantiles"][0]["value"]
    assert abs(released - median) <= 10


def test_shares_of_the_budget_add_up_to_the_release():
    queries = parse_queries(
        [
            {"type": "count", "epsilon": "0.1"},
            {"type": "count_by", "columns": ["sex"]},
            {"type": "count_by", "columns": ["region"]},
            {"type": "mean", "column": "age", "bounds": [0, 100]},
        ]
    )
    planned = plan(queries, Fraction(1), Fraction(2, 10**6))
    assert [p.epsilon for p in planned.parts] == [Fraction(1, 10)] + [Fraction(3, 10)] * 3
    assert sum(p.epsilon for p in planned.parts) == 1
    assert [p.delta for p in planned.parts] == [0, Fraction(1, 10**6), Fraction(1, 10**6), 0]
    for part in planned.parts:
        assert sum(m.epsilon_spent for m in part.mechanisms) <= float(part.epsilon) * (1 + 1e-12)


@pytest.mark.parametrize(
    ("queries", "epsilon", "delta", "message"),
    [
        ([{"type": "count_by", "columns": ["sex"]}], "1", "0", "needs a delta above 0"),
        ([{"type": "count", "epsilon": 2}], "1", "0", "above the release's epsilon"),
        ([{"type": "count", "epsilon": 1}, {"type": "count"}], "1", "0", "leaving nothing"),
        ([{"type": "count", "epsilon": "0.5"}], "1", "0", "make them agree"),
    ],
)
def test_budget_splits_that_do_not_add_up_are_refused(queries, epsilon, delta, message):
    with pytest.raises(ValueError, match=message):
        plan(parse_queries(queries), Fraction(epsilon), Fraction(delta))


def test_an_empty_dataset_and_a_text_column_are_refused_before_any_noise():
    planned = plan(parse_queries([{"type": "sum", "column": "sex", "bounds": [0, 1]}]), Fraction(1))
    with pytest.raises(ReleaseError, match="no rows"):
        compute(PandasEngine(table().iloc[:0]), planned)
    with pytest.raises(ReleaseError, match=r"holds '(F|M)'"):
        compute(PandasEngine(table()), planned)

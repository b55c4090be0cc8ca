"""One person against an aggregate release: how often a key held by one person shows, and how
much one person moves a sum, measured over many runs and held to the figures the release states.

OpenDP's noise cannot be seeded (a CSPRNG, on purpose), so each measurement is a share over
many independent draws, compared within five standard errors (a correct mechanism fails such a
check about once in 1.7 million runs); the data and the choice of a person's rows are seeded.
Each test runs in well under a second.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from broker.engines.pandas import PandasEngine
from broker.privacy import mechanisms, release
from broker.privacy.persons import bounded_rows
from broker.privacy.queries import parse_queries
from broker.privacy.release import ReleaseError, compute, plan

SIGMAS = 5
KEYS = 100_000  # one-person keys released in one call: each is one independent trial


def within(measured: float, expected: float, trials: int) -> bool:
    return abs(measured - expected) <= SIGMAS * math.sqrt(expected * (1 - expected) / trials)


def person_rate(calibrated: mechanisms.Calibrated, split: list[int]) -> tuple[float, int]:
    """The share of people, each holding keys of their own with ``split`` rows, of whom some key
    is released; and the number of people measured (KEYS keys in all)."""
    people = KEYS // len(split)
    exact = {f"{i}/{j}": rows for i in range(people) for j, rows in enumerate(split)}
    released = mechanisms.noisy_counts_above_threshold(exact, calibrated)
    return len({key.split("/")[0] for key in released}) / people, people


@pytest.mark.parametrize(
    ("contributions", "split"), [(1, [1]), (3, [3]), (3, [1, 1, 1]), (3, [2, 1])]
)
def test_a_one_person_key_shows_no_more_often_than_the_stated_delta(contributions, split):
    # delta 0.05 makes the rate measurable (thousands of 100,000 keys)
    calibrated = mechanisms.count_by_threshold(Fraction(1, 2), Fraction(1, 20), contributions)
    delta = calibrated.delta_spent
    assert delta <= 0.05
    rate, people = person_rate(calibrated, split)
    assert rate <= delta + SIGMAS * math.sqrt(delta * (1 - delta) / people)
    if split == [1, 1, 1] or contributions == 1:  # the worst split at this scale: delta is tight
        assert rate >= delta * (1 - delta) - SIGMAS * math.sqrt(delta / people)


def test_the_delta_is_the_discrete_laplace_tail_at_the_threshold():
    # P(x + Z >= t) = q**(t - x) / (1 + q), q = exp(-1/scale): the mass at t included
    calibrated = mechanisms.count_by_threshold(Fraction(1), Fraction(1, 10**6))
    q = math.exp(-1 / calibrated.scale)
    exact = q ** (calibrated.threshold - 1) / (1 + q)
    assert exact <= 1e-6 < q ** (calibrated.threshold - 2) / (1 + q)  # the smallest threshold
    assert calibrated.delta_spent == pytest.approx(exact, rel=1e-8)


def test_opendps_own_threshold_map_understates_what_its_mechanism_releases():
    # why the delta is computed here: make_laplace_threshold releases counts at the threshold
    # too, and its map leaves that mass out (a factor exp(1/scale))
    counts = dp.t.make_count_by(
        dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(), TV=int
    )
    measurement = dp.m.make_laplace_threshold(
        counts.output_domain, counts.output_metric, 1.0, threshold=4
    )
    reported = measurement.map(counts.map(1))[1]
    rate = len(measurement({f"p{i}": 1 for i in range(KEYS)})) / KEYS
    ours = mechanisms.threshold_delta(1.0, 1, 4)  # about 2.7 times what OpenDP reports
    assert within(rate, ours, KEYS) and not within(rate, reported, KEYS)


def test_the_worst_split_of_a_persons_rows_is_found():
    # at a large scale, three one-row keys beat one key of three rows: 3 e^(1/s) > e^(3/s)
    scale = 10.0
    by_hand = max(3 * math.exp(1 / scale), math.exp(2 / scale) + math.exp(1 / scale))
    by_hand = max(by_hand, math.exp(3 / scale))
    q = math.exp(-1 / scale)
    assert mechanisms.threshold_delta(scale, 3, 50) == pytest.approx(
        q**50 * by_hand / (1 + q), rel=1e-8
    )


def one_dominant_person(rows: int = 600, seed: int = 4) -> pd.DataFrame:
    """A table of people with one or two rows each, and one person with 150 rows whose e-mail
    address is their own key in ``contact`` (everyone else's is a ward)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "patient": [f"p{i // 2}" for i in range(rows)],
            "contact": rng.choice(["ward A", "ward B", "ward C"], rows),
            # under 90: an age over 89 is a rare tuple, whose rows are one person at worst
            "age": rng.integers(1, 90, rows).astype(str),
        }
    )
    dominant = pd.DataFrame(
        {"patient": ["p-x"] * 150, "contact": ["awa.diop@example.sn"] * 150, "age": ["40"] * 150}
    )
    return pd.concat([frame, dominant], ignore_index=True)


def test_a_person_with_150_rows_counts_as_the_bound_says():
    frame = one_dominant_person()
    queries = parse_queries([{"type": "count"}, {"type": "count", "contributions": 2}])
    planned = plan(queries, Fraction(1), contributions=1)
    assert [p.contributions for p in planned.parts] == [1, 2]
    engine = PandasEngine(frame)
    errors = []
    for seed in range(300):
        answers = compute(engine, planned, "patient", np.random.default_rng(seed))
        errors.append([answers[0]["result"]["count"] - 301, answers[1]["result"]["count"] - 602])
    # 300 patients of two rows and the dominant one: 301 rows at one a person, 602 at two
    assert abs(np.mean(errors, axis=0)).max() < SIGMAS * 2 * planned.parts[1].mechanisms[0].scale


def test_each_person_keeps_at_most_the_bound_and_only_their_own_rows():
    person = np.array([0, 0, 0, 1, 2, 2])
    rows = np.array([150, 1, 2, 1, 1, 5])
    for seed in range(20):
        kept = bounded_rows(person, rows, 3, np.random.default_rng(seed))
        assert (kept <= rows).all()
        assert np.bincount(person, weights=kept).tolist() == [3, 1, 3]
    # removing person 1 leaves what the others keep unchanged (same seed: same order)
    without = bounded_rows(
        np.array([0, 0, 0, 2, 2]), np.array([150, 1, 2, 1, 5]), 3, np.random.default_rng(0)
    )
    assert np.bincount([0, 0, 0, 2, 2], weights=without).tolist() == [3, 0, 3]


def test_a_one_person_key_from_the_data_shows_no_more_often_than_delta_when_bounded():
    # the person's 150 rows under one key of their own (a village no one else lives in):
    # compute refuses it outright (below); the bounded count under the threshold, measured
    # here on the same path, still shows it no more often than delta
    frame = one_dominant_person()
    frame["village"] = np.where(frame.patient == "p-x", "Ndiaganiao", "Dakar")
    queries = parse_queries([{"type": "count_by", "columns": ["village"], "contributions": 3}])
    planned = plan(queries, Fraction(1), Fraction(1, 10))
    engine = PandasEngine(frame.drop(columns=["contact"]))
    with pytest.raises(ReleaseError, match="one person holds most of its rows"):
        compute(engine, planned, "patient")
    people = release.people_of(engine, "patient")
    runs = 2000
    shown = sum(
        any(
            c["key"] == ["Ndiaganiao"]
            for c in release._from_data_keys(
                release._Counter(engine, people, np.random.default_rng(i)), planned.parts[0]
            )["cells"]
        )
        for i in range(runs)
    )
    delta = planned.parts[0].mechanisms[0].delta_spent
    assert delta <= 0.1 and shown / runs <= delta + SIGMAS * math.sqrt(delta * (1 - delta) / runs)


def test_a_key_column_that_identifies_people_is_refused_before_any_noise():
    frame = one_dominant_person()
    planned = plan(
        parse_queries([{"type": "count_by", "columns": ["contact"]}]),
        Fraction(1),
        Fraction(1, 10**6),
    )
    with pytest.raises(ReleaseError, match="'contact' look like emails"):
        compute(PandasEngine(frame), planned, "patient")
    ids = frame.assign(ref=[f"r{i}" for i in range(len(frame))])
    planned = plan(
        parse_queries([{"type": "count_by", "columns": ["ref"]}]), Fraction(1), Fraction(1, 10**6)
    )
    with pytest.raises(ReleaseError, match="'ref' identifies people"):
        compute(PandasEngine(ids), planned)


def test_a_released_key_holding_an_identifier_is_withheld():
    # a shared mailbox of 300 people is no person's key, but an address still never leaves
    frame = pd.DataFrame({"box": ["info@clinic.sn"] * 300 + [f"ward {i % 3}" for i in range(3000)]})
    frame["patient"] = [f"p{i}" for i in range(len(frame))]
    planned = plan(
        parse_queries([{"type": "count_by", "columns": ["box"]}]), Fraction(1), Fraction(1, 10**6)
    )
    # the detector samples the column's values: four values, the address among them
    with pytest.raises(ReleaseError, match="look like emails"):
        compute(PandasEngine(frame), planned, "patient")


def sum_errors(bounds: tuple[float, float], runs: int = 1500) -> tuple[np.ndarray, float]:
    values = np.random.default_rng(2).uniform(bounds[0], bounds[1], 100)
    calibrated = mechanisms.clamped_sum(bounds, Fraction(1))
    exact = float(np.clip(values, *bounds).sum())
    errors = np.array(
        [mechanisms.noisy_sum(values, bounds, calibrated) - exact for _ in range(runs)]
    )
    return errors, calibrated.scale


@pytest.mark.parametrize("bounds", [(-60.0, 120.0), (-120.0, 120.0), (0.0, 120.0), (-0.5, 0.25)])
def test_a_sum_has_the_noise_of_its_largest_absolute_bound_whatever_the_signs(bounds):
    # Laplace noise of scale b has standard deviation b * sqrt(2); the stated b is
    # max(|lower|, |upper|) / epsilon. OpenDP's float sum would use upper - lower (1.5x, 2x).
    errors, scale = sum_errors(bounds)
    stated = max(abs(bounds[0]), abs(bounds[1]))
    assert scale == pytest.approx(stated, rel=1e-9)
    variance, n = 2 * stated**2, errors.size
    assert abs(errors.var() - variance) <= SIGMAS * variance * math.sqrt(5 / n)
    assert abs(errors.mean()) <= SIGMAS * math.sqrt(variance / n)
    if bounds[0] < 0:  # the check tells the float sum's noise apart
        wider = 2 * (bounds[1] - bounds[0]) ** 2
        assert abs(errors.var() - wider) > SIGMAS * wider * math.sqrt(5 / n)

"""The one module that calls the DP library: OpenDP (the OpenDP Project, "OpenDP Library",
https://opendp.org; Python bindings over a Rust core whose constructors each come with a proof).

Everything that makes a release differentially private is OpenDP's: each query is an OpenDP
*transformation* (``make_count``, ``make_count_by_categories``, ``make_count_by``,
``make_clamp`` with ``make_sum``) whose stability map gives its sensitivity, chained to an
OpenDP *measurement* (``make_laplace``, ``make_laplace_threshold``, ``make_private_quantile``)
whose privacy map gives the epsilon (and delta) it spends; the noise scale is found by OpenDP's
``binary_search_param`` as the smallest scale whose map stays within the query's share of the
budget; the noise is drawn by OpenDP's samplers (exact discrete Laplace, Canonne, Kamath and
Steinke 2020, from the operating system's CSPRNG: no seed, on purpose); accuracy figures are
OpenDP's ``discrete_laplacian_scale_to_accuracy`` and ``laplacian_scale_to_accuracy``. No noise
is written here by hand.

How the data reaches OpenDP. Counts are deterministic: the count of each key is what the
broker's engines already compute as count tables (in memory, or out of core for files larger
than memory), and OpenDP's own transformation gives the same vector (a test compares them).
So for counts the broker hands OpenDP the exact count vector, and OpenDP's measurement (the
second half of the chain, calibrated on the chain's privacy map) adds the noise: a contingency
table of 1M rows costs one noise draw per cell, not one value per row across the library's
boundary. Sums, means and quantiles are not computed by the broker: the column's values go to
OpenDP's whole chain (clamp, sum, noise, or the quantile's scores and selection), whose
floating-point analysis (Casacuberta et al., "Widespread Underestimation of Sensitivity in
Differentially Private Libraries", CCS 2022) then covers the arithmetic too.

Neighbouring tables differ by one row added or removed (OpenDP's symmetric distance, d_in = 1):
each row is taken to be one person. Data where one person has several rows needs a bound on
them, which is not asked for yet (README, "Aggregate releases under differential privacy").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import opendp.prelude as dp

from broker.privacy.budget import float_at_most

dp.enable_features("contrib")
LibraryError = dp.OpenDPException  # what a constructor or a search that cannot succeed raises

# One row added or removed: the neighbouring relation of every release.
D_IN = 1
ALPHA = 0.05  # accuracy at 95 % confidence
LAPLACE = "Laplace (discrete, on integer counts)"
LAPLACE_FLOAT = "Laplace (on a clamped sum)"
THRESHOLD = "Laplace with a threshold (stability-based histogram: keys taken from the data)"
QUANTILE = "exponential mechanism over candidates (OpenDP make_private_quantile)"
_TEXT = dp.vector_domain(dp.atom_domain(T=str))
_NUMBERS = dp.vector_domain(dp.atom_domain(T=float, nan=False))
_ROWS = dp.symmetric_distance()


@dataclass(frozen=True)
class Calibrated:
    """A mechanism calibrated to a share of the budget: its noise ``scale``, what OpenDP's
    privacy map says it spends (at most the share), and its ``half_width``: the noise of one
    value stays below it with probability 1 - ALPHA (None where there is no such figure)."""

    mechanism: str
    scale: float
    epsilon_spent: float
    delta_spent: float
    half_width: float | None
    threshold: int | None = None


def _scale_for(make, epsilon: Fraction) -> float:
    """The smallest scale whose chain spends at most ``epsilon`` (OpenDP's binary search)."""
    return dp.binary_search_param(make, d_in=D_IN, d_out=float_at_most(epsilon), T=float)


def count(epsilon: Fraction) -> Calibrated:
    """The number of rows."""
    chain = lambda scale: dp.t.make_count(_TEXT, _ROWS) >> dp.m.then_laplace(scale)  # noqa: E731
    scale = _scale_for(chain, epsilon)
    spent = chain(scale).map(D_IN)
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(LAPLACE, scale, spent, 0.0, accuracy)


def noisy_count(exact: int, calibrated: Calibrated) -> int:
    """OpenDP's measurement of :func:`count`, applied to the count the engine made."""
    transformation = dp.t.make_count(_TEXT, _ROWS)
    laplace = dp.m.make_laplace(
        transformation.output_domain, transformation.output_metric, calibrated.scale
    )
    return int(laplace(int(exact)))


def count_by_categories(categories: Sequence[str], epsilon: Fraction) -> Calibrated:
    """Counts of declared keys, plus one cell for every other value."""
    chain = lambda scale: (  # noqa: E731
        _count_by_categories(categories) >> dp.m.then_laplace(scale)
    )
    scale = _scale_for(chain, epsilon)
    spent = chain(scale).map(D_IN)
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(LAPLACE, scale, spent, 0.0, accuracy)


def _count_by_categories(categories: Sequence[str]):
    return dp.t.make_count_by_categories(
        _TEXT, _ROWS, categories=list(categories), null_category=True
    )


def noisy_counts(exact: Sequence[int], categories: Sequence[str], calibrated: Calibrated):
    """OpenDP's measurement of :func:`count_by_categories` applied to the exact counts (the
    declared keys in order, then the other values), as the engine counted them."""
    transformation = _count_by_categories(categories)
    laplace = dp.m.make_laplace(
        transformation.output_domain, transformation.output_metric, calibrated.scale
    )
    return [int(v) for v in laplace([int(v) for v in exact])]


def reference_counts(rows: Sequence[str], categories: Sequence[str]) -> list[int]:
    """OpenDP's own transformation on the rows (tests: the engine's counts must equal it)."""
    return list(_count_by_categories(categories)(list(rows)))


def _count_by():
    return dp.t.make_count_by(_TEXT, _ROWS, TV=int)


def count_by_threshold(epsilon: Fraction, delta: Fraction) -> Calibrated:
    """Counts of keys taken from the data: OpenDP's stability-based histogram (Laplace noise
    on each present key, released only above a threshold chosen so that a key held by one
    person appears with probability at most delta; Rogers 2023 for the analysis)."""
    transformation = _count_by()
    d_in = transformation.map(D_IN)
    if delta <= 0:
        raise ValueError("keys taken from the data need a delta above 0")
    big = 2**30  # counts are 32-bit integers in OpenDP (TV=int)

    def by_scale(scale: float):
        return dp.m.make_laplace_threshold(
            transformation.output_domain, transformation.output_metric, scale, threshold=big
        )

    # Epsilon depends on the scale alone (the threshold sets delta). OpenDP's map gives a pair
    # that its search cannot order, so the predicates read each part of the pair.
    most_epsilon, most_delta = float_at_most(epsilon), float_at_most(delta)
    scale = dp.binary_search(
        lambda scale: by_scale(scale).map(d_in)[0] <= most_epsilon, bounds=(1e-9, 1e9)
    )

    def by_threshold(threshold: int):
        return dp.m.make_laplace_threshold(
            transformation.output_domain, transformation.output_metric, scale, threshold=threshold
        )

    def within(threshold: int) -> bool:
        spent = by_threshold(threshold).map(d_in)
        return spent[0] <= most_epsilon and spent[1] <= most_delta

    threshold = dp.binary_search(within, bounds=(1, big))
    spent_epsilon, spent_delta = by_threshold(threshold).map(d_in)
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(THRESHOLD, scale, spent_epsilon, spent_delta, accuracy, threshold)


def noisy_counts_above_threshold(
    exact: Mapping[str, int], calibrated: Calibrated
) -> dict[str, int]:
    """OpenDP's thresholded measurement applied to the exact count of each present key."""
    transformation = _count_by()
    measurement = dp.m.make_laplace_threshold(
        transformation.output_domain,
        transformation.output_metric,
        calibrated.scale,
        threshold=calibrated.threshold,
    )
    released = measurement({str(k): int(v) for k, v in exact.items()})
    return {str(k): int(v) for k, v in released.items()}


def _sum_chain(bounds: tuple[float, float], scale: float):
    return (
        dp.t.make_clamp(_NUMBERS, _ROWS, bounds=bounds)
        >> dp.t.then_sum()
        >> dp.m.then_laplace(scale)
    )


def clamped_sum(bounds: tuple[float, float], epsilon: Fraction) -> Calibrated:
    """The sum of a column clamped into ``bounds``."""
    scale = _scale_for(lambda s: _sum_chain(bounds, s), epsilon)
    spent = _sum_chain(bounds, scale).map(D_IN)
    accuracy = dp.laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(LAPLACE_FLOAT, scale, spent, 0.0, accuracy)


def noisy_sum(values: np.ndarray, bounds: tuple[float, float], calibrated: Calibrated) -> float:
    """OpenDP's whole chain (clamp, sum, noise) on the column's values."""
    return float(_sum_chain(bounds, calibrated.scale)(values.astype(float).tolist()))


def _quantile(candidates: Sequence[float], alpha: float, scale: float):
    return dp.m.make_private_quantile(
        _NUMBERS,
        _ROWS,
        dp.max_divergence(),
        candidates=list(candidates),
        alpha=alpha,
        scale=scale,
    )


def quantile(candidates: Sequence[float], alpha: float, epsilon: Fraction) -> Calibrated:
    """One quantile chosen among ``candidates`` by the exponential mechanism. Its error is in
    ranks, not in the value's unit, and depends on how the data spreads near the quantile: no
    half-width is given (README)."""
    scale = _scale_for(lambda s: _quantile(candidates, alpha, s), epsilon)
    spent = _quantile(candidates, alpha, scale).map(D_IN)
    return Calibrated(QUANTILE, scale, spent, 0.0, None)


def noisy_quantile(
    values: np.ndarray, candidates: Sequence[float], alpha: float, calibrated: Calibrated
) -> float:
    return float(_quantile(candidates, alpha, calibrated.scale)(values.astype(float).tolist()))


def half_width(calibrated: Calibrated, alpha: float) -> float:
    """The noise bound of a calibrated Laplace mechanism at another significance ``alpha``."""
    if calibrated.mechanism == LAPLACE_FLOAT:
        return dp.laplacian_scale_to_accuracy(calibrated.scale, alpha)
    return dp.discrete_laplacian_scale_to_accuracy(calibrated.scale, alpha)

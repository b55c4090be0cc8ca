"""The one module that calls the DP library: OpenDP (the OpenDP Project, "OpenDP Library",
https://opendp.org; Python bindings over a Rust core whose constructors each come with a proof).

Each query is an OpenDP *transformation* (``make_count``, ``make_count_by_categories``,
``make_clamp`` with ``make_sum``) whose stability map gives its sensitivity, chained to an OpenDP
*measurement* (``make_laplace``, ``make_private_quantile``) whose privacy map gives the epsilon it
spends; the noise scale is found by OpenDP's ``binary_search_param`` as the smallest scale whose
map stays within the query's share of the budget; the noise is drawn by OpenDP's samplers (exact
discrete Laplace, Canonne, Kamath and Steinke 2020, from the operating system's CSPRNG: no seed,
on purpose); accuracy figures are OpenDP's ``discrete_laplacian_scale_to_accuracy``.

Two figures are computed here rather than read from OpenDP, each for a measured reason
(docs/aggregate-releases.md):

- **The threshold of keys taken from the data, and its delta.** OpenDP 0.16's
  ``make_laplace_threshold`` releases a key whose noisy count is *at or above* its threshold
  but reports as delta the chance of landing strictly above it, which leaves out the mass at the
  threshold (at scale 1 a one-person key shows 2.7 times as often as reported). So the noise is
  OpenDP's discrete Laplace on the present keys' counts, the rule "released when the noisy count
  is at least the threshold" is applied here, and delta is the exact chance that the keys of one
  person (at most ``d_in`` rows) cross it: :func:`threshold_delta`.
- **Sums on a fixed-point grid.** OpenDP's float sum charges a clamped sum ``upper - lower``
  per row (1.5 times ``max(|lower|, |upper|)`` for bounds [-60, 120], twice for [-120, 120]);
  its integer sum charges ``max(|lower|, |upper|)``, the sensitivity of adding or removing one
  value (Dwork et al. 2006). So values are rounded to a decimal grid fine enough to be
  negligible (:func:`sum_grid`) and summed as integers by OpenDP's chain.

How the data reaches OpenDP. Counts are deterministic: the count of each key is what the
broker's engines already compute as count tables (in memory, or out of core), and OpenDP's own
transformation gives the same vector (a test compares them). So for counts the broker hands
OpenDP the exact count vector, and OpenDP's measurement (the second half of the chain,
calibrated on the chain's privacy map) adds the noise. Sums and quantiles hand the column's
values (already bounded to ``d_in`` rows a person, :mod:`broker.privacy.release`) to OpenDP's
whole chain (clamp, sum, noise; or the quantile's scores and selection).

Neighbouring tables differ by one person, who holds at most ``d_in`` rows of what a query reads
(OpenDP's symmetric distance ``d_in``): each calibration takes it, so a query whose rows are
bounded to ``c`` a person is calibrated at ``d_in = c`` (user-level privacy; Wilson et al.,
"Differentially Private SQL with Bounded User Contribution", PoPETs 2020).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
import opendp.prelude as dp

from broker.privacy.budget import float_at_most

dp.enable_features("contrib")
LibraryError = dp.OpenDPException  # what a constructor or a search that cannot succeed raises

ALPHA = 0.05  # accuracy at 95 % confidence
LAPLACE = "Laplace (discrete, on integer counts)"
LAPLACE_SUM = "Laplace (discrete, on a clamped sum on a decimal grid)"
THRESHOLD = "Laplace with a threshold (keys taken from the data)"
QUANTILE = "exponential mechanism over candidates (OpenDP make_private_quantile)"
SIGNIFICANT_DIGITS = 9  # of a sum's grid: max(|lower|, |upper|) spans at most 10**9 grid units
_TEXT = dp.vector_domain(dp.atom_domain(T=str))
_NUMBERS = dp.vector_domain(dp.atom_domain(T=float, nan=False))
_INTEGERS = dp.vector_domain(dp.atom_domain(T="i64"))
_COUNTS = dp.l1_distance(T="i64")
_ROWS = dp.symmetric_distance()


@dataclass(frozen=True)
class Calibrated:
    """A mechanism calibrated to a share of the budget: its noise ``scale`` (in the answer's
    unit), what it spends (at most the share), and its ``half_width``: the noise of one value
    stays below it with probability 1 - ALPHA (None where there is no such figure). ``d_in``:
    the rows one person may hold in what the query reads. ``grid``: a sum's decimal places."""

    mechanism: str
    scale: float
    epsilon_spent: float
    delta_spent: float
    half_width: float | None
    d_in: int = 1
    threshold: int | None = None
    grid: int = 0

    @property
    def unit(self) -> float:
        """One step of a sum's grid (1 for counts)."""
        return 10.0**-self.grid


def _scale_for(make, epsilon: Fraction, d_in: int) -> float:
    """The smallest scale whose chain spends at most ``epsilon`` (OpenDP's binary search)."""
    return dp.binary_search_param(make, d_in=d_in, d_out=float_at_most(epsilon), T=float)


def _count_chain(scale: float):
    return dp.t.make_count(_TEXT, _ROWS) >> dp.m.then_laplace(scale)


def count(epsilon: Fraction, d_in: int = 1) -> Calibrated:
    """The number of rows (at most ``d_in`` of them one person's)."""
    scale = _scale_for(_count_chain, epsilon, d_in)
    spent = _count_chain(scale).map(d_in)
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(LAPLACE, scale, spent, 0.0, accuracy, d_in)


def noisy_count(exact: int, calibrated: Calibrated) -> int:
    """OpenDP's measurement of :func:`count`, applied to the count the engine made."""
    transformation = dp.t.make_count(_TEXT, _ROWS)
    laplace = dp.m.make_laplace(
        transformation.output_domain, transformation.output_metric, calibrated.scale
    )
    return int(laplace(int(exact)))


def count_by_categories(categories: Sequence[str], epsilon: Fraction, d_in: int = 1) -> Calibrated:
    """Counts of declared keys, plus one cell for every other value."""
    chain = lambda scale: (  # noqa: E731
        _count_by_categories(categories) >> dp.m.then_laplace(scale)
    )
    scale = _scale_for(chain, epsilon, d_in)
    spent = chain(scale).map(d_in)
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(LAPLACE, scale, spent, 0.0, accuracy, d_in)


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


def _vector_laplace(scale: float):
    """Discrete Laplace noise on a vector of integer counts, charged on their L1 distance."""
    return dp.m.make_laplace(_INTEGERS, _COUNTS, scale)


def count_by_threshold(epsilon: Fraction, delta: Fraction, d_in: int = 1) -> Calibrated:
    """Counts of keys taken from the data: discrete Laplace noise on each present key's count
    (the keys one person adds or removes change the counts by at most ``d_in`` in L1), a key
    released only when its noisy count is at least the threshold: the smallest whose
    :func:`threshold_delta` stays within ``delta`` (Korolova et al. 2009; Wilson et al. 2020)."""
    if delta <= 0:
        raise ValueError("keys taken from the data need a delta above 0")
    scale = _scale_for(_vector_laplace, epsilon, d_in)
    spent = _vector_laplace(scale).map(d_in)
    threshold = smallest_threshold(scale, d_in, float_at_most(delta))
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA)
    return Calibrated(
        THRESHOLD, scale, spent, threshold_delta(scale, d_in, threshold), accuracy, d_in, threshold
    )


def _log_worst_keys(scale: float, d_in: int) -> float:
    """log of the largest ``sum_k exp(x_k / scale)`` over the ways one person's ``d_in`` rows
    can fall into keys of their own (counts x_k >= 1 adding up to at most ``d_in``): the
    factor of ``q**threshold / (1 + q)`` in :func:`threshold_delta`. One key of ``d_in`` rows
    is the worst case at small scales, ``d_in`` keys of one row at large ones; a dynamic
    programme over the counts finds the worst of every split (``d_in`` is small)."""
    best = [-math.inf] * (d_in + 1)
    best[0] = -math.inf  # no key: nothing can show
    for rows in range(1, d_in + 1):
        best[rows] = max(
            np.logaddexp(first / scale, best[rows - first]) for first in range(1, rows + 1)
        )
    return max(best[1:])


def threshold_delta(scale: float, d_in: int, threshold: int) -> float:
    """The chance that some key held by one person alone (at most ``d_in`` rows) is released,
    bounded by the sum over their keys: a key of count x shows when x + Z >= threshold, and for
    discrete Laplace noise Z of parameter q = exp(-1/scale), P(Z >= k) = q**k / (1 + q) for
    k >= 1. Rounded up by a relative 1e-9, to stay above the float's error.

    Examples
    --------
    >>> q = math.exp(-1)
    >>> exact = q**4 / (1 + q)  # P(1 + Z >= 5)
    >>> exact <= threshold_delta(1.0, 1, 5) <= exact * (1 + 2e-9)
    True
    """
    log_q = -1.0 / scale
    log_delta = threshold * log_q + _log_worst_keys(scale, d_in) - math.log1p(math.exp(log_q))
    return math.exp(log_delta) * (1 + 1e-9)


def smallest_threshold(scale: float, d_in: int, delta: float) -> int:
    """The smallest threshold whose :func:`threshold_delta` is at most ``delta``."""
    log_q = -1.0 / scale
    rest = _log_worst_keys(scale, d_in) - math.log1p(math.exp(log_q))
    threshold = max(d_in + 1, math.ceil((math.log(delta) - rest) / log_q))
    while threshold_delta(scale, d_in, threshold) > delta:
        threshold += 1
    while threshold > d_in + 1 and threshold_delta(scale, d_in, threshold - 1) <= delta:
        threshold -= 1
    return threshold


def noisy_counts_above_threshold(
    exact: Mapping[str, int], calibrated: Calibrated
) -> dict[str, int]:
    """OpenDP's discrete Laplace noise on the exact count of each present key; the keys whose
    noisy count is at least the threshold, with that count."""
    keys = list(exact)
    if not keys:
        return {}
    noisy = _vector_laplace(calibrated.scale)([int(exact[k]) for k in keys])
    return {k: int(n) for k, n in zip(keys, noisy, strict=True) if n >= calibrated.threshold}


def sum_grid(bounds: tuple[float, float]) -> int:
    """The decimal places a sum's values are rounded to: :data:`SIGNIFICANT_DIGITS` digits
    for the larger bound (bounds up to 1e12 give whole numbers).

    Examples
    --------
    >>> sum_grid((0, 120)), sum_grid((-0.5, 0.5)), sum_grid((0, 1e12))
    (6, 9, 0)
    """
    largest = max(abs(bounds[0]), abs(bounds[1]))
    return min(max(SIGNIFICANT_DIGITS - math.floor(math.log10(largest)) - 1, 0), 12)


def _grid_bounds(bounds: tuple[float, float], grid: int) -> tuple[int, int]:
    """The bounds on the grid, inside the stated ones (exact decimal arithmetic)."""
    lower, upper = (Decimal(repr(float(b))).scaleb(grid) for b in bounds)
    return math.ceil(lower), math.floor(upper)


def _sum_chain(bounds: tuple[int, int], scale: float):
    return (
        dp.t.make_clamp(_INTEGERS, _ROWS, bounds=bounds)
        >> dp.t.then_sum()
        >> dp.m.then_laplace(scale)
    )


def clamped_sum(bounds: tuple[float, float], epsilon: Fraction, d_in: int = 1) -> Calibrated:
    """The sum of a column clamped into ``bounds``: sensitivity ``d_in * max(|lower|,
    |upper|)``, whatever the bounds' signs."""
    grid = sum_grid(bounds)
    on_grid = _grid_bounds(bounds, grid)
    scale = _scale_for(lambda s: _sum_chain(on_grid, s), epsilon, d_in)
    spent = _sum_chain(on_grid, scale).map(d_in)
    unit = 10.0**-grid
    accuracy = dp.discrete_laplacian_scale_to_accuracy(scale, ALPHA) * unit
    return Calibrated(LAPLACE_SUM, scale * unit, spent, 0.0, accuracy, d_in, grid=grid)


def noisy_sum(values: np.ndarray, bounds: tuple[float, float], calibrated: Calibrated) -> float:
    """Each value rounded to the grid, then OpenDP's whole chain (clamp, sum, noise)."""
    grid = calibrated.grid
    on_grid = _grid_bounds(bounds, grid)
    scaled = np.clip(values.astype(float) * 10.0**grid, -(2.0**62), 2.0**62)
    chain = _sum_chain(on_grid, calibrated.scale / calibrated.unit)
    return float(Decimal(int(chain(np.rint(scaled).astype(np.int64).tolist()))).scaleb(-grid))


def _quantile(candidates: Sequence[float], alpha: float, scale: float):
    return dp.m.make_private_quantile(
        _NUMBERS,
        _ROWS,
        dp.max_divergence(),
        candidates=list(candidates),
        alpha=alpha,
        scale=scale,
    )


def quantile(
    candidates: Sequence[float], alpha: float, epsilon: Fraction, d_in: int = 1
) -> Calibrated:
    """One quantile chosen among ``candidates`` by the exponential mechanism. Its error is in
    ranks, not in the value's unit, and depends on how the data spreads near the quantile: no
    half-width is given (docs/explanations/differential-privacy.md)."""
    scale = _scale_for(lambda s: _quantile(candidates, alpha, s), epsilon, d_in)
    spent = _quantile(candidates, alpha, scale).map(d_in)
    return Calibrated(QUANTILE, scale, spent, 0.0, None, d_in)


def noisy_quantile(
    values: np.ndarray, candidates: Sequence[float], alpha: float, calibrated: Calibrated
) -> float:
    return float(_quantile(candidates, alpha, calibrated.scale)(values.astype(float).tolist()))


def half_width(calibrated: Calibrated, alpha: float) -> float:
    """The noise bound of a calibrated Laplace mechanism at another significance ``alpha``."""
    unit = calibrated.unit
    return dp.discrete_laplacian_scale_to_accuracy(calibrated.scale / unit, alpha) * unit

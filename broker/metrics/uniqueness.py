"""Risk when the dataset is a sample of a population: population uniqueness, individual risk, k-map.

Everything here is a function of the sample's class sizes (how many equivalence classes hold 1,
2, ... rows) and a sampling fraction pi = n / N (n sample rows, N population rows), so it costs
nothing next to counting the classes.

Population uniqueness: the estimated number U of population classes of size 1 (people unique in
the population on the quasi-identifiers) and the share U / N, with N = round(n / pi) as ARX does.
c_j is the number of sample classes of size j, u the number of classes.

- **Pitman** (Hoshino 2001, "Applying Pitman's sampling formula to microdata disclosure risk
  assessment", J. Official Statistics 17(4)): the class sizes follow Pitman's two-parameter
  sampling formula; theta and alpha are its maximum-likelihood estimates from the c_j, and
  ``U = Gamma(theta + 1) / Gamma(theta + alpha) * N**alpha``. Suited to small fractions.
- **Zayatz** (Zayatz 1991, "Estimation of the number of unique population elements using a
  sample", US Census Bureau SRD report 91/09): the chance that a sample unique is a population
  unique, ``c_1 h(1) / sum_j c_j h(j)`` with h(j) the hypergeometric probability that a population
  class of j people gives exactly one sample row, times ``c_1 / pi``.
- **SNB** (Chen and McNulty 1998, "Estimation of the number of population uniques: the slide
  negative binomial model", ASA Proc. Survey Research Methods): population class sizes follow
  ``P(F = j) = C(j + a - 2, j - 1) b**a (1 - b)**(j - 1)``, each person sampled with chance pi;
  a and b solve the expected numbers of sample classes of size 1 and 2 equal to c_1 and c_2, with
  the number of population classes K from the sample (Haas et al. 1995's Shlosser-type estimator
  D_Sh3), and ``U = K b**a``.
- **Dankar** (Dankar, El Emam, Neisa, Roffey 2012, "Estimating the re-identification risk of
  clinical data sets", BMC Med Inform Decis Mak 12:66): the decision rule that picks one of them,
  as ARX implements it: pi <= 0.1, Pitman (Zayatz when Pitman gives no valid estimate); above,
  the smaller of Zayatz and SNB (Zayatz when SNB gives none). No sample unique: every estimate is 0.

An estimate is valid when finite and in (0, N]; an invalid one counts as none (None here).
Pitman's estimates need 0 < alpha < 1: a sample whose likelihood peaks at alpha <= 0 (fewer
classes than that model expects) gets no Pitman estimate, where ARX's solver, which bounds only
theta, would report a smaller one; Dankar's rule then takes Zayatz, the safer side.

Where this departs from ARX's code (read to check the values, never copied): ARX's SNB multiplies
by ``(1 - d)**(a + 2)`` in its second equation where the expectation divides by it (its own
derivatives divide), and its K estimator subtracts 1 once per distinct size where D_Sh3 subtracts
each class's share; both are done as the papers say here. ARX's Pitman and Zayatz values are
matched (``tests/metrics/test_uniqueness.py``).

Individual risk with sampling weights (Benedetti and Franconi 1998, Franconi and Polettini 2004,
as sdcMicro's ``indivRisk(method = "approx")`` and ``measure_risk`` compute it): a row of a class
with f sample rows and a sum of weights F (the estimated population size of the class), with
``p = f / F``, has risk ``p / (1 - p) * ln(1 / p)`` when f = 1, ``p / (1 - p) - (p / (1 - p))**2
* ln(1 / p)`` when f = 2, ``p / (f - (1 - p))`` when f > 2, and 1 / f when F = f. The expected
number of re-identifications is the sum of the rows' risks (sdcMicro's ``risk_ER``). Without a
weight column every row weighs 1 / pi. (sdcMicro's ``measure_risk`` also subtracts 1e-4 from p to
avoid dividing by zero at p = 1; that is not done here.)

k-map (Sweeney 2002; El Emam and Dankar 2008): the smallest population class among the sample's
classes, from a population table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

PITMAN = "pitman"
ZAYATZ = "zayatz"
SNB = "snb"
DANKAR = "dankar"
# Dankar et al.'s rule uses Pitman up to this sampling fraction.
DANKAR_PITMAN_FRACTION = 0.1


@dataclass(frozen=True)
class Estimate:
    """Estimated population uniques: a count and its share of the population (None: the model
    gives no valid estimate for this sample)."""

    uniques: float | None
    share: float | None


@dataclass(frozen=True)
class PopulationUniqueness:
    sampling_fraction: float
    population_size: int
    pitman: Estimate
    zayatz: Estimate
    snb: Estimate
    dankar: Estimate
    dankar_model: str  # the model the decision rule picked (``dankar`` when there is no unique)

    def as_dict(self) -> dict:
        return {
            "sampling_fraction": self.sampling_fraction,
            "population_size": self.population_size,
            **{
                name: {"uniques": e.uniques, "share": e.share}
                for name, e in (
                    (PITMAN, self.pitman),
                    (ZAYATZ, self.zayatz),
                    (SNB, self.snb),
                    (DANKAR, self.dankar),
                )
            },
            "dankar_model": self.dankar_model,
        }


def population_size(rows: int, sampling_fraction: float) -> int:
    """``round(n / pi)``, as ARX's population model.

    Examples
    --------
    >>> population_size(30162, 0.1)
    301620
    """
    _check_fraction(sampling_fraction)
    return round(rows / sampling_fraction)


def population_uniqueness(
    histogram: Mapping[int, int], sampling_fraction: float
) -> PopulationUniqueness:
    """Pitman, Zayatz, SNB and Dankar's choice from ``histogram`` (class size -> classes).

    Examples
    --------
    >>> result = population_uniqueness({1: 40, 2: 10, 3: 5, 5: 2}, 0.5)
    >>> result.population_size, round(result.zayatz.uniques, 2), round(result.snb.uniques, 2)
    (170, 58.77, 54.47)
    >>> result.dankar_model, round(result.dankar.share, 4)
    ('snb', 0.3204)
    >>> population_uniqueness({2: 3}, 0.05).dankar
    Estimate(uniques=0.0, share=0.0)
    """
    sizes, counts = _histogram(histogram)
    n = int(np.dot(sizes, counts))
    big_n = population_size(n, sampling_fraction)
    if big_n < n:
        raise ValueError(f"The population ({big_n}) cannot be smaller than the sample ({n})")
    pi = n / big_n
    c1 = int(counts[sizes == 1].sum())
    if c1 == 0:
        zero = Estimate(0.0, 0.0)
        return PopulationUniqueness(sampling_fraction, big_n, zero, zero, zero, zero, DANKAR)

    def estimate(uniques: float | None) -> Estimate:
        valid = uniques is not None and math.isfinite(uniques) and 0 < uniques <= big_n
        return Estimate(uniques, uniques / big_n) if valid else Estimate(None, None)

    pitman = estimate(pitman_uniques(sizes, counts, big_n))
    zayatz = estimate(zayatz_uniques(sizes, counts, big_n))
    snb = estimate(snb_uniques(sizes, counts, pi))
    if pi <= DANKAR_PITMAN_FRACTION:
        chosen, model = (pitman, PITMAN) if pitman.uniques is not None else (zayatz, ZAYATZ)
    elif snb.uniques is not None and (zayatz.uniques is None or snb.uniques <= zayatz.uniques):
        chosen, model = snb, SNB
    else:
        chosen, model = zayatz, ZAYATZ
    return PopulationUniqueness(sampling_fraction, big_n, pitman, zayatz, snb, chosen, model)


def zayatz_uniques(sizes: np.ndarray, counts: np.ndarray, big_n: int) -> float:
    """Zayatz's estimate of the population uniques (see the module docstring).

    h(j) / h(1) = j * prod_{i=1}^{j-1} (N - n - i + 1) / (N - i): the hypergeometric ratio
    without the huge binomials.
    """
    n = int(np.dot(sizes, counts))
    top = int(sizes.max())
    i = np.arange(1, top, dtype=float)
    factors = (big_n - n - i + 1) / (big_n - i)
    with np.errstate(divide="ignore"):
        logs = np.concatenate([[0.0], np.cumsum(np.log(np.maximum(factors, 0.0)))])
    ratio = sizes * np.exp(logs[sizes - 1])
    c1 = float(counts[sizes == 1].sum())
    return c1 * (c1 / float(np.dot(counts, ratio))) * big_n / n


def pitman_uniques(sizes: np.ndarray, counts: np.ndarray, big_n: int) -> float | None:
    """Hoshino's Pitman estimate: theta and alpha by maximum likelihood, then
    ``Gamma(theta + 1) / Gamma(theta + alpha) * N**alpha``; None when the likelihood has no
    solution with theta > 0 and 0 < alpha < 1."""
    n = float(np.dot(sizes, counts))
    u = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum()) or 1.0
    above = sizes > 1

    def equations(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # d logL / d theta and d logL / d alpha of Pitman's sampling formula and their
        # derivatives, in digammas and trigammas (sums over i < u, i < n and the sizes).
        theta, alpha = z
        x = theta / alpha
        s1 = (digamma(x + u) - digamma(x + 1)) / alpha  # sum 1 / (theta + i alpha)
        a1 = (trigamma(x + 1) - trigamma(x + u)) / alpha**2  # sum 1 / (theta + i alpha)^2
        s2 = ((u - 1) - theta * s1) / alpha  # sum i / (theta + i alpha)
        b1 = (s1 - theta * a1) / alpha  # sum i / (theta + i alpha)^2
        c1_ = ((u - 1) - 2 * theta * s1 + theta**2 * a1) / alpha**2  # sum i^2 / (...)^2
        t = digamma(n + theta) - digamma(theta + 1)
        dt = trigamma(theta + 1) - trigamma(n + theta)
        j = sizes[above]
        r = float(np.dot(counts[above], digamma(j - alpha) - digamma(1 - alpha)))
        dr = float(np.dot(counts[above], trigamma(1 - alpha) - trigamma(j - alpha)))
        value = np.array([s1 - t, s2 - r])
        jacobian = np.array([[dt - a1, -b1], [-b1, -c1_ - dr]])
        return value, jacobian

    # Hoshino's moment-type starting point, as ARX takes it.
    c = c1 * (c1 - 1) / c2
    denominator = 2 * c1 * u + c1 * c - n * c
    theta0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / denominator if denominator else 1.0
    alpha0 = (theta0 * (c1 - n) + (n - 1) * c1) / (n * u)
    for start in ((theta0, alpha0), (1.0, 0.5), (10.0, 0.5), (100.0, 0.1)):
        found = _newton(equations, np.array(start), lambda z: z[0] > 0 and 0 < z[1] < 1)
        if found is not None:
            theta, alpha = found
            return math.exp(
                math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(big_n)
            )
    return None


def snb_uniques(sizes: np.ndarray, counts: np.ndarray, pi: float) -> float | None:
    """Chen and McNulty's slide negative binomial estimate (see the module docstring); None
    when the two moment equations have no solution with a > 0 and 0 < b < 1."""
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum())
    classes = shlosser_classes(sizes, counts, pi)
    if not math.isfinite(classes) or c2 == 0:
        return None

    def equations(a: float, b: float) -> np.ndarray:
        one, two = snb_sample_probabilities(a, b, pi)
        return np.array([math.log(classes * one / c1), math.log(classes * two / c2)])

    for a, b in ((1.0, 0.5), (0.5, 0.1), (2.0, 0.9), (0.1, 0.01), (5.0, 0.99)):
        found = _solve(
            lambda z: equations(math.exp(z[0]), _logistic(z[1])),
            np.array([math.log(a), _logit(b)]),
        )
        if found is not None:
            a, b = math.exp(found[0]), _logistic(found[1])
            return classes * b**a
    return None


def snb_sample_probabilities(a: float, b: float, pi: float) -> tuple[float, float]:
    """P(a population class gives 1 sample row), P(2 rows) under the slide negative binomial:
    with ``d = (1 - pi)(1 - b)`` and ``D = 1 - d``, ``pi (b/D)**a (1 + a d / D)`` and
    ``a b**a pi**2 (1 - b) (2 - (1 - a) d) / (2 D**(a + 2))``.

    Examples
    --------
    >>> snb_sample_probabilities(1.0, 0.5, 1.0)  # no sampling: P(F = 1), P(F = 2)
    (0.5, 0.25)
    """
    d = (1 - pi) * (1 - b)
    big_d = 1 - d
    one = pi * (b / big_d) ** a * (1 + a * d / big_d)
    two = a * b**a * pi**2 * (1 - b) * (2 - (1 - a) * d) / (2 * big_d ** (a + 2))
    return one, two


def shlosser_classes(sizes: np.ndarray, counts: np.ndarray, pi: float) -> float:
    """Haas, Naughton, Seshadri and Stokes 1995's D_Sh3: the number of population classes,
    ``u + c_1 * [sum j q^2 (1 - q^2)^(j-1) c_j / sum (1 - q)^j ((1 + q)^j - 1) c_j]
    * [sum (1 - q)^j c_j / sum j q (1 - q)^(j-1) c_j]**2`` with q = pi.

    Examples
    --------
    >>> shlosser_classes(np.array([1, 2]), np.array([4, 2]), 1.0)  # the sample is everything
    6.0
    """
    q = pi
    u = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    j = sizes.astype(float)
    a = np.sum(j * q * q * (1 - q * q) ** (j - 1) * counts)
    b = np.sum(((1 - q * q) ** j - (1 - q) ** j) * counts)  # (1-q)^j ((1+q)^j - 1), no overflow
    c = np.sum((1 - q) ** j * counts)
    d = np.sum(j * q * (1 - q) ** (j - 1) * counts)
    if c == 0:
        return u
    return float(u + c1 * (a / b) * (c / d) ** 2)


def individual_risks(sample_sizes: np.ndarray, weight_sums: np.ndarray) -> np.ndarray:
    """Each class's per-row risk from its sample rows f and its sum of weights F (sdcMicro's
    approximation, see the module docstring).

    Examples
    --------
    >>> individual_risks(np.array([3, 1, 2, 4]), np.array([108.0, 1.0, 100.0, 4.0])).round(8)
    array([0.01369863, 1.        , 0.01877883, 0.25      ])
    """
    f = np.asarray(sample_sizes, dtype=float)
    big_f = np.asarray(weight_sums, dtype=float)
    if np.any(big_f < f * (1 - 1e-9)):
        raise ValueError(
            "A class's sum of weights is below its number of rows: sampling weights (people a "
            "row stands for) are at least 1"
        )
    whole = big_f <= f * (1 + 1e-12)
    p = np.where(whole, 0.5, f / np.where(whole, 1.0, big_f))
    ratio = p / (1 - p)
    log_inverse = -np.log(p)
    risk = np.where(
        f == 1,
        ratio * log_inverse,
        np.where(f == 2, ratio - ratio**2 * log_inverse, p / (f - (1 - p))),
    )
    return np.where(whole, 1 / f, risk)


@dataclass(frozen=True)
class IndividualRisk:
    """sdcMicro's individual risk: per-row max and mean, the expected re-identifications (sum
    over rows), and what the weights were."""

    max: float
    average: float
    expected_reidentifications: float
    weights: str  # "uniform 1/pi" or the weight column's name

    def as_dict(self) -> dict:
        return {
            "max": self.max,
            "average": self.average,
            "expected_reidentifications": self.expected_reidentifications,
            "weights": self.weights,
        }


def individual_risk(
    sample_sizes: np.ndarray, weight_sums: np.ndarray, weights: str
) -> IndividualRisk:
    """The summary of :func:`individual_risks` over the rows of every class.

    Examples
    --------
    >>> individual_risk(np.array([1, 3]), np.array([1.0, 3.0]), "w").expected_reidentifications
    2.0
    """
    f = np.asarray(sample_sizes, dtype=float)
    risks = individual_risks(f, weight_sums)
    expected = float(np.dot(f, risks))
    return IndividualRisk(float(risks.max()), expected / float(f.sum()), expected, weights)


def uniform_individual_risk(histogram: Mapping[int, int], sampling_fraction: float) -> float:
    """The expected re-identifications when every row weighs 1 / pi, from the class sizes.

    Examples
    --------
    >>> uniform_individual_risk({1: 3, 4: 1}, 1.0)  # no sampling: one per class
    4.0
    """
    _check_fraction(sampling_fraction)
    sizes, counts = _histogram(histogram)
    risks = individual_risks(sizes, sizes / sampling_fraction)
    return float(np.dot(counts * sizes, risks))


def k_for_expected_reidentifications(rows: int, sampling_fraction: float, bound: float) -> int:
    """The smallest k >= 3 with ``rows * pi / (k - 1 + pi) <= bound``: with uniform weights a
    row of a class of f >= 3 rows has risk ``pi / (f - 1 + pi)``, falling with f, so every class
    of k rows or more keeps the expected re-identifications within the bound.

    Examples
    --------
    >>> k_for_expected_reidentifications(1000, 0.1, 10.0)
    11
    >>> k_for_expected_reidentifications(1000, 1.0, 10.0)  # no sampling: classes <= bound
    100
    >>> k_for_expected_reidentifications(10, 1.0, 5e-324)  # no k can: more than the rows
    11
    """
    _check_fraction(sampling_fraction)
    if bound <= 0 or rows * sampling_fraction / bound > rows:  # (also when it overflows)
        return rows + 1
    return max(3, math.ceil(rows * sampling_fraction / bound + 1 - sampling_fraction - 1e-9))


def digamma(x):
    """psi(x) for x > 0 (float or array): recurrence up to 10, then the asymptotic series.

    Examples
    --------
    >>> round(float(digamma(1.0)), 12)  # minus the Euler-Mascheroni constant
    -0.577215664902
    """
    if isinstance(x, float | int):  # scalars: plain floats, no array overhead
        shift = 0.0
        while x < 10:
            shift -= 1 / x
            x += 1
        return shift + _digamma_series(float(x))
    x, terms = _shifted(x)
    return _digamma_series(x + terms.shape[-1]) - np.sum(terms, axis=-1)


def _shifted(x) -> tuple[np.ndarray, np.ndarray]:
    """x as an array and 1 / (x + m) for m = 0..9 where x + m < 10 (else 0): the recurrence
    psi(x) = psi(x + 10) - sum 1 / (x + m) where x is small, nothing where it is large."""
    x = np.asarray(x, dtype=float)
    small = x < 10
    steps = np.arange(10)
    terms = np.where(small[..., None], 1 / (x[..., None] + steps), 0.0)
    return np.where(small, x, x - 10), terms


def _digamma_series(x):
    inverse2 = 1 / (x * x)
    series = inverse2 * (
        1 / 12 - inverse2 * (1 / 120 - inverse2 * (1 / 252 - inverse2 * (1 / 240 - inverse2 / 132)))
    )
    return np.log(x) - 0.5 / x - series


def trigamma(x):
    """psi'(x) for x > 0 (float or array), as :func:`digamma`.

    Examples
    --------
    >>> round(float(trigamma(1.0)), 12)  # pi^2 / 6
    1.644934066848
    """
    if isinstance(x, float | int):
        shift = 0.0
        while x < 10:
            shift += 1 / (x * x)
            x += 1
        return shift + _trigamma_series(float(x))
    x, terms = _shifted(x)
    return _trigamma_series(x + terms.shape[-1]) + np.sum(terms**2, axis=-1)


def _trigamma_series(x):
    inverse = 1 / x
    inverse2 = inverse * inverse
    series = (
        inverse
        + inverse2 / 2
        + inverse
        * inverse2
        * (
            1 / 6
            - inverse2 * (1 / 30 - inverse2 * (1 / 42 - inverse2 * (1 / 30 - inverse2 * 5 / 66)))
        )
    )
    return series


def _newton(function, start: np.ndarray, inside) -> np.ndarray | None:
    """Newton's method on two equations with their Jacobian, steps halved to stay ``inside``
    the domain; None if it leaves it or does not converge."""
    z = start.astype(float)
    if not inside(z):
        return None
    try:
        for _ in range(100):
            value, jacobian = function(z)
            if not np.all(np.isfinite(value)):
                return None
            delta = np.linalg.solve(jacobian, -value)
            scale = 1.0
            while not inside(z + scale * delta):
                scale /= 2
                if scale < 1e-12:
                    return None
            z = z + scale * delta
            if np.all(np.abs(scale * delta) <= 1e-12 * np.maximum(1.0, np.abs(z))):
                return z
    except (ValueError, ZeroDivisionError, OverflowError, np.linalg.LinAlgError):
        return None
    return None


def _solve(function, start: np.ndarray, tolerance: float = 1e-11) -> np.ndarray | None:
    """Damped Newton on two equations with a central-difference Jacobian; None if it does
    not converge."""
    z = start.astype(float)
    try:
        value = function(z)
        for _ in range(200):
            if not np.all(np.isfinite(value)):
                return None
            if np.max(np.abs(value)) < tolerance:
                return z
            jacobian = np.empty((2, 2))
            for column in range(2):
                h = 1e-6 * max(1.0, abs(z[column]))
                step = np.zeros(2)
                step[column] = h
                jacobian[:, column] = (function(z + step) - function(z - step)) / (2 * h)
            delta = np.linalg.solve(jacobian, -value)
            scale = 1.0
            norm = np.max(np.abs(value))
            while scale > 1e-6:
                trial = z + scale * delta
                trial_value = function(trial)
                if np.all(np.isfinite(trial_value)) and np.max(np.abs(trial_value)) < norm:
                    break
                scale /= 2
            else:
                return None
            z, value = trial, trial_value
    except (ValueError, ZeroDivisionError, OverflowError, np.linalg.LinAlgError):
        return None
    return z if np.max(np.abs(value)) < 1e-8 else None


def _logistic(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _histogram(histogram: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray]:
    items = sorted((int(s), int(c)) for s, c in histogram.items() if int(c) > 0)
    if not items or items[0][0] < 1:
        raise ValueError("The class-size histogram needs classes of at least one row")
    sizes, counts = (np.array(column, dtype=np.int64) for column in zip(*items, strict=True))
    return sizes, counts


def _check_fraction(sampling_fraction: float) -> None:
    if not (0 < sampling_fraction <= 1):
        raise ValueError(f"The sampling fraction must be in (0, 1], got {sampling_fraction}")

"""QID dimension: how many quasi-identifiers to anonymize (Mansour et al. 2021, Algorithm 2).

Naming: the m quasi-identifiers are ranked by falling QIR risk rate (``100 * S / N``, their share of
distinct values; ties keep the given order). *Dimension d* k-anonymizes (Mondrian) the first d of
them and leaves the others as they are.

For each d = 1..m:

- **privacy gain**: percent drop of the average prosecutor risk (classes / N, the mean over rows
  of 1 / class size) on *all m* quasi-identifiers, since an attacker knows all of them:
  ``100 * (risk_original - risk_d) / risk_original``;
- **utility**: non-uniform entropy kept over all m quasi-identifiers, in percent
  (:mod:`broker.anonymize.loss`, after Prasser et al. 2016).

**Balance** is the harmonic mean of the two, ``2 g u / (g + u)`` (0 when both are 0): it is high
only when both are, so neither a large gain bought with all the utility nor a harmless release that
protects nothing wins. The recommended dimension is the d with the highest balance (the smallest d
on a tie).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from broker.anonymize.loss import information_loss
from broker.anonymize.mondrian import mondrian
from broker.engines.codes import encode_column
from broker.metrics.anonymity import k_anonymity
from broker.metrics.risk import qir_risk_percent


@dataclass(frozen=True)
class QidLevel:
    """The outcome of anonymizing the first ``dimension`` quasi-identifiers."""

    dimension: int
    anonymized: tuple[str, ...]
    k: int
    average_risk: float
    privacy_gain_percent: float
    utility_percent: float
    balance: float

    def as_dict(self) -> dict:
        return {
            "dimension": self.dimension,
            "anonymized": list(self.anonymized),
            "k": self.k,
            "average_risk": self.average_risk,
            "privacy_gain_percent": self.privacy_gain_percent,
            "utility_percent": self.utility_percent,
            "balance": self.balance,
        }


@dataclass(frozen=True)
class QidDimension:
    """Every dimension's figures and the recommended one."""

    order: tuple[str, ...]
    risk_percent: dict[str, float]
    original_average_risk: float
    levels: tuple[QidLevel, ...]
    recommended: int

    def as_dict(self) -> dict:
        return {
            "order": list(self.order),
            "risk_percent": dict(self.risk_percent),
            "original_average_risk": self.original_average_risk,
            "levels": [level.as_dict() for level in self.levels],
            "recommended": self.recommended,
        }


def qid_dimension(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    k: int,
    max_suppression: float = 0.0,
) -> QidDimension:
    """Anonymize the riskiest 1, 2, ..., m quasi-identifiers and recommend how many.

    Parameters
    ----------
    frame : DataFrame
    quasi_identifiers : sequence of str
    k : int
        Mondrian's k at every dimension.
    max_suppression : float, default 0
        Passed to :func:`~broker.anonymize.mondrian.mondrian`.

    Returns
    -------
    QidDimension

    Raises
    ------
    ValueError
        Unknown column (named), no quasi-identifier, or Mondrian's own errors (e.g. fewer rows
        than k: :class:`~broker.anonymize.mondrian.AnonymizationError`).

    Examples
    --------
    Anonymizing age alone leaves every row unique on (age, sex, zip); all three are needed:

    >>> frame = pd.DataFrame({"age": [str(20 + i) for i in range(8)],
    ...                       "sex": list("FMFMFMFM"), "zip": list("AABBAABB")})
    >>> result = qid_dimension(frame, ["sex", "zip", "age"], k=2)
    >>> result.order
    ('age', 'sex', 'zip')
    >>> [(lv.dimension, lv.privacy_gain_percent, lv.utility_percent) for lv in result.levels]
    [(1, 0.0, 80.0), (2, 0.0, 80.0), (3, 50.0, 60.0)]
    >>> result.recommended
    3
    """
    quasi_identifiers = list(quasi_identifiers)
    if not quasi_identifiers:
        raise ValueError("No quasi-identifier given")
    baseline = k_anonymity(frame, quasi_identifiers)
    risk = {
        name: qir_risk_percent(encode_column(frame[name]).categories, len(frame))
        for name in quasi_identifiers
    }
    order = sorted(quasi_identifiers, key=lambda name: -risk[name])
    original = baseline.prosecutor_risk.average
    levels = []
    for d in range(1, len(order) + 1):
        result = mondrian(frame, order[:d], k, max_suppression=max_suppression)
        measured = k_anonymity(result.frame, quasi_identifiers)
        average = measured.prosecutor_risk.average
        gain = 100.0 * (original - average) / original
        utility = information_loss(frame, result.frame, quasi_identifiers).utility_percent
        balance = 0.0 if gain + utility <= 0 else 2 * gain * utility / (gain + utility)
        levels.append(
            QidLevel(d, tuple(order[:d]), measured.k, average, gain, utility, max(balance, 0.0))
        )
    best = max(levels, key=lambda level: (level.balance, -level.dimension))
    return QidDimension(
        order=tuple(order),
        risk_percent=risk,
        original_average_risk=original,
        levels=tuple(levels),
        recommended=best.dimension,
    )

"""QIR risk rate and the attribute classification it drives (Mansour et al. 2021, Algorithm 1).

Summing 1 / frequency of each row's value gives the number of distinct values S, so the risk rate
of an attribute is ``100 * S / N`` percent. With thresholds alpha > beta (percent): risk > alpha is
``high``, beta <= risk <= alpha is ``medium``, risk < beta is ``low``. The paper's run on the Adult
data used alpha = 0.2 and beta = 0.01.

The paper names these levels ``sensitive``, ``quasi_identifier`` and ``non_sensitive``. The broker
calls them by their risk instead, because a reader meets "sensitive" and "quasi-identifier" as
*declared roles* too (the values to protect, judged by l and t; the columns an attacker may know)
and as a Mmaq class, and a QIR level says neither: it only ranks how many distinct values a column
has. Reports stored before the rename are read with the new names
(:mod:`broker.metrics.stored`).
"""

from __future__ import annotations

from dataclasses import dataclass

HIGH = "high"  # the paper's "sensitive"
MEDIUM = "medium"  # the paper's "quasi_identifier"
LOW = "low"  # the paper's "non_sensitive"
# The paper's label of each level, for reports stored before the rename.
PAPER_LABELS = {"sensitive": HIGH, "quasi_identifier": MEDIUM, "non_sensitive": LOW}

DEFAULT_ALPHA = 0.2
DEFAULT_BETA = 0.01


@dataclass(frozen=True)
class QirThresholds:
    """Risk thresholds in percent; ``alpha`` must be above ``beta``."""

    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA

    def __post_init__(self) -> None:
        if not (0 <= self.beta < self.alpha <= 100):
            raise ValueError(
                f"QIR thresholds need 0 <= beta < alpha <= 100 (percent), got alpha={self.alpha}, "
                f"beta={self.beta}"
            )


DEFAULT_THRESHOLDS = QirThresholds()


def qir_risk_percent(categories: int, rows: int) -> float:
    """``100 * S / N``.

    Examples
    --------
    >>> round(qir_risk_percent(73, 32561), 4)
    0.2242
    """
    if rows <= 0:
        raise ValueError("The dataset has no rows: the QIR risk rate is not defined")
    return 100.0 * categories / rows


def qir_class(risk_percent: float, thresholds: QirThresholds = DEFAULT_THRESHOLDS) -> str:
    """An attribute's QIR risk level (high, medium or low) from its QIR risk rate.

    Examples
    --------
    >>> qir_class(0.22), qir_class(0.1), qir_class(0.005)
    ('high', 'medium', 'low')
    """
    if risk_percent > thresholds.alpha:
        return HIGH
    if risk_percent >= thresholds.beta:
        return MEDIUM
    return LOW

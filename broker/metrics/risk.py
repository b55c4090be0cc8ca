"""QIR risk rate and the attribute classification it drives (Mansour et al. 2021, Algorithm 1).

Summing 1 / frequency of each row's value gives the number of distinct values S, so the risk rate
of an attribute is ``100 * S / N`` percent. With thresholds alpha > beta (percent): risk > alpha is
``sensitive``, beta <= risk <= alpha is ``quasi_identifier``, risk < beta is ``non_sensitive``. The
paper's run on the Adult data used alpha = 0.2 and beta = 0.01.
"""

from __future__ import annotations

from dataclasses import dataclass

SENSITIVE = "sensitive"
QUASI_IDENTIFIER = "quasi_identifier"
NON_SENSITIVE = "non_sensitive"

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
    """Classify an attribute by its QIR risk rate.

    Examples
    --------
    >>> qir_class(0.22), qir_class(0.1), qir_class(0.005)
    ('sensitive', 'quasi_identifier', 'non_sensitive')
    """
    if risk_percent > thresholds.alpha:
        return SENSITIVE
    if risk_percent >= thresholds.beta:
        return QUASI_IDENTIFIER
    return NON_SENSITIVE

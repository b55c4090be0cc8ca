"""QID dimension: order by QIR risk, gains and utility per dimension, the balance rule."""

import numpy as np
import pandas as pd
import pytest

from broker.anonymize import information_loss, qid_dimension
from broker.anonymize.mondrian import mondrian
from broker.metrics import k_anonymity


def adult_like(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 90, rows).astype(str),
            "sex": rng.choice(["F", "M"], rows),
            "race": rng.choice(["a", "b", "c", "d", "e"], rows, p=[0.8, 0.1, 0.05, 0.03, 0.02]),
            "education": rng.choice([f"e{i}" for i in range(16)], rows),
        }
    )


def test_order_by_falling_risk_and_figures_match_direct_measures():
    frame = adult_like(600, 1)
    qis = ["sex", "race", "education", "age"]
    result = qid_dimension(frame, qis, k=5)
    assert result.order == ("age", "education", "race", "sex")
    assert result.risk_percent["age"] == pytest.approx(100 * frame["age"].nunique() / 600)
    original = k_anonymity(frame, qis).prosecutor_risk.average
    assert result.original_average_risk == pytest.approx(original)
    for level in result.levels:
        anonymized = mondrian(frame, list(result.order[: level.dimension]), k=5).frame
        average = k_anonymity(anonymized, qis).prosecutor_risk.average
        assert level.average_risk == pytest.approx(average)
        assert level.privacy_gain_percent == pytest.approx(100 * (original - average) / original)
        utility = information_loss(frame, anonymized, qis).utility_percent
        assert level.utility_percent == pytest.approx(utility)
        g, u = level.privacy_gain_percent, level.utility_percent
        assert level.balance == pytest.approx(2 * g * u / (g + u))
    assert result.levels[-1].k >= 5
    best = max(result.levels, key=lambda level: level.balance)
    assert result.recommended == best.dimension


def test_ties_in_risk_keep_the_given_order_and_ties_in_balance_pick_the_smaller_d():
    frame = pd.DataFrame({"a": list("xyxyxyxy"), "b": list("ppqqppqq")})
    result = qid_dimension(frame, ["b", "a"], k=2)
    assert result.order == ("b", "a")
    balances = [level.balance for level in result.levels]
    assert result.recommended == 1 + balances.index(max(balances))


def test_as_dict_is_plain_data():
    result = qid_dimension(adult_like(50, 2), ["age", "sex"], k=2)
    data = result.as_dict()
    assert data["order"] == list(result.order)
    assert [level["dimension"] for level in data["levels"]] == [1, 2]


def test_errors():
    frame = adult_like(10, 3)
    with pytest.raises(ValueError, match="No quasi-identifier"):
        qid_dimension(frame, [], k=2)
    with pytest.raises(ValueError, match="Quasi-identifier 'zip'"):
        qid_dimension(frame, ["zip"], k=2)
    with pytest.raises(ValueError, match="k = 20 needs at least 20 rows"):
        qid_dimension(frame, ["age"], k=20)

"""The benchmarks' data: :func:`adult_like`, a table shaped like UCI Adult; :func:`write_csv`.

The data are generated, not downloaded: 15 columns named and typed like the Adult census table
(ints for numeric columns, Python ``str`` objects for categorical ones), with Adult's cardinalities
and skewed marginals, drawn from a seeded numpy generator so every run measures the same frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20240601
CSV_CHUNK = 1_000_000  # rows generated and written at a time by write_csv

# Marginal counts of the Adult training table (32,561 rows), "?" being its missing-value mark.
WORKCLASS = {
    "Private": 22696,
    "Self-emp-not-inc": 2541,
    "Local-gov": 2093,
    "?": 1836,
    "State-gov": 1298,
    "Self-emp-inc": 1116,
    "Federal-gov": 960,
    "Without-pay": 14,
    "Never-worked": 7,
}
# education -> (count, education-num)
EDUCATION = {
    "HS-grad": (10501, 9),
    "Some-college": (7291, 10),
    "Bachelors": (5355, 13),
    "Masters": (1723, 14),
    "Assoc-voc": (1382, 11),
    "11th": (1175, 7),
    "Assoc-acdm": (1067, 12),
    "10th": (933, 6),
    "7th-8th": (646, 4),
    "Prof-school": (576, 15),
    "9th": (514, 5),
    "12th": (433, 8),
    "Doctorate": (413, 16),
    "5th-6th": (333, 3),
    "1st-4th": (168, 2),
    "Preschool": (51, 1),
}
MARITAL_STATUS = {
    "Married-civ-spouse": 14976,
    "Never-married": 10683,
    "Divorced": 4443,
    "Separated": 1025,
    "Widowed": 993,
    "Married-spouse-absent": 418,
    "Married-AF-spouse": 23,
}
OCCUPATION = {
    "Prof-specialty": 4140,
    "Craft-repair": 4099,
    "Exec-managerial": 4066,
    "Adm-clerical": 3770,
    "Sales": 3650,
    "Other-service": 3295,
    "Machine-op-inspct": 2002,
    "?": 1843,
    "Transport-moving": 1597,
    "Handlers-cleaners": 1370,
    "Farming-fishing": 994,
    "Tech-support": 928,
    "Protective-serv": 649,
    "Priv-house-serv": 149,
    "Armed-Forces": 9,
}
RELATIONSHIP = {
    "Husband": 13193,
    "Not-in-family": 8305,
    "Own-child": 5068,
    "Unmarried": 3446,
    "Wife": 1568,
    "Other-relative": 981,
}
RACE = {
    "White": 27816,
    "Black": 3124,
    "Asian-Pac-Islander": 1039,
    "Amer-Indian-Eskimo": 311,
    "Other": 271,
}
NATIVE_COUNTRY = {
    "United-States": 29170,
    "Mexico": 643,
    "?": 583,
    "Philippines": 198,
    "Germany": 137,
    "Canada": 121,
    "Puerto-Rico": 114,
    "El-Salvador": 106,
    "India": 100,
    "Cuba": 95,
    "England": 90,
    "Jamaica": 81,
    "South": 80,
    "China": 75,
    "Italy": 73,
    "Dominican-Republic": 70,
    "Vietnam": 67,
    "Guatemala": 64,
    "Japan": 62,
    "Poland": 60,
    "Columbia": 59,
    "Taiwan": 51,
    "Haiti": 44,
    "Iran": 43,
    "Portugal": 37,
    "Nicaragua": 34,
    "Peru": 31,
    "France": 29,
    "Greece": 29,
    "Ecuador": 28,
    "Ireland": 24,
    "Hong": 20,
    "Cambodia": 19,
    "Trinadad&Tobago": 19,
    "Laos": 18,
    "Thailand": 18,
    "Yugoslavia": 16,
    "Outlying-US(Guam-USVI-etc)": 14,
    "Honduras": 13,
    "Hungary": 13,
    "Scotland": 12,
    "Holand-Netherlands": 1,
}


def _draw(rng: np.random.Generator, counts: dict, rows: int) -> np.ndarray:
    """Category labels as Python ``str`` objects, drawn with the given marginal counts."""
    labels = np.array(list(counts), dtype=object)
    weights = np.array([c[0] if isinstance(c, tuple) else c for c in counts.values()], float)
    return labels[rng.choice(labels.size, size=rows, p=weights / weights.sum())]


def _sparse_amounts(rng, rows, zero_share, distinct, low, high) -> np.ndarray:
    """Mostly zero; otherwise one of ``distinct`` fixed amounts with Zipf-like frequencies."""
    amounts = np.unique(np.exp(rng.uniform(np.log(low), np.log(high), distinct * 2)).astype(int))
    amounts = rng.permutation(amounts)[:distinct]
    weights = 1.0 / np.arange(1, amounts.size + 1) ** 1.1
    values = amounts[rng.choice(amounts.size, size=rows, p=weights / weights.sum())]
    return np.where(rng.random(rows) < zero_share, 0, values).astype(np.int64)


def adult_like(rows: int, seed: int = SEED) -> pd.DataFrame:
    """A frame with Adult's 15 columns, dtypes, cardinalities and skewed marginals.

    Numeric columns are int64; categorical ones are object columns of Python ``str`` (each label
    one shared object, as pandas' CSV reader produces). education-num follows education, and
    Husband/Wife fix the sex, as in the real table; other columns are drawn independently.
    """
    rng = np.random.default_rng(seed)
    age = np.clip(17 + rng.gamma(2.5, 8.6, rows), 17, 90).astype(np.int64)
    fnlwgt = np.clip(rng.lognormal(12.02, 0.52, rows), 12_285, 1_484_705).astype(np.int64)
    education = _draw(rng, EDUCATION, rows)
    number = {name: num for name, (_count, num) in EDUCATION.items()}
    education_num = pd.Series(education).map(number).to_numpy(np.int64)
    relationship = _draw(rng, RELATIONSHIP, rows)
    # Husbands are men and wives women; of the other Adult rows 8,597 of 17,800 are men.
    male = (rng.random(rows) < 8597 / 17800) | (relationship == "Husband")
    male &= relationship != "Wife"
    sex = np.array(["Female", "Male"], dtype=object)[male.astype(np.int64)]
    hours = np.where(
        rng.random(rows) < 0.467, 40, np.clip(np.round(rng.normal(40, 13, rows)), 1, 99)
    ).astype(np.int64)
    income = np.array(["<=50K", ">50K"], dtype=object)[
        (rng.random(rows) < 7841 / 32561).astype(np.int64)
    ]
    return pd.DataFrame(
        {
            "age": age,
            "workclass": _draw(rng, WORKCLASS, rows),
            "fnlwgt": fnlwgt,
            "education": education,
            "education-num": education_num,
            "marital-status": _draw(rng, MARITAL_STATUS, rows),
            "occupation": _draw(rng, OCCUPATION, rows),
            "relationship": relationship,
            "race": _draw(rng, RACE, rows),
            "sex": sex,
            "capital-gain": _sparse_amounts(rng, rows, 0.917, 119, 100, 99_999),
            "capital-loss": _sparse_amounts(rng, rows, 0.953, 92, 150, 4_356),
            "hours-per-week": hours,
            "native-country": _draw(rng, NATIVE_COUNTRY, rows),
            "income": income,
        }
    )


def write_csv(path: Path, rows: int, columns: list[str] | None = None) -> None:
    """An Adult-shaped CSV file of ``rows`` rows (of ``columns``, default all 15), written chunk
    by chunk (each chunk its own seed, the header once), never whole in memory."""
    written = 0
    with path.open("w", encoding="utf-8", newline="") as file:
        while written < rows:
            chunk = adult_like(min(CSV_CHUNK, rows - written), seed=written + 1)
            chunk = chunk if columns is None else chunk[columns]
            chunk.to_csv(file, index=False, header=written == 0)
            written += len(chunk)

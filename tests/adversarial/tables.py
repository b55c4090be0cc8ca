"""Tables a hostile member cloud builds, and their serializations (CSV, JSON, Parquet)."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

AGE_BANDS = ["20-29", "30-39", "40-49", "50-59", "60-69"]
DIAGNOSES = ["flu", "asthma", "diabetes", "malaria", "measles", "hepatitis"]
FIRST_NAMES = ["Khady", "Fatou", "Cheikh", "Nogaye", "Serigne", "Samba", "Abdou", "Bintou"]
LAST_NAMES = ["Diop", "Ndiaye", "Fall", "Sow", "Ba", "Sy", "Gueye", "Faye", "Diallo", "Mbaye"]


def rng(seed: int = 7) -> np.random.Generator:
    return np.random.default_rng(seed)


def harmless(n: int = 300, seed: int = 7) -> pd.DataFrame:
    """Coarse, well-mixed data every seed policy approves as it is (QI age_band, sex)."""
    r = rng(seed)
    return pd.DataFrame(
        {
            "age_band": r.choice(AGE_BANDS, n),
            "sex": r.choice(["F", "M"], n),
            "diagnosis": r.choice(DIAGNOSES, n),
        }
    )


def national_ids(n: int, seed: int = 11) -> list[str]:
    """Distinct 13-digit Senegalese-looking national ids (as text)."""
    r = rng(seed)
    ids = 10**12 + r.choice(10**9, n, replace=False)  # an int population: no big array
    return [f"1{i}" for i in ids]


def phone_numbers(n: int, seed: int = 12) -> list[int]:
    """Distinct 9-digit mobile numbers, none of them round."""
    r = rng(seed)
    numbers = 771_000_000 + r.choice(8_000_000, n * 2, replace=False)
    return [int(p) for p in numbers if p % 1000 not in (0, 999)][:n]


def emails(n: int, seed: int = 13) -> list[str]:
    r = rng(seed)
    return [
        f"{r.choice(FIRST_NAMES).lower()}.{r.choice(LAST_NAMES).lower()}{i:03d}@hopital.sn"
        for i in range(n)
    ]


def birth_dates(n: int, seed: int = 14) -> list[str]:
    r = rng(seed)
    days = r.choice(np.arange(0, 60 * 365), n, replace=False)
    return [str((pd.Timestamp("1940-01-01") + pd.Timedelta(days=int(d))).date()) for d in days]


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def json_bytes(frame: pd.DataFrame) -> bytes:
    return json.dumps(frame.to_dict(orient="records"), default=str).encode()


def parquet_bytes(frame: pd.DataFrame, index: bool = False, **options) -> bytes:
    out = io.BytesIO()
    frame.to_parquet(out, index=index, **options)
    return out.getvalue()


def serialize(frame: pd.DataFrame, fmt: str) -> tuple[bytes, str]:
    """(bytes, file name) of ``frame`` as ``fmt``."""
    if fmt == "csv":
        return csv_bytes(frame), "data.csv"
    if fmt == "json":
        return json_bytes(frame), "data.json"
    return parquet_bytes(frame), "data.parquet"

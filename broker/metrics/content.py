"""What an attribute's values are, read from a sample of its distinct values.

Counting categories cannot tell an e-mail column from a diagnosis column of the same size, and a
sender's declared roles cannot be trusted to: so the values themselves are looked at.

- ``values``: ``number`` (every present value parses as a finite number, as written in CSV too),
  ``date`` (dates or date-times), ``code`` (no blanks, at least one digit: record numbers, ids),
  else ``text``.
- ``direct_identifier``: ``email`` (addresses), ``phone`` (numbers valid for one of the given
  regions, by Google's libphonenumber through ``phonenumbers``, also found inside free text),
  ``national_id`` (numbers that pass a national identifier's checksum, by ``python-stdnum``: the
  French NIR and tax number, the Kenyan PIN, the Senegalese NINEA), or None. A column is a direct
  identifier when at least :data:`DIRECT_SHARE` of its sampled distinct values hold one, whatever
  its name, its counts or its declared role.

Known limit: person names in free text are not detected (no named-entity model ships offline);
a free-text column of names is caught only by its counts (every value distinct: an identifier).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import phonenumbers
from stdnum.fr import nif as fr_nif
from stdnum.fr import nir as fr_nir
from stdnum.ke import pin as ke_pin
from stdnum.sn import ninea as sn_ninea

NUMBER, DATE, CODE, TEXT = "number", "date", "code", "text"
EMAIL, PHONE, NATIONAL_ID = "email", "phone", "national_id"
DEFAULT_REGIONS = ("SN", "FR", "NG", "KE")
DIRECT_SHARE = 0.3
SAMPLE = 100

# Matched against whole blank-separated tokens of at most 254 characters (an address's limit):
# searching long text with open-ended quantifiers takes time quadratic in its length.
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,252}\.[A-Za-z]{2,63}")
_MAX_TOKEN = 254
# Content is read from the first characters of each sampled value: enough to see an address, a
# phone number or an id, and a bound on the work a few long cells can cause.
_MAX_CHARS = 4096
_DIGITS = re.compile(r"\d")
_DIGIT_RUN = re.compile(r"\d{8}")
_NATIONAL_IDS = {"FR": (fr_nir, fr_nif), "KE": (ke_pin,), "SN": (sn_ninea,)}
_MIN_PHONE_DIGITS = 8


@dataclass(frozen=True)
class Content:
    values: str
    direct_identifier: str | None


def content_of(distinct: Sequence, regions: Sequence[str] = DEFAULT_REGIONS) -> Content:
    """Classify a column from (a sample of) its distinct values; missing values are ignored.

    Examples
    --------
    >>> content_of(["ana@example.org", "bo@example.sn"])
    Content(values='text', direct_identifier='email')
    >>> content_of(["28", "31.5", ""])
    Content(values='number', direct_identifier=None)
    >>> content_of(["call 77 123 45 67", "ok", "78 555 12 12 after 6"], ["SN"])
    Content(values='text', direct_identifier='phone')
    """
    present = [v for v in distinct if not _missing(v)]
    if not present:
        return Content(TEXT, None)
    present = [v[:_MAX_CHARS] if isinstance(v, str) else v for v in present]
    kind = _kind(present)
    text = [v if isinstance(v, str) else str(v) for v in present]
    return Content(kind, _direct_identifier(text, regions))


def sample_distinct(column: pd.Series, codes: np.ndarray, categories: int) -> list:
    """Up to :data:`SAMPLE` distinct values of ``column``, spread over its category codes."""
    some_row = np.empty(categories, dtype=np.int64)
    some_row[codes] = np.arange(len(codes))
    chosen = np.unique(np.linspace(0, categories - 1, min(categories, SAMPLE)).astype(np.int64))
    return column.iloc[some_row[chosen]].tolist()


def _missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float) and value != value:
        return True
    return isinstance(value, str) and not value.strip()


def _kind(values: list) -> str:
    series = pd.Series(values, dtype=object)
    if series.map(lambda v: isinstance(v, bool)).any():
        return TEXT
    numbers = pd.to_numeric(series, errors="coerce")
    if numbers.notna().all() and np.isfinite(numbers.to_numpy(dtype=float)).all():
        return NUMBER
    if _dates(series):
        return DATE
    text = series.astype(str)
    code_like = ~text.str.contains(r"\s") & text.str.contains(r"\d")
    if (code_like | text.str.contains(r"\d{4}")).all():  # "ref 1492552" is a code
        return CODE
    return TEXT


def _dates(series: pd.Series) -> bool:
    import datetime

    if series.map(lambda v: isinstance(v, datetime.date | np.datetime64)).all():
        return True
    text = series.astype(str)
    if not text.str.contains(r"^\d{4}-\d{2}").all():
        return False
    parsed = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
    return bool(parsed.notna().all())


def _direct_identifier(values: list[str], regions: Sequence[str]) -> str | None:
    needed = DIRECT_SHARE * len(values)
    if sum(_holds_email(v) for v in values) >= needed:
        return EMAIL
    validators = [m for r in regions for m in _NATIONAL_IDS.get(r, ())]
    if validators and sum(any(m.is_valid(v) for m in validators) for v in values) >= needed:
        return NATIONAL_ID
    candidates = [v for v in values if len(_DIGITS.findall(v)) >= _MIN_PHONE_DIGITS]
    if len(candidates) < needed:
        return None
    phones = sum(_has_phone(v, regions) for v in candidates)
    return PHONE if phones >= needed else None


def identifier_in_text(text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> str | None:
    """What direct identifier one piece of text holds ("an e-mail address", "a phone number",
    "a national id", "a run of 8 or more digits"), or None. For column names, which cross the
    border with the data but are not measured.

    Examples
    --------
    >>> identifier_in_text("ref 1850578006084"), identifier_in_text("zip_75001")
    ('a run of 8 or more digits', None)
    """
    text = text[:_MAX_CHARS]
    if _holds_email(text):
        return "an e-mail address"
    if _DIGIT_RUN.search(text):
        return "a run of 8 or more digits"
    validators = [m for r in regions for m in _NATIONAL_IDS.get(r, ())]
    if any(m.is_valid(token) for token in text.split() for m in validators):
        return "a national id"
    if len(_DIGITS.findall(text)) >= _MIN_PHONE_DIGITS and _has_phone(text, regions):
        return "a phone number"
    return None


def _holds_email(text: str) -> bool:
    return any(
        len(token) <= _MAX_TOKEN and _EMAIL.fullmatch(token.strip("<>()[],;:'\"")) is not None
        for token in text.split()
        if "@" in token
    )


def _has_phone(text: str, regions: Sequence[str]) -> bool:
    for region in regions:
        for _match in phonenumbers.PhoneNumberMatcher(text, region, phonenumbers.Leniency.VALID):
            return True
    return False

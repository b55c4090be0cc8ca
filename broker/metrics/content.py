"""What an attribute's values are, read from a sample of its distinct values.

Counting categories cannot tell an e-mail column from a diagnosis column of the same size, and a
sender's declared roles cannot be trusted to: so the values themselves are looked at.

- ``values``: ``number`` (every present value parses as a finite number, as written in CSV too),
  ``date`` (dates or date-times), ``code`` (no blanks, at least one digit: record numbers, ids),
  else ``text``.
- ``direct_identifier``: ``email`` (addresses), ``phone`` (numbers valid for one of the given
  regions, by Google's libphonenumber through ``phonenumbers``, also found inside free text),
  ``national_id`` (numbers that pass a national identifier's checksum, by ``python-stdnum``: the
  French NIR and tax number, the Kenyan PIN, the Senegalese NINEA), or None. A column of text or
  codes is a direct identifier when *one* of its sampled values holds one (a column of plain
  numbers when :data:`NUMBERS_SHARE` of them do), whatever its name, counts or declared role.

How values are read, so that a hostile sender can neither hide an identifier nor make the work
explode: every sampled value is read whole (cells are at most ``ReadLimits.max_cell_chars``
long); one linear pass finds the candidates (tokens with an ``@``; runs of digits and
separators), and only those go to libphonenumber and the checksums. Up to :data:`SAMPLE` distinct
values per column are read, all of them when there are fewer, else a random choice the sender
cannot predict.

Known limit: person names in free text are not detected (no named-entity model ships offline);
a free-text column of names is caught only by its counts (every value distinct: an identifier).
"""

from __future__ import annotations

import datetime
import re
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import phonenumbers
from stdnum.fr import nif as fr_nif
from stdnum.fr import nir as fr_nir
from stdnum.ke import pin as ke_pin
from stdnum.sn import ninea as sn_ninea

from broker.missing import is_missing

NUMBER, DATE, CODE, TEXT = "number", "date", "code", "text"
EMAIL, PHONE, NATIONAL_ID = "email", "phone", "national_id"
DEFAULT_REGIONS = ("SN", "FR", "NG", "KE")
NUMBERS_SHARE = 0.3
SAMPLE = 1000
# Digits with separators, 7 to 26 characters: a phone number or an id written with spaces,
# dots, dashes, slashes, brackets or thin spaces. Bounded, so the scan is linear.
_NUMBER_RUN = re.compile(r"\+?\d[\d \-./()\u00a0\u2009\u202f\u00b7]{5,24}\d")
# Number-like runs checked per report (about 100 us each): past it, a column fails closed.
MAX_CANDIDATES = 50_000
# Nine digits or more in a row: an id or a phone number, never a year or a count as people
# write them (1,000,000).
_LONG_NUMBER = re.compile(r"\d{9,}")


# Words that name the special categories of personal data (GDPR art. 9 and 10; Senegal's law
# 2008-12 art. 4; the NDPA 2023 s. 30) and the usual sensitive attributes of the
# anonymization literature (diagnosis, salary), in English and French. Matched against the
# words of a column's name: a guess, said to be one wherever it is shown.
SENSITIVE_WORDS = frozenset(
    re.findall(
        r"\w+",
        """
        diagnosis diagnostic diagnose disease diseases illness maladie pathologie pathology
        health sante medical medication medicine drug drugs treatment traitement symptom
        symptoms hiv vih aids sida disability handicap pregnancy grossesse genetic genetique
        genome dna biometric biometrique blood sang religion religious belief beliefs faith
        ethnicity ethnic ethnie race racial sexual sexuality orientation political politics
        opinion opinions union syndicat criminal conviction convictions offence offense casier
        salary salaire income revenu wage wages
        """,
    )
)


def looks_sensitive(names: Sequence[str]) -> list[str]:
    """The names among ``names`` that look like sensitive attributes, judged by their words
    alone (a guess: a diagnosis column called ``x3`` is not found, and ``blood_bank_id`` is).

    Examples
    --------
    >>> looks_sensitive(["NIN", "Age", "Disease", "main_diagnosis", "Salary", "zip", "Santé"])
    ['Disease', 'main_diagnosis', 'Salary', 'Santé']
    """
    found = []
    for name in names:
        spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
        plain = unicodedata.normalize("NFKD", spaced.casefold())
        words = set(re.findall(r"[a-z0-9]+", plain.encode("ascii", "ignore").decode()))
        if words & SENSITIVE_WORDS:
            found.append(name)
    return found


class ScanBudget:
    """Number-like runs a report may still check; shared by its columns."""

    def __init__(self, candidates: int = MAX_CANDIDATES):
        self.left = candidates


# Matched against whole blank-separated tokens of at most 254 characters (an address's limit):
# searching long text with open-ended quantifiers takes time quadratic in its length.
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,252}\.[A-Za-z]{2,63}")
_MAX_TOKEN = 254
_DIGITS = re.compile(r"\d")
_BLANK = re.compile(r"\s")
_FOUR_DIGITS = re.compile(r"\d{4}")
_ISO_DATE_START = re.compile(r"^\d{4}-\d{2}")
_MAX_NAME_DIGITS = 6  # in a column name: a year and a month, not a phone number or an id
_TOKENS = re.compile(r"[A-Za-z0-9+/=]{20,}")
_NATIONAL_IDS = {"FR": (fr_nir, fr_nif), "KE": (ke_pin,), "SN": (sn_ninea,)}


@dataclass(frozen=True)
class Content:
    values: str
    direct_identifier: str | None


def content_of(
    distinct: Sequence,
    regions: Sequence[str] = DEFAULT_REGIONS,
    budget: ScanBudget | None = None,
) -> Content:
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
    present = [v for v in distinct if not is_missing(v)]
    if not present:
        return Content(TEXT, None)
    kind = _kind(present)
    text = [v if isinstance(v, str) else str(v) for v in present]
    return Content(kind, _direct_identifier(text, regions, kind, budget or ScanBudget()))


def sample_distinct(distinct: pd.Series) -> list:
    """Every one of a column's ``distinct`` values up to :data:`SAMPLE`, else a random choice of
    them (from the operating system's randomness: a sender cannot place values where it won't
    look)."""
    if len(distinct) <= SAMPLE:
        return distinct.tolist()
    chosen = np.random.default_rng(secrets.randbits(64)).choice(len(distinct), SAMPLE, False)
    return distinct.iloc[chosen].tolist()


def _kind(values: list) -> str:
    if all(isinstance(v, str) for v in values):  # every CSV value: no Series to build
        text = values
        if _numbers(np.array(values, dtype=object)):
            return NUMBER
    else:
        series = pd.Series(values, dtype=object)
        if series.map(lambda v: isinstance(v, bool)).any():
            return TEXT
        if _numbers(series.to_numpy()):
            return NUMBER
        if series.map(lambda v: isinstance(v, datetime.date | np.datetime64)).all():
            return DATE
        text = series.astype(str).tolist()
    if all(_ISO_DATE_START.search(t) for t in text) and _iso_dates(text):
        return DATE
    if all(_code(t) for t in text):
        return CODE
    return TEXT


def _numbers(values: np.ndarray) -> bool:
    """Whether every one of ``values`` (objects) parses as a finite number, as pandas reads one."""
    numbers = pd.to_numeric(values, errors="coerce")
    return bool(pd.notna(numbers).all() and np.isfinite(numbers.astype(float)).all())


def _iso_dates(text: list[str]) -> bool:
    parsed = pd.to_datetime(
        pd.Series(text, dtype=object), format="ISO8601", errors="coerce", utc=True
    )
    return bool(parsed.notna().all())


def _code(text: str) -> bool:
    """No blank and a digit (a record number, an id), or a run of four digits ("ref 1492552")."""
    return (
        _BLANK.search(text) is None and _DIGITS.search(text) is not None
    ) or _FOUR_DIGITS.search(text) is not None


def _direct_identifier(
    values: list[str], regions: Sequence[str], kind: str, budget: ScanBudget
) -> str | None:
    needed = NUMBERS_SHARE * len(values) if kind == NUMBER else 1
    found = {EMAIL: 0, NATIONAL_ID: 0, PHONE: 0}
    validators = [m for r in regions for m in _NATIONAL_IDS.get(r, ())]
    for value in values:
        if _holds_email(value):
            found[EMAIL] += 1
        kinds = set()
        for match in _NUMBER_RUN.finditer(value):
            budget.left -= 1
            if budget.left < 0:  # far more number-like runs than a table holds: fail closed
                return PHONE
            candidate = match.group()
            if any(m.is_valid(candidate) for m in validators):
                kinds.add(NATIONAL_ID)
            elif _is_phone(candidate, regions):
                kinds.add(PHONE)
        for kind_found in kinds:
            found[kind_found] += 1
        if any(count >= needed for count in found.values()):
            return max(found, key=found.get)
    return None


def contact_in_text(text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> str | None:
    """What direct identifier a free text holds: "an e-mail address", "a phone number" or "a
    national id" (None otherwise): for text that is published without being measured, such as
    a catalog entry's description (numbers alone, a year or a count, are not flagged).

    >>> contact_in_text("Call Awa on +221 77 123 45 67"), contact_in_text("400 rows, 2025")
    ('a phone number', None)
    >>> contact_in_text("see 1012345678901")  # a run of digits no description needs
    'a number of 9 digits or more (an id?)'
    """
    if _holds_email(text):
        return "an e-mail address"
    if _LONG_NUMBER.search(text):
        return "a number of 9 digits or more (an id?)"
    found = _direct_identifier([text], regions, TEXT, ScanBudget())
    return {NATIONAL_ID: "a national id", PHONE: "a phone number"}.get(found)


def identifier_in_text(text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> str | None:
    """What direct identifier one piece of text holds ("an e-mail address", "a phone number",
    "a national id", "more than 6 digits"), or None. For column names, which cross the
    border with the data but are not measured.

    Examples
    --------
    >>> identifier_in_text("ref 1850578006084"), identifier_in_text("zip_75001")
    ('more than 6 digits', None)
    """
    if _holds_email(text):
        return "an e-mail address"
    if len(_DIGITS.findall(text)) > _MAX_NAME_DIGITS:
        return f"more than {_MAX_NAME_DIGITS} digits"
    if any(_encoded(token) for token in _TOKENS.findall(text)):
        return "encoded data (a long run mixing upper and lower case and digits)"
    found = _direct_identifier([text], regions, TEXT, ScanBudget())
    return {NATIONAL_ID: "a national id", PHONE: "a phone number"}.get(found)


def _encoded(token: str) -> bool:
    """20+ characters in both cases with a digit, where at least 5 capitals do not begin a word
    (are not followed by two small letters): base64, not camelCase (``numberOfVisits2023``)."""
    if not (any(c.islower() for c in token) and any(c.isdigit() for c in token)):
        return False
    irregular = sum(
        not _word_start(token[i + 1 : i + 3]) for i, c in enumerate(token) if c.isupper()
    )
    return irregular >= 5


def _word_start(following: str) -> bool:
    return len(following) == 2 and following.isalpha() and following.islower()


def _holds_email(text: str) -> bool:
    return any(
        len(token) <= _MAX_TOKEN and _EMAIL.fullmatch(token.strip("<>()[],;:'\"")) is not None
        for token in text.split()
        if "@" in token
    )


def _is_phone(candidate: str, regions: Sequence[str]) -> bool:
    """Whether a short run of digits and separators is a valid number in one of the regions."""
    for region in regions:
        try:
            number = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
    return False

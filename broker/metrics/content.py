"""What an attribute's values are, read from a sample of its distinct values.

Counting categories cannot tell an e-mail column from a diagnosis column of the same size, and a
sender's declared roles cannot be trusted to: so the values themselves are looked at.

- ``values``: ``number`` (every present value parses as a finite number, as written in CSV too),
  ``date`` (dates or date-times), ``code`` (no blanks, at least one digit: record numbers, ids),
  else ``text``.
- ``direct_identifier``: the kind of identifier the values hold, found by the one detector,
  :mod:`broker.identifiers` (``email``, ``phone``, ``iban``, ``payment_card``, ``passport``,
  ``national_id``, ``person_name``), or None; ``identifier_evidence`` says what was found and
  how it was disguised. Strong evidence in *one* sampled value makes a column of text or codes a
  direct identifier, whatever its name, counts or declared role (a valid IBAN, card, national id
  or machine-readable zone, an e-mail address, a phone number, a full name of two listed names);
  medium evidence needs a share of the values, weak evidence (a format alone) half of them, and
  a column of plain numbers needs a share of its values even for strong evidence.
  Columns are also read together (:func:`split_content`: 2 to 4 adjacent ones, two columns of
  single words anywhere), a column's first rows in order (:func:`vertical_content`: an id one
  digit per row) and the column names one after the other
  (:func:`broker.identifiers.short_text.identifier_across_names`, with the rest of short text).

How values are read, so that a hostile sender can neither hide an identifier nor make the work
explode: every sampled value is read whole (cells are at most ``ReadLimits.max_cell_chars``
long), folded (NFKC, invisible and control characters, look-alikes), decoded (base64, base32,
base85, hex, escapes, compressed, UTF-16, nested) and transformed (backwards, ROT13, spaced out,
said in words); typed numbers are read as their digits;
bounded patterns find the candidates, and only those are checked, within a
:class:`ScanBudget` per report. Up to :data:`SAMPLE` distinct values per column are read, all
of them when there are fewer, else a random choice the sender cannot predict. See
docs/identifier-detection.md for what is detected and how well.
"""

from __future__ import annotations

import datetime
import decimal
import re
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import phonenumbers

from broker.columns.missing import is_missing
from broker.columns.numbers import numbers_of
from broker.identifiers import (
    DEFAULT_REGIONS,
    PERSON_NAME,
    PHONE,
    STRONG,
    BudgetSpent,
    Finding,
    column_verdict,
    scan,
)
from broker.identifiers import ScanBudget as ScanBudget  # the report's, one per report
from broker.identifiers.people import lists as name_lists
from broker.identifiers.people import name_key
from broker.identifiers.scan import MEDIUM_SHARE

NUMBER, DATE, CODE, TEXT = "number", "date", "code", "text"
SAMPLE = 1000


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


_DIGITS = re.compile(r"\d")
_BLANK = re.compile(r"\s")
_FOUR_DIGITS = re.compile(r"\d{4}")
_ISO_DATE_START = re.compile(r"^\d{4}-\d{2}")


@dataclass(frozen=True)
class Content:
    values: str
    direct_identifier: str | None
    identifier_evidence: str | None = None  # what was found, how disguised, where


def content_of(
    distinct: Sequence,
    regions: Sequence[str] = DEFAULT_REGIONS,
    budget: ScanBudget | None = None,
) -> Content:
    """Classify a column from (a sample of) its distinct values; missing values are ignored.

    Examples
    --------
    >>> content_of(["ana@example.org", "bo@example.sn"])
    Content(values='text', direct_identifier='email', identifier_evidence='an e-mail address')
    >>> content_of(["28", "31.5", ""])
    Content(values='number', direct_identifier=None, identifier_evidence=None)
    >>> content_of(["call 77 123 45 67", "ok", "78 555 12 12 after 6"], ["SN"]).direct_identifier
    'phone'
    """
    present = [v for v in distinct if not is_missing(v)]
    if not present:
        return Content(TEXT, None)
    kind = _kind(present)
    text = [_text(v) for v in present]
    if kind == NUMBER:
        text = [_as_digits(t, regions) for t in text]
    found = _column_finding(text, kind == NUMBER, regions, budget or ScanBudget())
    if found is None:
        return Content(kind, None)
    return Content(kind, found.kind, found.describe())


def split_content(
    parts: Sequence[tuple],
    regions: Sequence[str] = DEFAULT_REGIONS,
    budget: ScanBudget | None = None,
    fail_closed: bool = True,
    give_up_after: int | None = None,
) -> Finding | None:
    """What identifier a sample of value tuples of a few columns (adjacent ones, or two that
    may hold a given and a family name) holds once each tuple is read as one value, its parts
    joined by blanks (every detector reads grouped digits: "FR76 3000 ..." cut after its first
    group, "4111" | "1111" | "1111" | "1111", "Awa" | "Diop"), or None.

    Joining ordinary values makes digit runs that pass checks by chance ("30-39" and "75001"
    read as a Senegalese phone number, two codes as an 11-digit id one time in twenty), so only
    strong evidence counts, that needs every part (it is not found with the first or the last
    part left out), in :data:`MEDIUM_SHARE` of the tuples (a split identifier fills its
    columns), and a phone number only in international form. The joined text is read as
    written and decoded, not transformed (the broker wrote it). When ``budget`` runs out, the
    answer is a finding that fails closed, or None without ``fail_closed``. With
    ``give_up_after``, reading stops when under one in eight of that many tuples held
    evidence (a split identifier in 30 % of the tuples is missed so one time in 400 after 40).

    >>> split_content([("4111 1111", "1111 1111"), ("4012 8888", "8888 1881")]).what
    'Visa card number'
    >>> split_content([("FR76 3000", "6000 0112 3456", "7890 189")]).what
    'IBAN (FR)'
    >>> split_content([("30-39", "75001"), ("20-29", "75002")])
    """
    budget = budget or ScanBudget()
    present = [tuple(_text(v) for v in row) for row in parts if not any(is_missing(v) for v in row)]
    needed = max(min(2, len(present)), MEDIUM_SHARE * len(present))
    seen: dict[str, set] = {}

    def found(text: str) -> set:
        if text not in seen:
            seen[text] = {(f.kind, f.what) for f in scan(text, regions, budget, False)}
        return seen[text]

    counts: dict[str, int] = {}
    try:
        for read, row in enumerate(present):
            if read == give_up_after and max(counts.values(), default=0) * 8 < read:
                return None  # under one tuple in eight: not the 30 % a split identifier fills
            shorter: set | None = None  # what the row holds without one end: read when needed
            for finding in scan(" ".join(row), regions, budget, False):
                key = (finding.kind, finding.what)
                national_phone = finding.kind == PHONE and not row[0].lstrip().startswith(
                    ("+", "00")
                )
                if finding.strength != STRONG or national_phone:
                    continue
                if shorter is None:
                    shorter = found(" ".join(row[1:])) | found(" ".join(row[:-1]))
                if key in shorter:
                    continue
                counts[finding.kind] = counts.get(finding.kind, 0) + 1
                if counts[finding.kind] >= needed:
                    return finding
    except BudgetSpent:
        return _FAILED_CLOSED if fail_closed else None
    return None


# Texts of one list read together: an identifier is cut into at most this many pieces (an IBAN
# or a card in groups of four digits, an e-mail address at its @, a given and a family name).
SPLIT_PIECES = 4


def split_across(field: str, texts: Sequence[str]) -> tuple[str, str] | None:
    """The first (``field[i..j]``, what it holds) among every two to :data:`SPLIT_PIECES`
    consecutive ``texts`` read side by side, or None: strong evidence that needs every piece
    (:func:`~broker.metrics.content.split_content`), so that ordinary words and numbers side
    by side do not count.

    >>> split_across("columns", ["awa.diop", "@example.sn", "age"])
    ('columns[0..1]', 'an e-mail address, written as [at]/(dot) or with blanks')
    >>> split_across("columns", ["age", "zip", "2024", "0505"])
    """
    for start in range(len(texts) - 1):
        for width in range(2, SPLIT_PIECES + 1):
            window = tuple(texts[start : start + width])
            if len(window) < width:
                break
            found = split_content([window])
            if found is not None:
                return f"{field}[{start}..{start + width - 1}]", found.describe()
    return None


# A run of a column's consecutive short values (:func:`_piece`) may spell an identifier down
# the rows (one digit per row, a card's groups of four). Only runs that stand out are read:
# in a column whose values are mostly that short (a rating, a grade, a year), a run of 13
# digits is ordinary, and reading every window of it would find check digits that hold by
# chance.
VERTICAL_VALUE_CHARS = 4
VERTICAL_ROWS = 4096
_VERTICAL_RUN = range(7, 35)  # characters a run must join into
_VERTICAL_SMALL_COLUMN = 40


def vertical_content(
    name: str,
    values: Sequence,
    regions: Sequence[str] = DEFAULT_REGIONS,
    budget: ScanBudget | None = None,
) -> Finding | None:
    """What identifier consecutive rows of a column spell once joined (a national id written
    one digit per row), or None. ``values`` are the column's first rows in row order. Each
    maximal run of pieces (:func:`_piece`; missing and blank values between them are skipped)
    whose
    characters join into 7 to 34 is read as one value, joined without and with blanks, the
    column's name before it (a keyword such as "NIN" makes a format strong), when the run
    stands out: the column's pieces are at most half of ``values``, or the column is
    short (:data:`_VERTICAL_SMALL_COLUMN` rows). Only strong evidence counts.

    >>> vertical_content("notes", ["ok", "seen", *"4111111111111111", "late", "ok"]).what
    'Visa card number'
    >>> vertical_content("notes", ["pending", "4111", "", "1111", "1111", "1111", "pending"]).what
    'Visa card number'
    >>> vertical_content("stars", list("4111111111111111") + list("1234512345" * 5))
    """
    budget = budget or ScanBudget()
    text = _texts(values)
    short = np.fromiter((_piece(t) for t in text), dtype=bool, count=len(text))
    if len(text) > _VERTICAL_SMALL_COLUMN and int(short.sum()) * 2 > len(text):
        return None
    if not short.any():
        return None
    # Runs: a longer value ends one (a missing or blank one does not); the characters each
    # run joins into, blanks aside, decide which are read.
    ends = np.fromiter((bool(t) for t in text), dtype=bool, count=len(text)) & ~short
    run_of = np.cumsum(ends)
    chars = np.fromiter((len(t) - t.count(" ") for t in text), dtype=np.int64, count=len(text))
    per_run = np.bincount(run_of[short], weights=chars[short], minlength=run_of[-1] + 1)
    read = np.flatnonzero((per_run >= _VERTICAL_RUN.start) & (per_run < _VERTICAL_RUN.stop))
    try:
        for run_id in read:
            run = [text[i] for i in np.flatnonzero(short & (run_of == run_id))]
            for joined in ("".join(run), " ".join(run)):
                for finding in scan(f"{name}: {joined}", regions, budget):
                    if finding.strength == STRONG and finding.kind != PERSON_NAME:
                        return finding
    except BudgetSpent:
        return _FAILED_CLOSED
    return None


def may_spell_down(distinct: Sequence) -> bool:
    """Whether any of a column's ``distinct`` values may be a piece of an identifier written
    down its rows (:func:`_piece`): :func:`vertical_content` finds nothing in a column that
    has none, so its rows need not be read.

    >>> may_spell_down(["flu", "tb", "ok"]), may_spell_down(["flu", " 4 ", None])
    (False, True)
    """
    for value in distinct:
        if isinstance(value, str):
            text = value.strip()
        else:
            text = "" if is_missing(value) else _text(value).strip()
        if 0 < len(text) <= VERTICAL_VALUE_CHARS and _piece(text):
            return True
    return False


def _texts(values: Sequence) -> list[str]:
    """Each of ``values`` as :func:`vertical_content` reads it (stripped, missing as blank),
    worked out once per distinct value: a column's first rows repeat a few values."""
    seen: dict = {}
    found = []
    for value in values:
        try:
            key = (value.__class__, value)
            text = seen.get(key)
        except TypeError:  # an unhashable value
            key, text = None, None
        if text is None:
            text = "" if is_missing(value) else _text(value).strip()
            if key is not None:
                seen[key] = text
        found.append(text)
    return found


def _piece(text: str) -> bool:
    """Whether a value may be a piece of an identifier written down the rows: one character,
    two capitals (an IBAN's country), or up to four characters with a digit ("4111", "+221");
    not a short word ("ok", "late")."""
    if not 0 < len(text) <= VERTICAL_VALUE_CHARS:
        return False
    return len(text) == 1 or (len(text) == 2 and text.isupper()) or _DIGITS.search(text) is not None


def _text(value) -> str:
    """A value as the text a reader sees: typed numbers written as their digits (an integer,
    a float or a decimal with no fraction as the integer it is, never ``1.2e+16`` nor
    ``4111111111111111.0``, which hide a card number from the patterns), bytes as UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool | np.bool_):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating | decimal.Decimal):
        try:
            if value == int(value) and abs(value) < _WHOLE_UP_TO:
                return str(int(value))
        except (ValueError, OverflowError, decimal.InvalidOperation):  # NaN, infinity
            return str(value)
        if isinstance(value, decimal.Decimal):
            return format(value, "f")
    return str(value)


_WHOLE_UP_TO = 10**30


def _as_digits(text: str, regions: Sequence[str]) -> str:
    """A whole number that may be a phone number stored as a number, read also with the ``+`` a
    number type drops when it begins with a region's country code ("221771234567" was
    +221 77 123 45 67), on a line of its own. (A national number that lost its trunk ``0`` is
    not read again: "612345678" is as likely an amount as 06 12 34 56 78.)"""
    if not (text.isdigit() and 10 <= len(text) <= 15):
        return text
    codes = {str(phonenumbers.country_code_for_region(r)) for r in regions}
    if any(text.startswith(code) for code in codes):
        return f"{text}\n+{text}"
    return text


def _column_finding(
    text: list[str], numbers_only: bool, regions: Sequence[str], budget: ScanBudget
) -> Finding | None:
    try:
        return column_verdict(text, numbers_only, regions, budget)
    except BudgetSpent:  # far more candidates than a table holds: fail closed
        return _FAILED_CLOSED


_FAILED_CLOSED = Finding(PHONE, STRONG, "value among more candidates than a report checks")


DIGITS, WORDS, NAME_WORDS = "digits", "words", "name_words"
_FRAGMENT_SHARE = 0.5


def fragment_kind(sample: Sequence) -> str | None:
    """What part of a split identifier a column's sampled values may be: ``digits`` (most hold a
    digit: half an IBAN, a card, an id), ``name_words`` (most are one capitalised word, and a
    share of them listed names), ``words`` (one capitalised word: the other half of a name), or
    None (nothing an identifier is split into). Decides which adjacent pairs are read together.

    >>> fragment_kind(["4111 1111", "4012"]), fragment_kind(["Awa", "Moussa", "Fatou"])
    ('digits', 'name_words')
    >>> fragment_kind(["Never-married", "Divorced", "Married-civ-spouse"])
    """
    present = [_text(v) for v in sample if not is_missing(v)]
    if not present:
        return None
    needed = _FRAGMENT_SHARE * len(present)
    if sum(any(c.isdigit() for c in v) for v in present) >= needed:
        return DIGITS
    words = [v.strip() for v in present if _WORD.fullmatch(v.strip())]
    if len(words) < needed:
        return None
    first, last = name_lists()
    listed = sum(name_key(w) in first or name_key(w) in last for w in words)
    return NAME_WORDS if listed >= MEDIUM_SHARE * len(present) else WORDS


_WORD = re.compile(r"[A-Z\u00c0-\u00de][^\W\d_]{1,40}")


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
    return bool(np.isfinite(numbers_of(values)).all())


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

"""One pass over one piece of text: every identifier in it, in every spelling the detectors know.

:func:`scan` reads the text in each of its :func:`~broker.identifiers.text.readings` (folded,
and decoded when it holds base64, hex, percent-escapes or quoted-printable) and runs, on each,
bounded patterns that find the candidates, then the checks of
:mod:`broker.identifiers.numbers` and :mod:`broker.identifiers.people` on those alone:

- e-mail addresses, also with blanks around ``@`` and the dots, ``[at]``/``(dot)``, ``{at}``,
  and the words "at" and "dot";
- machine-readable-zone lines; IBANs; runs of digits with separators (payment cards, national
  ids, phone numbers); tokens mixing letters and digits (national ids with letters, passport
  numbers); full names.

A weak finding (a format alone) becomes strong when a keyword that names it ("passport",
"passeport", "NIN", "CNI", "BVN", "national id", "sécurité sociale", ...) stands in the 40
characters before it. Every pattern has bounded repetitions, so the scan is linear in the text;
:class:`ScanBudget` bounds the checks a whole report runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from broker.identifiers import numbers, patterns
from broker.identifiers.numbers import EMAIL, MEDIUM, STRONG, WEAK, Hit
from broker.identifiers.people import full_names
from broker.identifiers.text import Reading, readings

DEFAULT_REGIONS = ("SN", "FR", "NG", "KE")
# Candidates checked per report (about 100 us each): past it, the scan fails closed.
MAX_CANDIDATES = 50_000
# Addresses found by their "@" only; at most this many "@" are looked at per reading.
_MAX_AT_SIGNS = 64

_EMAIL = re.compile(
    r"(?<![\w.%+-])[\w.%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
    r"\.[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
_AT_BRACKETED = re.compile(r"\s{0,3}[\[({<]\s{0,3}(?:at|@|arobase)\s{0,3}[\])}>]\s{0,3}", re.I)
_DOT_BRACKETED = re.compile(r"\s{0,3}[\[({<]\s{0,3}(?:dot|point|\.)\s{0,3}[\])}>]\s{0,3}", re.I)
_AT_SPACED = re.compile(r"(?<=\w)\s{1,3}@\s{0,3}(?=\w)|(?<=\w)\s{0,3}@\s{1,3}(?=\w)")
_DOT_SPACED = re.compile(r"(?<=\w)\s{1,3}\.\s{0,3}(?=\w)|(?<=\w)\s{0,3}\.\s{1,3}(?=\w)")
_AT_WORD = re.compile(r"\s{1,3}(?:at|arobase)\s{1,3}", re.I)
_DOT_WORD = re.compile(r"\s{1,3}dot\s{1,3}", re.I)
_WRITTEN_OUT = re.compile(r"[._+\-0-9]")

_MRZ = re.compile(r"[A-Z0-9<]{30,}")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){11,32}")
# Digits with separators, 7 to 30 characters: an id, a card or a phone number written with
# spaces, dots, dashes, slashes, brackets or thin spaces.
_NUMBER_RUN = re.compile(r"(?<!\d)\+?\d[\d \-./()]{5,28}\d(?![A-Za-z0-9])")
# What ordinary values write with digits and separators, masked before the runs are looked for:
# dates, times, year ranges, amounts with decimals, ZIP+4 codes.
_ORDINARY = re.compile(
    r"(?<![\d.\-/+])(?<!\d )(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}"
    r"|\d{1,2}:\d{2}(?::\d{2})?|\d{4} ?[-/] ?\d{4}|\d{1,3}(?:[ ,]\d{3})+(?:[.,]\d{1,2})?"
    r"|\d+[.,]\d{1,2}|\d{5}-\d{4})(?![\d.\-/]| \d)"
)
_LONG_DIGITS = re.compile(r"\d{9,}")
_ALNUM = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9+-]{0,19}\d)[A-Za-z0-9][A-Za-z0-9+-]{5,19}")
_KEYWORD = re.compile(
    r"pass(?:e)?port|pasaporte|reisepass|\b(?:nin|bvn|cni|nir|ssn|nni|nic)\b|national\s*id|"
    r"identit|social\s*security|securite\s*sociale|s.curit.\s*sociale|\bid\s*(?:no|number|n.)",
    re.I,
)
_KEYWORD_REACH = 40


class ScanBudget:
    """Candidates a report may still check; shared by its columns."""

    def __init__(self, candidates: int = MAX_CANDIDATES):
        self.left = candidates

    def spend(self) -> bool:
        """One more candidate; False once the budget is spent."""
        self.left -= 1
        return self.left >= 0


class BudgetSpent(Exception):
    """More candidates than a report's budget: the caller fails closed."""


@dataclass(frozen=True)
class Finding:
    """An identifier found in text: its kind (email, phone, iban, payment_card, passport,
    national_id, person_name), how sure one hit is (strong, medium, weak), what exactly, its
    country when known, and the disguises undone to find it."""

    kind: str
    strength: str
    what: str
    country: str | None = None
    disguises: tuple[str, ...] = ()

    def describe(self) -> str:
        """Words for a message: "an IBAN (FR), written as base64"."""
        article = "an" if self.what[:1].lower() in "aeiou" or self.what.startswith("IBAN") else "a"
        told = f"{article} {self.what}"
        return told + (f", written as {' then '.join(self.disguises)}" if self.disguises else "")


def scan(
    text: str, regions: Sequence[str] = DEFAULT_REGIONS, budget: ScanBudget | None = None
) -> list[Finding]:
    """Every identifier in ``text``, once per kind and what, the least disguised first.

    Raises :class:`BudgetSpent` when ``budget`` runs out.

    Examples
    --------
    >>> [f.describe() for f in scan("write to awa [at] example [dot] sn")]
    ['an e-mail address, written as [at]/(dot) or with blanks']
    >>> [f.describe() for f in scan("passport no. 12AB34567")]
    ['a passport number format (near a keyword)']
    >>> scan("Prof-specialty, 40 hours, 2024-05-01, I10, 75001, 12.50 EUR")
    []
    """
    budget = budget or ScanBudget()
    found: dict[tuple, Finding] = {}
    for reading in readings(text):
        for hit, disguise in _hits(reading, regions, budget):
            key = (hit.kind, hit.what, hit.country)
            if key not in found:
                disguises = reading.disguises + ((disguise,) if disguise else ())
                found[key] = Finding(hit.kind, hit.strength, hit.what, hit.country, disguises)
    return list(found.values())


def _hits(reading: Reading, regions: Sequence[str], budget: ScanBudget):
    text = reading.text
    yield from _emails(text, budget)
    if "<" in text:
        for match in _MRZ.finditer(text):
            for line in _mrz_lines(match.group()):
                _spend(budget)
                hit = numbers.mrz(line)
                if hit:
                    yield hit, None
    for match in _IBAN.finditer(text):
        _spend(budget)
        hit = numbers.iban(re.sub(r"[ -]", "", match.group()).upper())
        if hit:
            yield hit, None
    masked = _ORDINARY.sub(lambda m: " " * len(m.group()), text)
    for match in _NUMBER_RUN.finditer(masked):
        run, start = match.group(), match.start()
        glued = start > 0 and masked[start - 1].isalpha()  # "NIN08073702838", "A1234567"
        for piece in {run} | set(_LONG_DIGITS.findall(run)):
            for hit, how in _number(piece, text, start, regions, budget):
                if not glued or hit.strength == STRONG:
                    yield hit, how
    for match in _ALNUM.finditer(text):
        token = match.group()
        if token.isdigit() or not any(c.isalpha() for c in token):
            continue
        _spend(budget)
        hits = numbers.national_ids(token)
        passport = numbers.passport_format(token)
        if passport:
            hits.append(passport)
        for hit in hits:
            yield _near_keyword(hit, text, match.start()), None
    for hit in full_names(text):
        yield hit, None
    for hit in patterns.found(text, lambda: _spend(budget)):  # devices, vehicles, places, ...
        yield hit, None


def _number(piece: str, text: str, start: int, regions: Sequence[str], budget: ScanBudget):
    _spend(budget)
    digits = re.sub(r"\D", "", piece)
    hit = numbers.card(digits)
    if hit:
        yield hit, None
        return
    ids = numbers.national_ids(piece)
    for hit in ids:
        yield _near_keyword(hit, text, start), None
    if not any(h.strength == STRONG for h in ids):
        hit = numbers.phone(piece, regions)
        if hit:
            yield hit, None


def _near_keyword(hit: Hit, text: str, start: int) -> Hit:
    """A weak hit with a keyword naming it just before: strong."""
    if hit.strength != WEAK or not _KEYWORD.search(text[max(0, start - _KEYWORD_REACH) : start]):
        return hit
    return Hit(hit.kind, STRONG, f"{hit.what} (near a keyword)", hit.country)


def _mrz_lines(run: str) -> list[str]:
    """The lines a run of machine-readable-zone characters may be (two lines written as one)."""
    n = len(run)
    lines = [run] if n in (30, 36, 44) else []
    for width in (44, 36, 30):
        if n % width == 0 and n // width in (2, 3):
            lines += [run[i : i + width] for i in range(0, n, width)]
    return lines


def _emails(text: str, budget: ScanBudget):
    """E-mail addresses as written, then with their disguises undone."""
    if "@" in text:
        for _ in _addresses(text, budget):
            yield Hit(EMAIL, STRONG, "e-mail address"), None
            return
    plain = _AT_BRACKETED.sub("@", text)
    plain = _DOT_BRACKETED.sub(".", plain)
    if "@" in plain:
        spaced = _DOT_SPACED.sub(".", _AT_SPACED.sub("@", plain))
        if spaced != text and any(True for _ in _addresses(spaced, budget)):
            yield Hit(EMAIL, STRONG, "e-mail address"), "[at]/(dot) or with blanks"
            return
    if _AT_WORD.search(plain):
        dotted = _DOT_WORD.sub(".", plain)
        words = _AT_WORD.sub("@", dotted)
        for address in _addresses(words, budget):
            local = address.split("@")[0]
            if dotted != plain or _WRITTEN_OUT.search(local):
                yield Hit(EMAIL, STRONG, "e-mail address"), "the words at/dot"
                return


def _addresses(text: str, budget: ScanBudget):
    for count, match in enumerate(_EMAIL.finditer(text)):
        if count >= _MAX_AT_SIGNS:
            return
        _spend(budget)
        yield match.group()


def _spend(budget: ScanBudget) -> None:
    if not budget.spend():
        raise BudgetSpent


def verdict(findings: Sequence[Finding]) -> Finding | None:
    """The finding that condemns one piece of text published alone (a name, a description, a
    key or label): any strong or medium one; a weak one (a format alone) does not."""
    ranked = [f for f in findings if f.strength in (STRONG, MEDIUM)]
    ranked.sort(key=lambda f: f.strength != STRONG)
    return ranked[0] if ranked else None


# Share of a column's sampled values that must hold a medium finding (a check digit a tenth of
# random runs pass, a given name beside a capitalised word), or a weak one (a format alone).
MEDIUM_SHARE = 0.3
WEAK_SHARE = 0.5
# Share of a column of plain numbers that must hold even a strong finding: amounts and counts
# are random digits, and a few of them pass any check.
NUMBERS_SHARE = 0.3


def column_verdict(
    values: Sequence[str],
    numbers_only: bool = False,
    regions: Sequence[str] = DEFAULT_REGIONS,
    budget: ScanBudget | None = None,
) -> Finding | None:
    """The finding that makes a column (a sample of its distinct values) a direct identifier,
    or None: one value with a strong finding (a share of them in a column of plain numbers),
    :data:`MEDIUM_SHARE` of the values with a medium one, :data:`WEAK_SHARE` with a weak one.
    Raises :class:`BudgetSpent` when ``budget`` runs out.

    Examples
    --------
    >>> column_verdict(["ok", "IBAN FR7630006000011234567890189"]).what
    'IBAN (FR)'
    >>> column_verdict(["A1234567", "B7654321", "C1111111"]).what  # every value: a format
    'passport number format'
    >>> column_verdict(["A1234567", "pending", "done", "late"])  # one value in four: a code
    """
    budget = budget or ScanBudget()
    n = len(values)
    needed = {
        STRONG: NUMBERS_SHARE * n if numbers_only else 1,
        MEDIUM: max(min(2, n), MEDIUM_SHARE * n),
        WEAK: max(min(2, n), WEAK_SHARE * n),
    }
    counts: dict[tuple, int] = {}
    first: dict[tuple, Finding] = {}
    for value in values:
        for finding in scan(value, regions, budget):
            key = (finding.kind, finding.strength, finding.country)
            counts[key] = counts.get(key, 0) + 1
            first.setdefault(key, finding)
            if counts[key] >= needed[finding.strength]:
                return first[key]
    return None

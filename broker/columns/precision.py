"""Identifying precision: dates, postcodes and ages, read however they are written.

A birth date to the day, a full postcode and an exact age over 89 single people out: HIPAA's
Safe Harbor method (45 CFR 164.514(b)(2)(i)) removes "all elements of dates (except year)",
keeps "the initial three digits of a ZIP code" and aggregates "all ages over 89 ... into a
single category of age 90 or older"; statistical offices recode the same variables globally
(A. Hundepool et al., *Statistical Disclosure Control*, Wiley 2012, chapter 3:
global recoding and top-coding). This module reads such values, whatever their writing, and
says how precise each is. It is written once for the broker: the F-SLA precision rules
(:mod:`broker.fsla.precision`), their remedy (:mod:`broker.anonymize.generalization`) and the
people count (:mod:`broker.engines.people`, where values are compared by meaning) all read
values here.

Which columns. A column holds *dates* when at least a tenth of its present values (and one) are
dates to the month or the day in a writing read here, or when its name says date (``birth``,
``dob``, ``naissance``, ``yob``, ...) and one value is a date; *postcodes* when its name says
postcode (``zip``, ``zip5``, ``postcode``, ``code_postal``, ``cp``, ``plz``, ...) or address
(``adresse``, ``street``, ...) and half its values read as one, or, whatever its name, when half
its values are written as only a postcode is (``SW1A 1AA``, ``K1A 0B1``, ``1012 AB``,
``20500-0003``, ``2A004``) or are free text shaped as an address (ending with a postcode and a
town's capitalized name, in either order: ``12 rue X, 75011 Paris``, ``Lagos 101241``); *ages*
when its name says age (``age``, ``âge``, ``age1``, ``edad``, ``años``, ``years``, ``alter``)
and half its values read as ages, or when half read as ages and a fifth carry their unit
(``93 ans``). Names are compared folded (:func:`broker.columns.names.attribute_key`, accents
removed), word by word, digits glued to a word removed, so ``Âge``, ``A\u200bGE``, ``zip5`` or
``DateNaissance`` are recognized. A postcode or an age written as a bare number under a name that
says nothing cannot be told from any other code or number, and is not recognized.

Writings read:

- dates: date and datetime objects; ``2024-03-17`` (ISO 8601, with or without a time);
  ``2024/03/17``; ``17/03/2024``, ``17-03-2024`` and ``17.03.2024`` (day first, as in Senegal
  and France, unless only the other reading is a date); ``17/03/24`` (a two-digit year, this
  century's unless in the future); ``20240317``; ``17 mars 2024``, ``17-Mar-2024``,
  ``17 de marzo de 2024``, ``17 March 2024`` and ``March 17, 2024`` (English, French, Spanish,
  Portuguese and German month names); in a column whose name says date, spreadsheet day numbers
  (``45368``, Excel's count from 1899-12-30); to the month ``2024-03``, ``03/2024``,
  ``mars 2024``; to the year ``2024`` and ranges of years ``2020/2024``, ``2020-2024`` (those
  only in a column recognized as dates: a bare number says nothing on its own);
- postcodes: letters and digits once blanks and hyphens are removed (``75 011``, ``SW1A 1AA``),
  or a prefix with a mask (``750*``); its precision is the number of characters it keeps; in
  free text (a word of three letters or more), the last postcode written in it (five or six
  digits standing alone, or a writing above), and free text holding none is unreadable;
- ages: numbers from 0 to 150, with or without a unit (``93``, ``93 ans``, ``93 years``), in any
  digits (full-width too), ranges ``80-89`` (as precise as their lower end: they mix the
  old with younger people) and top categories ``90+``.

A generalization label reads as what it names: a set ``"a, b"`` as its most precise member,
``*`` and ``NA`` as nothing. In a column of dates (postcodes, ages), a value that holds a digit
and reads as none is *unreadable*: its precision is unknown, so it fails any rule on precision
and the remedy masks it.
"""

from __future__ import annotations

import datetime
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from broker.columns.missing import is_missing
from broker.columns.names import attribute_key, visible_text
from broker.columns.numbers import numbers_of

DATE, POSTCODE, AGE = "date", "postcode", "age"
YEAR, MONTH, DAY = "year", "month", "day"
DATE_LEVELS = (YEAR, MONTH, DAY)  # coarsest first: a date's precision is its index here
MASK = "*"
MISSING_LABEL = "NA"


@dataclass(frozen=True)
class Limits:
    """The most precise value of each kind allowed to leave; None sets no limit.

    ``date``: the finest date level (year, month or day); ``postcode``: the most characters of
    a postcode; ``age``: the highest age written as such (older ages leave as one top category).
    """

    date: str | None = None
    postcode: int | None = None
    age: int | None = None


# Identifying precision as HIPAA's Safe Harbor draws it: what the people count treats as rare.
SAFE_HARBOR = Limits(YEAR, 3, 89)


# --- names -------------------------------------------------------------------------------------

_DATE_WORDS = (
    "date dob dod yob birth birthdate birthday birthyear born naissance datenaissance ddn "
    "deces death deceased nacimiento fecha nascimento geburt geburtsdatum geburtsjahr"
)
_POSTCODE_WORDS = (
    "zip zipcode postcode postal postalcode codepostal cp cpostal plz postleitzahl npa cep "
    "pincode eircode"
)
_AGE_WORDS = "age ages aged agee edad anos idade alter jahre years yrs umri"
_ADDRESS_WORDS = "address adresse addr direccion endereco anschrift street rue domicile residence"
# Words a name may begin with, glued to others (``zipcode5``, ``birthplace`` is not one).
_DATE_STEMS = ("birth", "naissance", "nacimiento", "geburt")
_POSTCODE_STEMS = ("zip", "postcode", "postal", "codepostal", "plz")
_AGE_STEMS = ("age",)
_DIGITS_AROUND = re.compile(r"^\d+|\d+$")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def _plain(text: str) -> str:
    """NFKC, then accents removed (``Âge`` -> ``Age``)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def name_words(name: str) -> set[str]:
    """The words of a column name, each folded as attribute names are compared.

    Examples
    --------
    >>> name_words("DateNaissance") == name_words("date_naissance") == name_words("DATE naissance")
    True
    >>> name_words("\u00c2ge") == name_words("A\u200bGE") == name_words("\u0410ge") == {"age"}
    True
    """
    text = _CAMEL.sub(r"\1 \2", visible_text(_plain(str(name))))
    return {attribute_key(word) for word in re.split(r"[\W_]+", text) if word}


def _words_without_digits(name: str) -> set[str]:
    """:func:`name_words` with the digits around each word removed first (``zip5``)."""
    text = _CAMEL.sub(r"\1 \2", visible_text(_plain(str(name))))
    words = (_DIGITS_AROUND.sub("", word) for word in re.split(r"[\W_]+", text))
    return {attribute_key(word) for word in words if word}


def _folded(words: str) -> frozenset[str]:
    return frozenset(attribute_key(word) for word in words.split())


_NAMED = {
    DATE: _folded(_DATE_WORDS),
    POSTCODE: _folded(_POSTCODE_WORDS),
    AGE: _folded(_AGE_WORDS),
    "address": _folded(_ADDRESS_WORDS),
}
_STEMS = {
    DATE: tuple(attribute_key(w) for w in _DATE_STEMS),
    POSTCODE: tuple(attribute_key(w) for w in _POSTCODE_STEMS),
    AGE: tuple(attribute_key(w) for w in ("ageyear", "ageans", "ageat", "agein")),
    "address": tuple(attribute_key(w) for w in ("address", "adress", "adresse")),
}
ADDRESS = "address"  # a name that says address: a postcode column if its values hold them


@lru_cache(maxsize=4096)  # asked for each sampled value and each measure: names are few
def named(name: str, kind: str) -> bool:
    """Whether a column's name says it holds ``kind``: one of its words does, digits around it
    removed (``zip5``, ``age1``), or begins with a word that only says it (``zipcode_home``,
    ``birthyear``, ``ageyears``; ``age`` only before ``years``, ``ans``, ``at``, ``in``).

    >>> [named(n, AGE) for n in ("age1", "edad", "Años", "years", "stage", "page")]
    [True, True, True, True, False, False]
    >>> [named(n, POSTCODE) for n in ("zip5", "CP", "code_postal", "PLZ", "zipcity")]
    [True, True, True, True, True]
    """
    words = name_words(name) | _words_without_digits(name)
    if words & _NAMED[kind]:
        return True
    stems = _STEMS[kind]
    return any(word.startswith(stem) for word in words for stem in stems)


# --- one value ---------------------------------------------------------------------------------

_MONTHS = {
    **dict.fromkeys(["january", "jan", "janvier", "janv"], 1),
    **dict.fromkeys(["february", "feb", "fevrier", "fevr", "fev"], 2),
    **dict.fromkeys(["march", "mar", "mars"], 3),
    **dict.fromkeys(["april", "apr", "avril", "avr"], 4),
    **dict.fromkeys(["may", "mai"], 5),
    **dict.fromkeys(["june", "jun", "juin"], 6),
    **dict.fromkeys(["july", "jul", "juillet", "juil"], 7),
    **dict.fromkeys(["august", "aug", "aout"], 8),
    **dict.fromkeys(["september", "sep", "sept", "septembre"], 9),
    **dict.fromkeys(["october", "oct", "octobre"], 10),
    **dict.fromkeys(["november", "nov", "novembre"], 11),
    **dict.fromkeys(["december", "dec", "decembre"], 12),
    # Spanish, Portuguese, German (accents are removed before the look-up)
    **dict.fromkeys(["enero", "janeiro", "januar", "jan"], 1),
    **dict.fromkeys(["febrero", "fevereiro", "februar"], 2),
    **dict.fromkeys(["marzo", "marco", "marz"], 3),
    **dict.fromkeys(["abril", "abr"], 4),
    **dict.fromkeys(["mayo", "maio"], 5),
    **dict.fromkeys(["junio", "junho", "juni"], 6),
    **dict.fromkeys(["julio", "julho", "juli"], 7),
    **dict.fromkeys(["agosto", "ago"], 8),
    **dict.fromkeys(["septiembre", "setembro", "set"], 9),
    **dict.fromkeys(["octubre", "outubro", "oktober", "okt", "out"], 10),
    **dict.fromkeys(["noviembre", "novembro"], 11),
    **dict.fromkeys(["diciembre", "dezembro", "dezember", "dic", "dez"], 12),
}
_MONTH = r"([^\W\d_]+)\.?"
_TIME = r"(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"
_ISO = re.compile(rf"(\d{{4}})-(\d{{1,2}})-(\d{{1,2}}){_TIME}")
_YMD = re.compile(rf"(\d{{4}})[/.](\d{{1,2}})[/.](\d{{1,2}}){_TIME}")
_DMY = re.compile(rf"(\d{{1,2}})[/.-](\d{{1,2}})[/.-](\d{{4}}){_TIME}")
_D_MONTH_Y = re.compile(
    rf"(\d{{1,2}})(?:er|st|nd|rd|th)?[ /.-]?(?:de )?{_MONTH}[ /.,-] ?(?:de )?(\d{{4}})"
)
_DMY_SHORT = re.compile(rf"(\d{{1,2}})[/.-](\d{{1,2}})[/.-](\d{{2}}){_TIME}")
_COMPACT = re.compile(r"(1[89]\d{2}|20\d{2})(\d{2})(\d{2})(?:\.0+)?")  # 19500301
_SERIAL = re.compile(r"(\d{5})(?:\.0+)?")  # a spreadsheet's day number, in a date column
_MONTH_D_Y = re.compile(rf"{_MONTH} (\d{{1,2}}),? (\d{{4}})")
_YM = re.compile(r"(\d{4})[-/](\d{1,2})")
_MY = re.compile(r"(\d{1,2})[/.-](\d{4})")
_MONTH_Y = re.compile(rf"{_MONTH} (\d{{4}})")
_YEAR = re.compile(r"(\d{4})")
_YEARS = re.compile(r"(\d{4}) ?[-/] ?(\d{4})")
_DIGIT = re.compile(r"\d")
_POSTCODE = re.compile(r"[0-9A-Z]{1,10}")
# Postcodes whose writing says what they are, in any column (compared uppercase): the United
# Kingdom's (SW1A 1AA), Canada's (K1A 0B1), the Netherlands' (1012 AB), ZIP+4 (20500-0003),
# Brazil's CEP (01310-100), Corsica's (2A004).
_POSTCODE_FORMATS = (
    r"[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}|[A-Z]\d[A-Z] ?\d[A-Z]\d|\d{4} ?[A-Z]{2}|\d{5}-\d{4}"
    r"|\d{5}-\d{3}|2[AB] ?\d{3}"
)
_POSTCODE_WRITTEN = re.compile(_POSTCODE_FORMATS)
# In free text (an address): one of those, or five or six digits standing alone (Senegal,
# France, Nigeria, Germany, the United States...).
_POSTCODE_IN_TEXT = re.compile(rf"(?<![\dA-Z])(?:{_POSTCODE_FORMATS}|\d{{5,6}})(?![\dA-Z])")
_WORD = re.compile(r"[^\W\d_]{3,}")  # a word of three letters or more: free text
_ADDRESS_WORD = re.compile(r"[^\W\d_]{4,}")  # in a postcode column: not ``VLT 1117`` (Malta)
# Free text shaped as an address, under any name: a postcode next to a town's capitalized name
# at its end (``..., 75011 Paris``, ``Lagos 101241``), or in a writing that says postcode.
_ADDRESS_SHAPE = re.compile(
    rf"(?:(?<![\dA-Z])\d{{5,6}} [A-ZÀ-Þ][\w' -]*|[A-ZÀ-Þ][\w'-]* \d{{5,6}})$"
    rf"|(?<![\dA-Z])(?:{_POSTCODE_FORMATS})(?![\dA-Z])"
)
_AGE_WITH_UNIT = re.compile(
    r"\d ?(?:ans?|years?(?: old)?|yrs?|yo|jahre|anos|años|a)$", re.IGNORECASE
)
_PREFIX = re.compile(r"([0-9A-Z]{0,10})\*")
_AGE_UNIT = r"(?: ?(?:ans?|years?(?: old)?|yrs?|y|yo|a|jahre))?"
_AGE = re.compile(rf"(\d{{1,3}}(?:[.,]\d+)?){_AGE_UNIT}")
_AGE_RANGE = re.compile(rf"(\d{{1,3}}) ?[-–] ?(\d{{1,3}}){_AGE_UNIT}")
_AGE_TOP = re.compile(rf"(\d{{1,3}}) ?\+{_AGE_UNIT}|(?:>=|≥) ?(\d{{1,3}}){_AGE_UNIT}")
_MAX_AGE = 150


@dataclass(frozen=True)
class Read:
    """One value read as a kind: how precise it is (``precision``: a date level's index in
    :data:`DATE_LEVELS`, a postcode's characters, the highest age it tells apart; None when it
    tells nothing: missing, masked, no digit) and its canonical spelling (the same for every
    writing of one value: ``12/04/1983`` and ``1983-04-12`` are ``1983-04-12``). ``unreadable``:
    it holds a digit and reads as no value of the kind."""

    canonical: str | None
    precision: float | None
    unreadable: bool = False


_NOTHING = Read(None, None)


def _text(value: object) -> str:
    """A value as text, NFKC (full-width digits become digits), blanks trimmed and collapsed."""
    text = unicodedata.normalize("NFKC", str(value))
    return re.sub(r"\s+", " ", text).strip()


def _valid(year: int, month: int, day: int | None = None) -> bool:
    if not (1 <= month <= 12 and 1 <= year <= 9999):
        return False
    if day is None:
        return True
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


def _day(year: int, month: int, day: int) -> Read | None:
    if not _valid(year, month, day):
        return None
    return Read(f"{year:04d}-{month:02d}-{day:02d}", DATE_LEVELS.index(DAY))


def _month(year: int, month: int) -> Read | None:
    if not _valid(year, month):
        return None
    return Read(f"{year:04d}-{month:02d}", DATE_LEVELS.index(MONTH))


def _month_named(word: str) -> int | None:
    return _MONTHS.get(_plain(word))


def read_date(value: object, years: bool = False) -> Read:
    """A value read as a date (see the module docstring); ``years``: in a column known to hold
    dates, where ``1983`` and ``1980-1989`` are years.

    Examples
    --------
    >>> [read_date(v).canonical for v in ("1983-04-12", "12/04/1983", "1983-04-12 08:30",
    ...                                    "12 avril 1983", "April 12, 1983")]
    ['1983-04-12', '1983-04-12', '1983-04-12', '1983-04-12', '1983-04-12']
    >>> read_date("04/1983").precision, read_date("1983", years=True).precision
    (1, 0)
    >>> read_date("1983-13-45").unreadable, read_date("unknown").unreadable
    (True, False)
    """
    if isinstance(value, pd.Timestamp | datetime.datetime | datetime.date | np.datetime64):
        stamp = pd.Timestamp(value)
        return _NOTHING if pd.isna(stamp) else _day(stamp.year, stamp.month, stamp.day)
    if is_missing(value):
        return _NOTHING
    text = _text(value)
    if text in (MASK, MISSING_LABEL):
        return _NOTHING
    found = _date_of(text.casefold(), years)
    if found is not None:
        return found
    if ", " in text:  # a set label, after "March 17, 2024"
        return _finest([read_date(part, years) for part in text.split(", ")])
    return Read(None, None, unreadable=_DIGIT.search(text) is not None)


def _date_of(text: str, years: bool) -> Read | None:
    if match := _ISO.fullmatch(text) or _YMD.fullmatch(text):
        return _day(*map(int, match.groups()[:3]))
    if match := _DMY.fullmatch(text):
        first, second, year = map(int, match.groups()[:3])
        # Day first (Senegal, France), unless only the month-first reading is a date.
        return _day(year, second, first) or _day(year, first, second)
    if match := _DMY_SHORT.fullmatch(text):
        first, second, short = map(int, match.groups()[:3])
        # A two-digit year: this century's when not in the future, else the last one's.
        now = datetime.date.today().year
        year = 2000 + short if 2000 + short <= now else 1900 + short
        return _day(year, second, first) or _day(year, first, second)
    if match := _COMPACT.fullmatch(text):
        return _day(*map(int, match.groups()[:3]))
    if years and (match := _SERIAL.fullmatch(text)):
        # Excel's day numbers count from 1899-12-30; 10000 to 99999 are 1927 to 2173.
        serial = datetime.date(1899, 12, 30) + datetime.timedelta(days=int(match.group(1)))
        return _day(serial.year, serial.month, serial.day)
    if match := _D_MONTH_Y.fullmatch(text):
        month = _month_named(match.group(2))
        return None if month is None else _day(int(match.group(3)), month, int(match.group(1)))
    if match := _MONTH_D_Y.fullmatch(text):
        month = _month_named(match.group(1))
        return None if month is None else _day(int(match.group(3)), month, int(match.group(2)))
    if match := _YEARS.fullmatch(text):
        low, high = int(match.group(1)), int(match.group(2))
        if years and low <= high:
            return Read(f"{low:04d}/{high:04d}", DATE_LEVELS.index(YEAR))
        return None
    if match := _YM.fullmatch(text):
        return _month(int(match.group(1)), int(match.group(2)))
    if match := _MY.fullmatch(text):
        return _month(int(match.group(2)), int(match.group(1)))
    if match := _MONTH_Y.fullmatch(text):
        month = _month_named(match.group(1))
        return None if month is None else _month(int(match.group(2)), month)
    if years and (match := _YEAR.fullmatch(text)):
        return Read(match.group(1), DATE_LEVELS.index(YEAR))
    return None


def read_postcode(value: object) -> Read:
    """A value read as a postcode: its characters once blanks and hyphens are removed,
    uppercase; a prefix with a mask (``750*``) keeps what it shows.

    >>> [read_postcode(v).canonical for v in ("75 011", "\\u00a075011", "sw1a 1aa", "750*")]
    ['75011', '75011', 'SW1A1AA', '750*']
    >>> read_postcode("75011").precision, read_postcode("750*").precision
    (5.0, 3.0)
    """
    if is_missing(value):
        return _NOTHING
    text = _text(value)
    if text in (MASK, MISSING_LABEL):
        return _NOTHING
    if " " in text and _ADDRESS_WORD.search(text) and _DIGIT.search(text):  # an address
        found = _POSTCODE_IN_TEXT.findall(text.upper())
        if found:
            compact = re.sub(r"[\s\-]", "", found[-1])
            return Read(compact, float(len(compact)))
        return _unreadable()
    if ", " in text:
        return _finest([read_postcode(part) for part in text.split(", ")])
    compact = re.sub(r"[\s\-]", "", text).upper()
    if match := _PREFIX.fullmatch(compact):
        kept = match.group(1)
        return Read(f"{kept}{MASK}", float(len(kept))) if kept else _NOTHING
    if _POSTCODE.fullmatch(compact) and len(_DIGIT.findall(compact)) >= min(2, len(compact)):
        return Read(compact, float(len(compact)))
    return Read(None, None, unreadable=_DIGIT.search(text) is not None)


def read_age(value: object) -> Read:
    """A value read as an age: its precision is the oldest age it tells apart from the older
    ones: ``93`` -> 93; ``90+`` -> 89 (the top category says nothing above 89); a range by its
    lower end, ``80-100`` -> 80, since it mixes people of 80 with whoever is older in it (a
    Mondrian range on a grid of ages up to 89 may well end at 100).

    >>> [read_age(v).canonical for v in ("93", "93 ans", "\\uff19\\uff13", 93.0, "80-90", "90+")]
    ['93', '93', '93', '93', '80-90', '90+']
    >>> read_age("80-100").precision, read_age("90+").precision, read_age("89.5").precision
    (80.0, 89.0, 89.0)
    """
    if isinstance(value, bool):
        return Read(None, None, unreadable=True)
    if isinstance(value, int | float | np.integer | np.floating) and not pd.isna(value):
        return _age(float(value))
    if is_missing(value):
        return _NOTHING
    text = _text(value).casefold()
    if text in (MASK, MISSING_LABEL.casefold()):
        return _NOTHING
    if ", " in text:
        return _finest([read_age(part) for part in text.split(", ")])
    if match := _AGE_TOP.fullmatch(text):
        low = int(match.group(1) or match.group(2))
        return Read(f"{low}+", float(low - 1)) if low <= _MAX_AGE else _unreadable()
    if match := _AGE_RANGE.fullmatch(text):
        low, high = int(match.group(1)), int(match.group(2))
        if low <= high <= _MAX_AGE:
            return Read(f"{low}-{high}", float(low))
        return _unreadable()
    if match := _AGE.fullmatch(text):
        return _age(float(match.group(1).replace(",", ".")))
    return Read(None, None, unreadable=_DIGIT.search(text) is not None)


def _age(number: float) -> Read:
    if not (math.isfinite(number) and 0 <= number <= _MAX_AGE):
        return _unreadable()
    written = str(int(number)) if number == int(number) else repr(number)
    return Read(written, float(math.floor(number)))


def _unreadable() -> Read:
    return Read(None, None, unreadable=True)


def _finest(parts: list[Read]) -> Read:
    """A set label ``"a, b"`` reads as its most precise member (unreadable if one is)."""
    told = [p.precision for p in parts if p.precision is not None]
    canonical = ", ".join(sorted(p.canonical for p in parts if p.canonical is not None))
    return Read(canonical or None, max(told) if told else None, any(p.unreadable for p in parts))


READERS = {DATE: read_date, POSTCODE: read_postcode, AGE: read_age}


# --- one column --------------------------------------------------------------------------------

# A column is recognized from this many of its distinct values (all of them when fewer).
SAMPLE = 1000
_DATES_SHARE = 0.1  # of present values, to the month or the day, for a date column by content
_NAMED_SHARE = 0.5  # of present values, for a postcode or age column (by name and content)


def column_kind(name: str, sample: Sequence) -> str | None:
    """Whether a column holds dates, postcodes or ages (None: none of them), from its name and
    a sample of its distinct values (see the module docstring).

    Examples
    --------
    >>> column_kind("x", ["1983-04-12", "12/04/1983", "n/a"]), column_kind("zip", ["75 011"])
    ('date', 'postcode')
    >>> column_kind("Âge", ["93 ans", "40"]), column_kind("count", ["93", "40"])
    ('age', None)
    """
    present = [v for v in sample if not is_missing(v)]
    if not present:
        return None
    years = named(name, DATE)
    dated = [read_date(v, years=years) for v in present]
    fine = sum(r.precision is not None and r.precision > 0 for r in dated)
    if fine >= max(1, _DATES_SHARE * len(present)):
        return DATE
    if named(name, DATE) and any(r.precision is not None for r in dated):
        return DATE
    half = _NAMED_SHARE * len(present)
    for kind in (POSTCODE, AGE):
        if named(name, kind) or (kind == POSTCODE and named(name, ADDRESS)):
            read = [READERS[kind](v) for v in present]
            if sum(r.precision is not None for r in read) >= half:
                return kind
    # By content alone: postcodes in a writing that says so, addresses holding one, ages
    # with their unit.
    texts = [_text(v).upper() for v in present if isinstance(v, str)]
    if sum(bool(_POSTCODE_WRITTEN.fullmatch(t)) for t in texts) >= half:
        return POSTCODE
    written = [_text(v) for v in present if isinstance(v, str)]
    in_text = [t for t in written if _WORD.search(t) and _ADDRESS_SHAPE.search(t)]
    if texts and len(in_text) >= half:
        return POSTCODE
    read = [read_age(v) for v in present]
    ages = sum(r.precision is not None for r in read)
    units = sum(bool(_AGE_WITH_UNIT.search(t)) for t in texts)
    if ages >= half and units >= max(1, 0.2 * len(present)):
        return AGE
    return None


@dataclass(frozen=True, eq=False)
class ColumnReading:
    """A column's distinct values read as its kind (one entry per value, by code)."""

    kind: str
    canonical: np.ndarray  # object: the canonical spelling, None where the value tells nothing
    precision: np.ndarray  # float: NaN where it tells nothing
    unreadable: np.ndarray  # bool

    def finest(self) -> float | None:
        """The most precise value's precision (None when no value tells any)."""
        told = self.precision[~np.isnan(self.precision)]
        return float(told.max()) if told.size else None

    def exceeding(self, limits: Limits) -> np.ndarray:
        """Which values are more precise than ``limits`` allow, or unreadable."""
        limit = bound(self.kind, limits)
        if limit is None:
            return np.zeros(self.precision.size, dtype=bool)
        with np.errstate(invalid="ignore"):
            return self.unreadable | (self.precision > limit)


def bound(kind: str, limits: Limits) -> float | None:
    """The highest precision ``limits`` allow for ``kind`` (None: no limit)."""
    if kind == DATE:
        return None if limits.date is None else float(DATE_LEVELS.index(limits.date))
    if kind == POSTCODE:
        return None if limits.postcode is None else float(limits.postcode)
    return None if limits.age is None else float(limits.age)


# Values of a column read one by one (about 20 microseconds each); past this many, the rest are
# unreadable (failing closed: the remedy masks them), so a column of a million distinct values
# in an unusual writing costs seconds, not minutes.
MAX_READ_ONE_BY_ONE = 200_000


def read_column(kind: str, values: pd.Series) -> ColumnReading:
    """Every one of ``values`` (a column's distinct values) read as ``kind``.

    Dates written ``YYYY-MM-DD`` (with a time or not) or ``DD/MM/YYYY``, most of a large column,
    are read by pandas at once; the other values one by one, as :func:`read_date` reads them, up
    to :data:`MAX_READ_ONE_BY_ONE`.
    """
    values = pd.Series(values, dtype=object).reset_index(drop=True)
    canonical = np.full(len(values), None, dtype=object)
    precision = np.full(len(values), np.nan)
    unreadable = np.zeros(len(values), dtype=bool)
    done = np.zeros(len(values), dtype=bool)
    if kind == DATE:
        done = _dates_at_once(values, canonical, precision, unreadable)
    reader = READERS[kind]
    left = np.flatnonzero(~done)
    unreadable[left[MAX_READ_ONE_BY_ONE:]] = True
    for i in left[:MAX_READ_ONE_BY_ONE].tolist():
        found = reader(values[i], years=True) if kind == DATE else reader(values[i])
        canonical[i] = found.canonical
        precision[i] = np.nan if found.precision is None else found.precision
        unreadable[i] = found.unreadable
    return ColumnReading(kind, canonical, precision, unreadable)


_ISO_AT_ONCE = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?"
_DMY_AT_ONCE = r"\d{2}/\d{2}/\d{4}"


def _dates_at_once(values: pd.Series, canonical, precision, unreadable) -> np.ndarray:
    """Read the common writings of a date column with pandas; which values were read."""
    text = values.where(values.map(type).eq(str).to_numpy(), "")
    done = np.zeros(len(values), dtype=bool)
    iso = text.str.fullmatch(_ISO_AT_ONCE).to_numpy(dtype=bool)
    if iso.any():
        days = pd.to_datetime(text[iso].str[:10], format="%Y-%m-%d", errors="coerce")
        _set_days(np.flatnonzero(iso), days, canonical, precision, unreadable, done)
    dmy = text.str.fullmatch(_DMY_AT_ONCE).to_numpy(dtype=bool)
    if dmy.any():
        written = text[dmy]
        days = pd.to_datetime(written, format="%d/%m/%Y", errors="coerce")
        month_first = pd.to_datetime(written, format="%m/%d/%Y", errors="coerce")
        _set_days(
            np.flatnonzero(dmy), days.fillna(month_first), canonical, precision, unreadable, done
        )
    return done


def _set_days(where, days: pd.Series, canonical, precision, unreadable, done) -> None:
    days = pd.Series(days).reset_index(drop=True)
    valid = days.notna().to_numpy()
    canonical[where[valid]] = days[valid].dt.strftime("%Y-%m-%d").to_numpy(dtype=object)
    precision[where[valid]] = DATE_LEVELS.index(DAY)
    unreadable[where[~valid]] = True
    done[where] = True


def sample_of(values: pd.Series, size: int = SAMPLE) -> list:
    """Up to ``size`` of a column's distinct values: those of the smallest hashes, so chosen by
    the values alone, whatever order an engine numbers them in (every engine recognizes a
    column the same way), and spread over them as a random choice would be."""
    if len(values) <= size:
        return values.tolist()
    hashes = pd.util.hash_array(values.to_numpy(dtype=object), categorize=False)
    return values.iloc[np.sort(np.argpartition(hashes, size)[:size])].tolist()


def describe(kind: str, precision: float) -> str:
    """A precision in words: ``to the day``, ``of 5 characters``, ``up to 97``."""
    if kind == DATE:
        return f"to the {DATE_LEVELS[int(precision)]}"
    if kind == POSTCODE:
        return f"of {int(precision)} characters"
    return f"up to {int(precision)}"


# --- any column, compared by meaning -----------------------------------------------------------


def fold(values: pd.Series) -> np.ndarray:
    """A spelling of each value under which writings of one value agree, for a column of no
    kind read here: a number by its value (``34``, ``34.0``, ``"034"``), text without case,
    blanks, invisible characters or compatibility forms (``F``, ``f``, ``" F "``); every missing
    value one spelling. Coarser than equality on purpose: two values it joins are one person's
    at worst (see :mod:`broker.engines.people`).

    The values are a column's distinct values, most often a handful: this works on arrays and
    one value at a time, without pandas' fixed cost per operation.

    Examples
    --------
    >>> fold(pd.Series(["F", " f ", "034", 34.0, None, "", "Ｆ"])).tolist()
    ['f', 'f', '#34.0', '#34.0', '', '', 'f']
    """
    array = values.to_numpy(dtype=object) if isinstance(values, pd.Series) else values
    array = np.asarray(array, dtype=object).ravel()
    text = np.where(pd.isna(array), "", array).astype(object)
    numbers = numbers_of(text)
    plain = np.fromiter((type(v) in _PLAIN for v in text), dtype=bool, count=len(text))
    numeric = np.isfinite(numbers) & plain  # not booleans
    folded = np.empty(len(text), dtype=object)
    folded[numeric] = ["#" + repr(n) for n in numbers[numeric].tolist()]
    rest = np.flatnonzero(~numeric)
    others = [i for i in rest.tolist() if type(text[i]) is not str]
    # Other objects are written as pandas writes them as text (bytes decoded, for one).
    written = dict(zip(others, pd.Series(text[others], dtype=object).astype(str), strict=True))
    for i in rest.tolist():
        word = written.get(i, text[i])
        if not word.strip():  # missing, blank
            folded[i] = ""
        elif word.isascii():  # ASCII text folds by one table (attribute_key of each character)
            folded[i] = word.translate(_ASCII_KEYS)
        else:
            folded[i] = attribute_key(str(text[i])).replace(" ", "")
    return folded


_PLAIN = (str, int, float)  # what may be read as a number (not booleans)


# attribute_key of each ASCII character (blanks removed): ASCII text folds by translation.
_ASCII_KEYS = str.maketrans({chr(c): attribute_key(chr(c)).strip() for c in range(128)})


@dataclass(frozen=True)
class ColumnPrecision:
    """How precise a column of dates, postcodes or ages is: its most precise value's
    ``finest`` precision (None when no value tells any) and how many of its distinct values
    are ``unreadable``. What the F-SLA precision rules judge (:mod:`broker.fsla.precision`)."""

    kind: str
    finest: float | None
    unreadable: int = 0
    # Of a column of birth dates (its name says birth): the earliest year a value may be (the
    # latest year of its range), the values that are already the top category left out.
    oldest_birth_year: int | None = None

    @classmethod
    def of(cls, name: str, values: pd.Series, numbers: bool = False) -> ColumnPrecision | None:
        """The precision of the column ``name`` from its distinct ``values`` (None when it holds
        no dates, postcodes or ages). ``numbers``: the content detector found only numbers in
        them, so they hold no dates (a tenth of dates would have shown): only a name can still
        make them postcodes or ages, and the values need not be sampled otherwise."""
        sample = sample_of(values)  # chosen by hash: every engine sees the same values
        if numbers and not (named(name, POSTCODE) or named(name, AGE) or named(name, DATE)):
            # Numbers hold dates only written 19500301: a tenth of them would show.
            compact = sum(bool(_COMPACT.fullmatch(_text(v))) for v in sample)
            if compact < max(1, _DATES_SHARE * len(sample)):
                return None
        kind = column_kind(name, sample)
        if kind is None:
            return None
        reading = read_column(kind, values)
        oldest = oldest_birth_year(reading) if kind == DATE and births(name) else None
        return cls(kind, reading.finest(), int(reading.unreadable.sum()), oldest)

    def exceeds(self, limits: Limits) -> bool:
        """Whether a value is more precise than ``limits`` allow, or unreadable, or (birth
        dates) a year that tells an age over ``limits.age``."""
        if self.too_old(limits):
            return True
        limit = bound(self.kind, limits)
        if limit is None:
            return False
        return self.unreadable > 0 or (self.finest is not None and self.finest > limit)

    def too_old(self, limits: Limits) -> bool:
        """Whether a birth year tells an age over ``limits.age`` (Safe Harbor: "all elements of
        dates (including year) indicative of such age"), apart from the top category; judged
        where a rule sets how precise dates may leave too (the remedy writes them so)."""
        if self.oldest_birth_year is None or limits.age is None or limits.date is None:
            return False
        return self.oldest_birth_year <= last_old_birth_year(limits.age)

    def as_dict(self) -> dict:
        finest = self.finest
        if finest is not None:
            finest = DATE_LEVELS[int(finest)] if self.kind == DATE else int(finest)
        found = {"kind": self.kind, "finest": finest, "unreadable": self.unreadable}
        if self.oldest_birth_year is not None:
            found["oldest_birth_year"] = self.oldest_birth_year
        return found

    @classmethod
    def from_dict(cls, data: dict | None) -> ColumnPrecision | None:
        """The inverse of :meth:`as_dict` (None for a report stored before precision)."""
        if not data:
            return None
        finest = data.get("finest")
        if isinstance(finest, str):
            finest = DATE_LEVELS.index(finest)
        return cls(
            data["kind"],
            None if finest is None else float(finest),
            data["unreadable"],
            data.get("oldest_birth_year"),
        )


# --- birth years that tell an age over the cap -------------------------------------------------

# The top category of birth years: every year up to the last one that tells an age over the cap
# (``1800/1936`` in 2026 for 89), its lower end a year nobody alive was born in, not a value.
TOP_BIRTH_FLOOR = 1800
_BIRTH_WORDS = _folded(
    "dob yob birth birthdate birthday birthyear born naissance datenaissance ddn "
    "nacimiento nascimento geburt geburtsdatum geburtsjahr"
)


def births(name: str) -> bool:
    """Whether a column's name says it holds birth dates or years (``dob``, ``birth_year``,
    ``DateNaissance``, ``yob``).

    >>> births("DateNaissance"), births("birth_year"), births("date_of_visit")
    (True, True, False)
    """
    words = name_words(name) | _words_without_digits(name)
    return bool(words & _BIRTH_WORDS) or any(
        word.startswith(stem) for word in words for stem in _STEMS[DATE]
    )


def last_old_birth_year(max_age: int, today: datetime.date | None = None) -> int:
    """The latest birth year that may tell an age over ``max_age`` (born that year, a person
    is ``max_age + 1`` or ``max_age`` today): 1936 in 2026 for 89."""
    return (today or datetime.date.today()).year - (max_age + 1)


def _years_of(canonical: str) -> tuple[int, int] | None:
    """The earliest and latest year a canonical date, year or range of years may be; a set
    ``"a, b"`` as its oldest member (that member is told).

    >>> _years_of("1983-04-12"), _years_of("1930/1939"), _years_of("1930, 1985")
    ((1983, 1983), (1930, 1939), (1930, 1930))
    """
    if ", " in canonical:
        parts = [_years_of(part) for part in canonical.split(", ")]
        told = [p for p in parts if p is not None]
        return min(told, key=lambda p: p[1]) if told else None
    if match := re.fullmatch(r"(\d{4})/(\d{4})", canonical):
        return int(match.group(1)), int(match.group(2))
    if match := re.match(r"(\d{4})(?:-|$)", canonical):
        return int(match.group(1)), int(match.group(1))
    return None


def oldest_birth_year(reading: ColumnReading) -> int | None:
    """The earliest of the latest years the values may be, the top category left out."""
    oldest = None
    for canonical in dict.fromkeys(c for c in reading.canonical.tolist() if c is not None):
        years = _years_of(canonical)
        if years is None or years[0] <= TOP_BIRTH_FLOOR:
            continue
        oldest = years[1] if oldest is None else min(oldest, years[1])
    return oldest


# --- values made less precise (the remedy's labels) --------------------------------------------
#
# Each label says something true of the value and no more than its limit allows: a year, a
# postcode's prefix followed by the mask, the top category of ages. A value of the kind that
# cannot be read is masked (its precision is unknown); missing values and values with no digit
# (``unknown``) stay as they are, since they tell nothing of the kind.


def _kept(value: object, read: Read) -> object:
    return MASK if read.unreadable else value


def date_labels(values: pd.Series, level: str, max_age: int | None = None) -> np.ndarray:
    """Each of ``values`` (a column's distinct values) as a date at ``level`` (``year`` or
    ``month``; a day-first writing that could also be read month first becomes its year, which
    both readings share); a value with a digit that reads as no date is masked (its precision is
    unknown); missing values and values with no digit stay.

    >>> date_labels(pd.Series(["12/04/1983", "1983-04-12T08:30", "1983-13-40", ""]), "year")
    array(['1983', '1983', '*', ''], dtype=object)
    >>> date_labels(pd.Series(["12/04/1983", "25/04/1983"]), "month")
    array(['1983', '1983-04'], dtype=object)

    With ``max_age`` (birth dates), a year that may tell an age over it leaves as the top
    category of birth years (``1800/1936`` in 2026 for 89), as Safe Harbor aggregates them.
    """
    values = pd.Series(values, dtype=object).reset_index(drop=True)
    reading = read_column(DATE, values)  # the common writings at once
    labels = values.to_numpy(dtype=object, copy=True)
    labels[reading.unreadable] = MASK
    allowed = DATE_LEVELS.index(level)
    for i, canonical in enumerate(reading.canonical.tolist()):
        if canonical is None:
            continue
        if ", " in canonical:
            labels[i] = MASK
        elif reading.precision[i] <= allowed:
            labels[i] = canonical
        elif level == YEAR or _either_way(values[i]):
            labels[i] = canonical[:4]
        else:
            labels[i] = canonical[:7]
    if max_age is not None:
        last = last_old_birth_year(max_age)
        for i, canonical in enumerate(reading.canonical.tolist()):
            years = None if canonical is None else _years_of(canonical)
            if years is not None and years[0] > TOP_BIRTH_FLOOR and years[1] <= last:
                labels[i] = f"{TOP_BIRTH_FLOOR}/{last}"
    return labels


def date_label(value: object, level: str) -> object:
    """:func:`date_labels` of one value.

    >>> [date_label(v, "year") for v in ("12/04/1983", "12 avril 1983", "n/a")]
    ['1983', '1983', 'n/a']
    """
    return date_labels(pd.Series([value], dtype=object), level)[0]


def _either_way(value: object) -> bool:
    """Whether a day-first writing (``03/04/2024``) is also a date month first."""
    match = isinstance(value, str) and _DMY.fullmatch(_text(value).casefold())
    if not match:
        return False
    first, second = int(match.group(1)), int(match.group(2))
    return first != second and first <= 12 and second <= 12


def postcode_label(value: object, keep: int) -> object:
    """A postcode, however written, cut to its first ``keep`` characters and the mask.

    >>> [postcode_label(v, 3) for v in ("75011", "75 011", "750*", "75", "7A*B9", "")]
    ['750*', '750*', '750*', '75', '*', '']
    """
    read = read_postcode(value)
    if read.canonical is None or ", " in read.canonical:
        return _kept(value, read) if read.canonical is None else MASK
    shown = read.canonical.rstrip(MASK)
    if len(shown) <= keep and not read.canonical.endswith(MASK):
        return shown
    return f"{shown[:keep]}{MASK}" if keep else MASK


def age_label(value: object, max_age: int) -> object:
    """An age, however written, as a number up to ``max_age``; older ones, and ranges of them,
    as the top category (``90+`` for 89).

    >>> [age_label(v, 89) for v in ("93", "93 ans", "34 ans", "85-95", "92-99", "100+", "")]
    ['90+', '90+', '34', '85-95', '90+', '90+', '']
    """
    read = read_age(value)
    if read.canonical is None or ", " in read.canonical:
        return _kept(value, read) if read.canonical is None else MASK
    if read.precision is None or read.precision <= max_age:
        return read.canonical
    low = int(re.split(r"[-+]", read.canonical)[0].split(".")[0])
    return f"{min(low, max_age + 1)}+"

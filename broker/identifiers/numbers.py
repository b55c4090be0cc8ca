"""Identifiers written with digits (and a few letters): what each one is, and how sure that is.

Every check here takes one candidate, a short run that :mod:`broker.identifiers.scan` found with
a bounded pattern, and answers from its check digits or its format:

- **IBAN** (ISO 13616): country, two check digits, the national account number; the whole is
  1 modulo 97 (ISO 7064 MOD 97-10). ``python-stdnum`` checks the countries of the SWIFT
  registry with their lengths; the countries that use IBAN outside the registry (the eight
  BCEAO states, Senegal among them, and the other African states that publish one) are checked
  by their length and the same modulus.
- **Payment cards** (ISO/IEC 7812): an issuer prefix (IIN) of a network, a length that network
  issues, and the Luhn check digit.
- **Passports** (ICAO Doc 9303): a machine-readable zone line (TD1, TD2, TD3) whose check
  digits hold (weights 7, 3, 1), or a name line; a member state's passport-number format alone
  is weak evidence (see :data:`PASSPORT_FORMATS`).
- **National ids**: every personal-id module of ``python-stdnum`` (check digits, dates of
  birth), graded by how often a random number of their length passes (:data:`PERSONAL_IDS`),
  and the formats that have no public check digit: Nigeria's NIN and BVN (11 digits), Senegal's
  NIN on the ECOWAS card (13 digits, the first the holder's sex), the US SSN.
- **Phone numbers**: Google's libphonenumber (``phonenumbers``), valid for one of the regions
  or written in international form; or written as a region of :data:`NATIONAL_FORM_REGIONS`
  writes its numbers nationally (the groups of ``(415) 555-2671``, ``020 7946 0018``).

Strength says what one hit proves: ``strong`` (a check that a random run passes about once in a
hundred or less, a structure no ordinary value has), ``medium`` (a check digit a tenth of
random runs pass, a valid phone number) and ``weak`` (a format alone).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum import luhn

STRONG, MEDIUM, WEAK = "strong", "medium", "weak"
EMAIL, PHONE, IBAN, PAYMENT_CARD = "email", "phone", "iban", "payment_card"
PASSPORT, NATIONAL_ID, PERSON_NAME = "passport", "national_id", "person_name"


@dataclass(frozen=True)
class Hit:
    """What one candidate is: a kind, how sure, what exactly, and the country when one."""

    kind: str
    strength: str
    what: str
    country: str | None = None


# python-stdnum's personal-id modules (module, country, name, strength). Strength from the share
# of random digit runs of the module's length that pass (measured by tests/identifiers):
# strong below 3 %, medium up to 20 %; a module that random runs pass more often (the US SSN:
# 89 %, the Argentine DNI: 100 %) is a format and is listed with the formats below.
PERSONAL_IDS: tuple[tuple[str, str, str, str], ...] = (
    ("fr.nir", "FR", "French NIR (social security number)", STRONG),
    ("fr.nif", "FR", "French tax number (NIF)", STRONG),
    ("be.nn", "BE", "Belgian national number", STRONG),
    ("br.cpf", "BR", "Brazilian CPF", STRONG),
    ("tr.tckimlik", "TR", "Turkish identity number", STRONG),
    ("ee.ik", "EE", "Estonian personal code", STRONG),
    ("lt.asmens", "LT", "Lithuanian personal code", STRONG),
    ("se.personnummer", "SE", "Swedish personal identity number", STRONG),
    ("is_.kennitala", "IS", "Icelandic kennitala", STRONG),
    ("no.fodselsnummer", "NO", "Norwegian birth number", STRONG),
    ("ro.cnp", "RO", "Romanian CNP", STRONG),
    ("bg.egn", "BG", "Bulgarian EGN", STRONG),
    ("za.idnr", "ZA", "South African ID number", STRONG),
    ("pl.pesel", "PL", "Polish PESEL", STRONG),
    ("gr.amka", "GR", "Greek AMKA", STRONG),
    ("si.emso", "SI", "Slovenian EMSO", STRONG),
    ("ch.ssn", "CH", "Swiss social security number", STRONG),
    ("it.codicefiscale", "IT", "Italian codice fiscale", STRONG),
    ("es.dni", "ES", "Spanish DNI", STRONG),
    ("es.nie", "ES", "Spanish NIE", STRONG),
    ("mx.curp", "MX", "Mexican CURP", STRONG),
    ("cn.ric", "CN", "Chinese resident identity card number", STRONG),
    ("fi.hetu", "FI", "Finnish personal identity code", STRONG),
    ("ke.pin", "KE", "Kenyan KRA PIN", STRONG),
    ("de.idnr", "DE", "German tax id (Steuer-ID)", STRONG),
    ("pt.cc", "PT", "Portuguese citizen card number", MEDIUM),
    ("dk.cpr", "DK", "Danish CPR number", MEDIUM),
    ("at.vnr", "AT", "Austrian social security number", MEDIUM),
    ("cz.rc", "CZ", "Czech birth number", MEDIUM),
    ("sk.rc", "SK", "Slovak birth number", MEDIUM),
    ("in_.aadhaar", "IN", "Indian Aadhaar number", MEDIUM),
    ("nl.bsn", "NL", "Dutch BSN", MEDIUM),
    ("gb.nhs", "GB", "British NHS number", MEDIUM),
    ("il.idnr", "IL", "Israeli identity number", MEDIUM),
    ("sn.ninea", "SN", "Senegalese NINEA", MEDIUM),
)
# The modules whose numbers hold letters (the others are given digits only).
_WITH_LETTERS = frozenset(
    ("it.codicefiscale", "es.dni", "es.nie", "mx.curp", "cn.ric", "fi.hetu", "ke.pin", "pt.cc")
)
# Each module's numbers' lengths in letters and digits: the others are not asked.
_LENGTHS = {
    "fr.nir": (15,), "fr.nif": (13,), "be.nn": (11,), "br.cpf": (11,), "tr.tckimlik": (11,),
    "ee.ik": (11,), "lt.asmens": (11,), "se.personnummer": (10, 12), "is_.kennitala": (10,),
    "no.fodselsnummer": (11,), "ro.cnp": (13,), "bg.egn": (10,), "za.idnr": (13,),
    "pl.pesel": (11,), "gr.amka": (11,), "si.emso": (13,), "ch.ssn": (13,),
    "it.codicefiscale": (16,), "es.dni": (9,), "es.nie": (9,), "mx.curp": (18,),
    "cn.ric": (18,), "fi.hetu": (10, 11), "ke.pin": (11,), "pt.cc": (12,), "dk.cpr": (10,),
    "at.vnr": (10,), "cz.rc": (9, 10), "sk.rc": (9, 10), "in_.aadhaar": (12,),
    "nl.bsn": (8, 9), "gb.nhs": (10,), "il.idnr": (8, 9), "sn.ninea": (7, 9, 10),
    "de.idnr": (11,),
}  # fmt: skip
# Formats with no public check digit: (pattern over the digits, country, name).
ID_FORMATS: tuple[tuple[re.Pattern, str, str], ...] = (
    (re.compile(r"\d{11}"), "NG", "Nigerian NIN or BVN (11 digits)"),
    (re.compile(r"[12]\d{12}"), "SN", "Senegalese NIN (13 digits, the first the holder's sex)"),
)
_SSN = re.compile(r"(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}")
# Passport numbers as the member states print them (ICAO allows up to 9 characters): France
# 2 digits, 2 letters, 5 digits; Nigeria a letter and 8 digits; Senegal and Kenya one or two
# letters and 7 or 8 digits. A format alone: weak.
PASSPORT_FORMATS = re.compile(r"\d{2}[A-Z]{2}\d{5}|[A-Z]{1,2}\d{7,8}")

# Card networks: (lowest prefix, highest prefix, lengths issued).
_CARDS: tuple[tuple[str, str, tuple[int, ...], str], ...] = (
    ("4", "4", (16, 19), "Visa"),
    ("51", "55", (16,), "Mastercard"),
    ("2221", "2720", (16,), "Mastercard"),
    ("34", "34", (15,), "American Express"),
    ("37", "37", (15,), "American Express"),
    ("6011", "6011", (16, 17, 18, 19), "Discover"),
    ("644", "649", (16, 17, 18, 19), "Discover"),
    ("65", "65", (16, 17, 18, 19), "Discover"),
    ("300", "305", (14, 15, 16, 17, 18, 19), "Diners Club"),
    ("36", "36", (14, 15, 16, 17, 18, 19), "Diners Club"),
    ("38", "39", (16, 17, 18, 19), "Diners Club"),
    ("3528", "3589", (16, 17, 18, 19), "JCB"),
    ("62", "62", (16, 17, 18, 19), "UnionPay"),
    ("2200", "2204", (16, 17, 18, 19), "Mir"),
    ("506099", "506198", (16, 18, 19), "Verve"),
    ("507865", "507964", (16, 18, 19), "Verve"),
    ("650002", "650027", (16, 18, 19), "Verve"),
    ("50", "50", (12, 13, 14, 15, 16, 17, 18, 19), "Maestro"),
    ("56", "69", (12, 13, 14, 15, 16, 17, 18, 19), "Maestro"),
)
# IBAN countries outside the SWIFT registry, with their lengths (the BCEAO states, the BEAC
# states and the other African states that publish one).
_IBAN_OUTSIDE_REGISTRY = {
    "SN": 28, "CI": 28, "ML": 28, "BF": 28, "BJ": 28, "NE": 28, "TG": 28, "GW": 25,
    "CM": 27, "CF": 27, "CG": 27, "GA": 27, "TD": 27, "GQ": 27, "KM": 27, "MG": 27,
    "DZ": 26, "AO": 25, "CV": 25, "MA": 28, "IR": 26,
}  # fmt: skip


def card(digits: str) -> Hit | None:
    """A payment card number: a network's prefix and length, and the Luhn check.

    >>> card("4111111111111111"), card("4111111111111112")
    (Hit(kind='payment_card', strength='strong', what='Visa card number', country=None), None)
    """
    if not 12 <= len(digits) <= 19:
        return None
    for low, high, lengths, network in _CARDS:
        prefix = digits[: len(low)]
        if len(digits) in lengths and low <= prefix <= high and luhn.is_valid(digits):
            return Hit(PAYMENT_CARD, STRONG, f"{network} card number")
    return None


def iban(compact: str) -> Hit | None:
    """An IBAN: ``compact`` is upper case without separators; the longest valid prefix of it
    counts (a text may run on after the number).

    >>> iban("FR7630006000011234567890189").what, iban("FR7630006000011234567890188")
    ('IBAN (FR)', None)
    """
    country = compact[:2]
    outside = _IBAN_OUTSIDE_REGISTRY.get(country)
    for length in range(min(len(compact), 34), 14, -1):
        candidate = compact[:length]
        if outside is not None:
            if length == outside and _mod97(candidate):
                return Hit(IBAN, STRONG, f"IBAN ({country})", country)
        elif _mod97(candidate) and stdnum_iban.is_valid(candidate):
            return Hit(IBAN, STRONG, f"IBAN ({country})", country)
    return None


def _mod97(candidate: str) -> bool:
    rearranged = candidate[4:] + candidate[:4]
    if not rearranged.isalnum():
        return False
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def national_ids(candidate: str) -> list[Hit]:
    """The national ids ``candidate`` (digits, maybe with their usual separators or letters)
    is valid as, checked by python-stdnum, and the formats it matches.

    >>> [h.what for h in national_ids("1 85 05 78 006 084 91")]
    ['French NIR (social security number)']
    >>> [(h.country, h.strength) for h in national_ids("12345678901")]
    [('NG', 'weak')]
    """
    found = []
    digits = re.sub(r"\D", "", candidate)
    letters = any(c.isalpha() for c in candidate)
    length = sum(c.isalnum() for c in candidate)
    for module, country, name, strength in PERSONAL_IDS:
        if (letters and module not in _WITH_LETTERS) or length not in _LENGTHS[module]:
            continue
        if _valid(module, candidate):
            found.append(Hit(NATIONAL_ID, strength, name, country))
    if digits == candidate.replace(" ", "").replace("-", "").replace(".", ""):
        for pattern, country, name in ID_FORMATS:
            if pattern.fullmatch(digits):
                found.append(Hit(NATIONAL_ID, WEAK, name, country))
    if _SSN.fullmatch(candidate.strip()):
        found.append(Hit(NATIONAL_ID, WEAK, "US social security number", "US"))
    return found


def _valid(module: str, candidate: str) -> bool:
    try:
        return bool(_module(module).is_valid(candidate))
    except Exception:  # a checker that trips on odd input has not validated it
        return False


@cache
def _module(name: str):
    return importlib.import_module(f"stdnum.{name}")


def passport_format(token: str) -> Hit | None:
    """A member state's passport-number format: weak alone."""
    if PASSPORT_FORMATS.fullmatch(token):
        return Hit(PASSPORT, WEAK, "passport number format")
    return None


_MRZ_WEIGHTS = (7, 3, 1)
_MRZ_VALUES = {c: i for i, c in enumerate("0123456789")} | {
    c: 10 + i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
}
_MRZ_NAME_LINE = re.compile(r"[PIACV][A-Z<][A-Z<]{3}[A-Z]+(?:<[A-Z]+)*<<[A-Z]+[A-Z<]*")


def _check(field: str) -> str:
    total = sum(_MRZ_VALUES.get(c, 0) * _MRZ_WEIGHTS[i % 3] for i, c in enumerate(field))
    return str(total % 10)


def mrz(line: str) -> Hit | None:
    """A machine-readable-zone line of ICAO Doc 9303 whose check digits hold (TD3 passports,
    44 characters; TD2, 36; TD1 identity cards, 30), or a document's name line.

    >>> mrz("L898902C36UTO7408122F1204159ZE184226B<<<<<10").what
    'passport machine-readable zone (ICAO 9303, TD3)'
    >>> mrz("L898902C36UTO7408122F1204159ZE184226B<<<<<11")
    """
    n = len(line)
    if n in (30, 36, 44) and _MRZ_NAME_LINE.fullmatch(line) and "<<" in line:
        return Hit(PASSPORT, STRONG, f"machine-readable zone name line (ICAO 9303, {_td(n)})")
    if n == 44:  # TD3 line 2
        fields = ((0, 9), (13, 19), (21, 27), (28, 42))
        composite = line[0:10] + line[13:20] + line[21:43]
        if _checks(line, fields) and _check(composite) == line[43]:
            return Hit(PASSPORT, STRONG, "passport machine-readable zone (ICAO 9303, TD3)")
    elif n == 36:  # TD2 line 2
        fields = ((0, 9), (13, 19), (21, 27))
        composite = line[0:10] + line[13:20] + line[21:35]
        if _checks(line, fields) and _check(composite) == line[35]:
            return Hit(PASSPORT, STRONG, "travel document machine-readable zone (ICAO 9303, TD2)")
    elif n == 30 and line[:6].replace("<", "").isdigit():  # TD1 line 2: dates first
        fields = ((0, 6), (8, 14))
        if _checks(line, fields) and line[15:18].isalpha():
            return Hit(PASSPORT, STRONG, "identity card machine-readable zone (ICAO 9303, TD1)")
    elif n == 30 and line[0] in "IAC" and _checks(line, ((5, 14),)) and line[2:5].isalpha():
        return Hit(PASSPORT, MEDIUM, "identity card machine-readable zone (ICAO 9303, TD1)")
    return None


def _td(length: int) -> str:
    return {44: "TD3", 36: "TD2", 30: "TD1"}[length]


def _checks(line: str, fields: Sequence[tuple[int, int]]) -> bool:
    """Each field's check digit (the character after it) holds, and a date field is a date."""
    for start, end in fields:
        field, digit = line[start:end], line[end]
        if not digit.isdigit() or _check(field) != digit:
            return False
        if end - start == 6 and not (field.isdigit() and 1 <= int(field[2:4]) <= 12):
            return False
    return True


# Regions whose national forms are read whatever the transfer's regions, besides those: the
# United States and the United Kingdom write to and from every member state.
NATIONAL_FORM_REGIONS = ("US", "GB")


def phone(candidate: str, regions: Sequence[str]) -> Hit | None:
    """A phone number valid in one of ``regions`` (asked only of the regions whose national
    numbers have its length), or in international form (+ or 00), or written in the groups
    that one of ``regions`` or :data:`NATIONAL_FORM_REGIONS` prints its national numbers in
    (a run of digits alone, an amount or a date has other groups).

    >>> phone("77 123 45 67", ["SN"]).what, phone("06 12 34 56 78", ["FR"]).what
    ('phone number (SN)', 'phone number (FR)')
    >>> phone("4 4111 1111", ["FR"]), phone("4012 8888", ["KE"])  # no trunk prefix, too short
    (None, None)
    >>> phone("(415) 555-2671", ["SN"]).what, phone("4155552671", ["SN"])  # US groups, or none
    ('phone number (US)', None)
    """
    stripped = candidate.strip()
    digits = re.sub(r"\D", "", stripped)
    if stripped.startswith("+") or stripped.startswith("00"):
        international = digits[2:] if stripped.startswith("00") else digits
        return _valid_phone("+" + international, None) if 7 <= len(international) <= 15 else None
    for region in regions:
        prefix, lengths = _national_lengths(region)
        # Written nationally, a number starts with its trunk prefix ("0" in France, Nigeria,
        # Kenya) and has nine digits or more: shorter runs are counts, codes and amounts.
        if len(digits) < 9 or not digits.startswith(prefix):
            continue
        if len(digits) - len(prefix) in lengths:
            hit = _valid_phone(stripped, region)
            if hit:
                return hit
    groups = re.findall(r"\d+", stripped)
    if len(groups) < 2 or not 9 <= len(digits) <= 12:
        return None
    for region in dict.fromkeys((*regions, *NATIONAL_FORM_REGIONS)):
        hit = _written_nationally(stripped, groups, region)
        if hit:
            return hit
    return None


def _written_nationally(stripped: str, groups: list[str], region: str) -> Hit | None:
    """A valid number of ``region`` whose digit groups are those of its national format
    (the trunk prefix may stand as a group of its own: ``1-415-555-2671``)."""
    try:
        number = phonenumbers.parse(stripped, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):  # of the region's country code
        return None
    national = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    expected = [len(g) for g in re.findall(r"\d+", national)]
    written = [len(g) for g in groups]
    prefix, _ = _national_lengths(region)
    if written != expected and not (prefix and groups[0] == prefix and written[1:] == expected):
        return None
    where = phonenumbers.region_code_for_number(number)
    return Hit(PHONE, STRONG, f"phone number ({where})", where)


def _valid_phone(text: str, region: str | None) -> Hit | None:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    where = phonenumbers.region_code_for_number(number)
    return Hit(PHONE, STRONG, f"phone number ({where})", where)


@cache
def _national_lengths(region: str) -> tuple[str, frozenset[int]]:
    """A region's trunk prefix and the lengths of its national numbers (libphonenumber's
    metadata): a run of another length is not parsed for that region."""
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if metadata is None:
        return "", frozenset()
    return metadata.national_prefix or "", frozenset(metadata.general_desc.possible_length)

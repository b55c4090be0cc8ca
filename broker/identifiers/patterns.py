"""Identifiers found by a pattern of their own: devices, vehicles, places and the national
numbers that mix letters and digits in a fixed layout.

:func:`found` runs each kind's bounded pattern over one reading of a text and checks what it
matched; :mod:`broker.identifiers.scan` calls it on every reading. Each kind, its check and the
strength of one hit (the scheme of :mod:`broker.identifiers.numbers`):

- **UK National Insurance number** (HMRC's National Insurance Manual, NIM39110): two prefix
  letters (the first never D, F, I, Q, U or V, the second never D, F, I, O, Q, U or V, and never
  BG, GB, KN, NK, NT, TN or ZZ), six digits, a suffix A to D. No check digit: medium.
- **Indian PAN** of a person (python-stdnum ``in_.pan``: five letters, four digits, a letter;
  the fourth letter ``P``, an individual): the layout only, medium.
- **German tax id** (python-stdnum ``de.idnr``) written in its groups ``12 345 678 901``,
  which the scan reads as an amount (written otherwise it is one of the national ids of
  :mod:`broker.identifiers.numbers`): strong.
- **Ghana card** personal id number ``GHA-#########-#``: a layout no other value has, strong.
- **UK driving licence number** (DVLA): five letters of the surname padded with 9, the birth
  date encoded in six digits (month plus 50 for women), two initials, a digit, two check
  letters: strong (a date that must be one, in a 16-character layout).
- **IMEI** (3GPP TS 23.003, python-stdnum ``imei``): 15 digits, the Luhn digit, and a reporting
  body's prefix: medium; strong written in its 2-6-6-1 groups or after the word "IMEI".
- **VIN** (ISO 3779): 17 characters without I, O or Q, four digits last. The North American
  check digit (49 CFR 565.15, position 9) and a model-year letter: strong; else a format, weak.
- **Number plates** of the member states: Senegal (a region's code, four digits, one or two
  letters: ``DK-1234-AB``) and the two-letters, three-digits, two-letters plates of Senegal's
  2021 series and France's SIV (``AA-123-BB``, written with their separators): medium; the
  same run together, Nigeria's (``ABC-123DE``) and Kenya's (``KCA 123A``): weak.
- **MAC addresses** (IEEE EUI-48): six pairs of hex digits joined by ``:`` or ``-`` (or three
  groups of four joined by dots), a unicast address that is not all zeros: strong.
- **IP addresses** (the standard library's :mod:`ipaddress`): a public (global) IPv6 address,
  strong; a public IPv4 address, medium (weak when its four numbers are single digits, as a
  version number's are). A private one (RFC 1918, RFC 6598's shared space, link-local, IPv6
  unique-local) is weak: it names a device only inside its own network, so only a column of
  them (half the values) is a direct identifier. Loopback, unspecified, multicast, reserved and
  documentation addresses name no device and are not reported.
- **GPS coordinates**: a latitude and a longitude, each with four decimals or more (11 metres
  or finer: a home), in range, one of them at least 1 in size: medium; strong with a
  hemisphere letter, a degree sign or a word that names them ("GPS", "lat", "coordinates").
  Degrees, minutes and seconds with hemispheres: strong.

A weak or medium hit becomes strong when a word naming its kind stands in the 40 characters
before it ("national insurance", "PAN", "plaque", "VIN", "IMEI", "MAC", "IP", "GPS", ...).
Every pattern has bounded repetitions: a scan stays linear in the text.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator

from stdnum import imei as stdnum_imei
from stdnum.de import idnr as stdnum_idnr
from stdnum.in_ import pan as stdnum_pan

from broker.identifiers.numbers import MEDIUM, NATIONAL_ID, STRONG, WEAK, Hit

DEVICE, VEHICLE, LOCATION = "device", "vehicle", "location"

_EDGE_L = r"(?<![A-Za-z0-9])"
_EDGE_R = r"(?![A-Za-z0-9])"
_REACH = 40

# --- national numbers with letters -------------------------------------------------------------

_NINO = re.compile(_EDGE_L + r"([A-Z]{2})( ?)(\d{2})\2(\d{2})\2(\d{2})\2([A-D])" + _EDGE_R, re.I)
_NINO_NOT_FIRST, _NINO_NOT_SECOND = set("DFIQUV"), set("DFIOQUV")
_NINO_NOT_PREFIX = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}
_PAN = re.compile(_EDGE_L + r"[A-Z]{3}P[A-Z]\d{4}[A-Z]" + _EDGE_R, re.I)
_GHANA_CARD = re.compile(_EDGE_L + r"GHA[- ]?\d{9}[- ]?\d" + _EDGE_R, re.I)
# The German tax id written in its groups (2, 3, 3, 3), which the scan masks as an amount.
_IDNR = re.compile(r"(?<![\d.,])\d{2} \d{3} \d{3} \d{3}(?![\d.,])")
_DVLA = re.compile(_EDGE_L + r"([A-Z9]{5}) ?(\d{6}) ?([A-Z9]{2}\d[A-Z]{2})" + _EDGE_R, re.I)

# --- devices -----------------------------------------------------------------------------------

_IMEI = re.compile(r"(?<![\d-])(\d{2})([- ]?)(\d{6})\2(\d{6})\2(\d)(?![\d-])")
# GSMA reporting bodies: the first two digits of every type allocation code.
_IMEI_BODIES = frozenset(re.findall(r"\d\d", "01 10 30 33 35 44 45 49 50 51 52 53 54 86 91 98 99"))
_MAC = re.compile(
    r"(?<![0-9A-Fa-f:.-])(?:[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}"
    r"|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})(?![0-9A-Fa-f:-]|\.[0-9A-Fa-f])"
)
# A sentence may end after an address: a dot follows, a dot and a digit do not.
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d|/\d)")
_IPV6 = re.compile(
    r"(?<![0-9A-Fa-f:.])(?=[0-9A-Fa-f:]*::|(?:[0-9A-Fa-f]{1,4}:){7})"
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:]|\.\d|/\d)"
)
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
_PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
        "fc00::/7", "fe80::/10",
    )
)  # fmt: skip

# --- vehicles ----------------------------------------------------------------------------------

_VIN = re.compile(_EDGE_L + r"[A-HJ-NPR-Z0-9]{13}\d{4}" + _EDGE_R, re.I)
# ISO 3779's transliteration of letters for the check digit (I, O and Q are never used).
_VIN_VALUES = dict(zip("0123456789", range(10), strict=True)) | dict(
    zip("ABCDEFGHJKLMNPRSTUVWXYZ", (*range(1, 9), 1, 2, 3, 4, 5, 7, 9, *range(2, 10)), strict=True)
)
_VIN_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)
_VIN_YEARS = set("ABCDEFGHJKLMNPRSTVWXY123456789")
# Senegal's region codes on the plates of the old series (DK Dakar, TH Thiès, ...).
_SN_REGIONS = "DK|TH|DB|SL|LG|KL|ZG|TC|KD|FK|MT|KF|KG|SD"
_PLATE_SN = re.compile(_EDGE_L + rf"(?:{_SN_REGIONS})([- ])\d{{4}}\1[A-Z]{{1,2}}" + _EDGE_R)
_SIV = "[A-HJ-NP-TV-Z]"  # France's SIV letters: no I, O or U
_PLATE_SIV = re.compile(_EDGE_L + rf"{_SIV}{{2}}([- ]?)\d{{3}}\1{_SIV}{{2}}" + _EDGE_R)
_PLATE_NG = re.compile(_EDGE_L + r"[A-Z]{3}[- ]?\d{3}[- ]?[A-Z]{2}" + _EDGE_R)
_PLATE_KE = re.compile(_EDGE_L + r"K[A-Z]{2} ?\d{3}[A-Z]" + _EDGE_R)

# --- places ------------------------------------------------------------------------------------

_COORDINATE = r"[-+]?\d{1,3}\.\d{4,12}"
_DEGREE = r"\s?°?\s?"
_GPS = re.compile(
    rf"(?<![\d.])({_COORDINATE}){_DEGREE}([NS]?)\s?[,; ]\s?({_COORDINATE}){_DEGREE}([EWO]?)"
    r"(?!\d|\.\d)"
)
_DMS_ONE = r"\d{1,3}\s?°\s?\d{1,2}\s?['′]\s?\d{1,2}(?:[.,]\d{1,4})?\s?(?:\"|″|'')?\s?"
_DMS = re.compile(rf"{_DMS_ONE}[NS][\s,;]{{0,3}}{_DMS_ONE}[EWO]")

_KEYWORDS = {
    NATIONAL_ID: re.compile(
        r"national\s*insurance|\bnino\b|\bni\s*(?:no|number)|\bpan\b|permanent\s*account|"
        r"ghana\s*card|driv(?:ing|er'?s?)\s*licen[cs]e|permis",
        re.I,
    ),
    DEVICE: re.compile(r"\bimei\b|\bmac\b|\bip\b|adresse\s*ip|address|device|appareil", re.I),
    VEHICLE: re.compile(
        r"\bvin\b|ch[aâ]ssis|vehicle|v[ée]hicule|plate|plaque|immatricul|registration", re.I
    ),
    LOCATION: re.compile(r"\bgps\b|\blat|\blong?\b|coord|position|g[ée]oloc|location", re.I),
}


_DIGIT = re.compile(r"\d")
# A letter beside a digit (maybe across a blank or a dash): what every kind that mixes them has.
_MIXED = re.compile(r"[A-Za-z][ -]?\d|\d[ -]?[A-Za-z]")


def found(text: str, spend: Callable[[], None]) -> Iterator[Hit]:
    """Every identifier of this module's kinds in ``text``; ``spend()`` is called once per
    candidate checked (the scan's budget). A pattern is run only when ``text`` holds the
    characters its kind needs (a digit for all but some MAC and IPv6 addresses; a letter
    beside a digit; a dot, a colon, a degree sign): most values skip most patterns."""
    chars = set(text)
    if chars.isdisjoint(_DIGITS) and ":" not in chars:
        return
    mixed = _MIXED.search(text) is not None
    digits = len(_DIGIT.findall(text)) if mixed or not chars.isdisjoint(_DIGITS) else 0
    for pattern, check, needs in _CHECKS:
        if needs == MIXED:
            if not mixed:
                continue
        elif needs == FIFTEEN_DIGITS:
            if digits < 15:
                continue
        elif chars.isdisjoint(needs):
            continue
        for match in pattern.finditer(text):
            spend()
            hit = check(match)
            if hit is not None:
                yield _near_keyword(hit, text, match.start())


def _near_keyword(hit: Hit, text: str, start: int) -> Hit:
    if hit.strength == STRONG or hit.what.startswith("private"):  # named or not, one network's
        return hit
    before = text[max(0, start - _REACH) : start]
    if not _KEYWORDS[hit.kind].search(before):
        return hit
    return Hit(hit.kind, STRONG, f"{hit.what} (near a keyword)", hit.country)


def nino(match: re.Match) -> Hit | None:
    """A UK National Insurance number: HMRC's prefix rules, six digits, a suffix A to D.

    >>> nino(_NINO.search("QQ 12 34 56 C")), nino(_NINO.search("AB 12 34 56 C")).what
    (None, 'UK National Insurance number')
    """
    if match.group(2) and not (match.group(1) + match.group(6)).isupper():
        return None  # "at 12 34 56 a": words and numbers, not a number written in groups
    prefix = match.group(1).upper()
    if prefix[0] in _NINO_NOT_FIRST or prefix[1] in _NINO_NOT_SECOND or prefix in _NINO_NOT_PREFIX:
        return None
    return Hit(NATIONAL_ID, MEDIUM, "UK National Insurance number", "GB")


def pan(match: re.Match) -> Hit | None:
    """An Indian PAN of a person (python-stdnum's format checks; the fourth letter P)."""
    if not stdnum_pan.is_valid(match.group().upper()):
        return None
    return Hit(NATIONAL_ID, MEDIUM, "Indian PAN (permanent account number)", "IN")


def ghana_card(match: re.Match) -> Hit:
    return Hit(NATIONAL_ID, STRONG, "Ghana card personal id number", "GH")


def idnr(match: re.Match) -> Hit | None:
    """A German tax id written in its groups (python-stdnum's ``de.idnr``: the digits' rule and
    ISO 7064 MOD 11,10).

    >>> idnr(_IDNR.search("36 574 261 809")).what, idnr(_IDNR.search("36 574 261 890"))
    ('German tax id (Steuer-ID)', None)
    """
    if not stdnum_idnr.is_valid(match.group()):
        return None
    return Hit(NATIONAL_ID, STRONG, "German tax id (Steuer-ID)", "DE")


def driving_licence(match: re.Match) -> Hit | None:
    """A UK (DVLA) driving licence number: the surname's letters padded with 9, a birth date
    (month plus 50 for women), the initials padded with 9, a digit, two check letters.

    >>> driving_licence(_DVLA.search("MORGA753116SM9IJ")).what
    'UK driving licence number'
    >>> driving_licence(_DVLA.search("MORGA713116SM9IJ"))  # month 13
    """
    surname, digits, rest = (g.upper() for g in match.groups())
    if not re.fullmatch(r"[A-Z]+9*", surname) or not re.fullmatch(r"[A-Z][A-Z9]", rest[:2]):
        return None
    month, day = int(digits[1:3]), int(digits[3:5])
    if not (1 <= month % 50 <= 12 and month // 50 <= 1 and 1 <= day <= 31):
        return None
    return Hit(NATIONAL_ID, STRONG, "UK driving licence number", "GB")


def imei(match: re.Match) -> Hit | None:
    """An IMEI: 15 digits, the Luhn digit (python-stdnum) and a reporting body's prefix.

    >>> imei(_IMEI.search("35-209900-176148-1")).strength
    'strong'
    >>> imei(_IMEI.search("352099001761482"))  # Luhn
    """
    number = match.group(1) + match.group(3) + match.group(4) + match.group(5)
    if match.group(1) not in _IMEI_BODIES or not stdnum_imei.is_valid(number):
        return None
    strength = STRONG if match.group(2) else MEDIUM
    return Hit(DEVICE, strength, "IMEI (a mobile phone's serial number)")


def mac(match: re.Match) -> Hit | None:
    """A unicast MAC address, not all zeros: what a network card tells every network.

    >>> mac(_MAC.search("00:1A:2B:3C:4D:5E")).what, mac(_MAC.search("01:00:5E:00:00:FB"))
    ('MAC address', None)
    """
    digits = re.sub(r"[^0-9A-Fa-f]", "", match.group())
    if int(digits[:2], 16) & 1 or not int(digits, 16) or digits.upper() == "F" * 12:
        return None
    if match.group(1) == "-" and digits.isdigit():  # 12-34-56-78-90-12: digits in pairs
        return None
    return Hit(DEVICE, STRONG, "MAC address")


def ip(match: re.Match) -> Hit | None:
    """An IP address that names a device: public (strong for IPv6, medium for IPv4), or
    private (weak).

    >>> ip(_IPV4.search("from 41.82.12.7")).strength, ip(_IPV4.search("10.1.2.3")).strength
    ('medium', 'weak')
    >>> ip(_IPV4.search("127.0.0.1")), ip(_IPV4.search("192.0.2.1"))  # loopback, documentation
    (None, None)
    >>> ip(_IPV6.search("std a::b")), ip(_IPV6.search("fe80::1")).strength  # reserved, link-local
    (None, 'weak')
    """
    try:
        address = ipaddress.ip_address(match.group())
    except ValueError:
        return None
    if any(address in network for network in _PRIVATE):
        return Hit(DEVICE, WEAK, f"private IPv{address.version} address")
    if not address.is_global or address.is_multicast or address.is_reserved:
        return None
    if address.version == 6:  # only 2000::/3 is handed out (IANA's global unicast space)
        if address not in _GLOBAL_UNICAST_V6:
            return None
        return Hit(DEVICE, STRONG, "public IPv6 address")
    small = all(len(part) == 1 for part in match.group().split("."))
    return Hit(DEVICE, WEAK if small else MEDIUM, "public IPv4 address")


def vin(match: re.Match) -> Hit | None:
    """A vehicle identification number: strong with North America's check digit and a
    model-year letter, else a format.

    >>> vin(_VIN.search("1M8GDM9AXKP042788")).strength  # 49 CFR 565's example
    'strong'
    >>> vin(_VIN.search("WVWZZZ1JZXW000001")).strength  # no check digit in Europe
    'weak'

    """
    number = match.group().upper()
    if not any(c.isalpha() for c in number):  # a number: not a VIN of any maker
        return None
    total = sum(_VIN_VALUES[c] * w for c, w in zip(number, _VIN_WEIGHTS, strict=True))
    check = "X" if total % 11 == 10 else str(total % 11)
    if number[8] == check and number[9] in _VIN_YEARS:
        return Hit(VEHICLE, STRONG, "vehicle identification number (VIN)")
    return Hit(VEHICLE, WEAK, "vehicle identification number format")


def _plate(strength: str, what: str, country: str | None):
    def check(match: re.Match) -> Hit:
        separated = any(c in match.group() for c in " -")
        return Hit(VEHICLE, strength if separated else WEAK, what, country)

    return check


def gps(match: re.Match) -> Hit | None:
    """A latitude and a longitude to four decimals or more.

    >>> gps(_GPS.search("14.6937, -17.4441")).strength
    'medium'
    >>> gps(_GPS.search("14.6937° N, 17.4441° W")).strength
    'strong'

    >>> gps(_GPS.search("0.1234, 0.5678")), gps(_GPS.search("95.1234, 10.1234"))
    (None, None)
    """
    lat, north_south, lon, east_west = match.groups()
    latitude, longitude = float(lat), float(lon)
    if abs(latitude) > 90 or abs(longitude) > 180 or max(abs(latitude), abs(longitude)) < 1:
        return None
    marked = north_south or east_west or "°" in match.group()
    return Hit(LOCATION, STRONG if marked else MEDIUM, "GPS coordinates (11 m or finer)")


def dms(match: re.Match) -> Hit:
    return Hit(LOCATION, STRONG, "GPS coordinates (degrees, minutes, seconds)")


# What a text must hold for a pattern to be run: one of these characters, a letter beside a
# digit (MIXED) or fifteen digits.
_DIGITS = frozenset("0123456789")
MIXED, FIFTEEN_DIGITS = "a letter beside a digit", "fifteen digits"
_CHECKS: tuple[tuple[re.Pattern, Callable[[re.Match], Hit | None], str | frozenset], ...] = (
    (_NINO, nino, MIXED),
    (_PAN, pan, MIXED),
    (_GHANA_CARD, ghana_card, MIXED),
    (_IDNR, idnr, frozenset(" ")),
    (_DVLA, driving_licence, MIXED),
    (_IMEI, imei, FIFTEEN_DIGITS),
    (_MAC, mac, frozenset(":-.")),
    (_IPV4, ip, frozenset(".")),
    (_IPV6, ip, frozenset(":")),
    (_VIN, vin, MIXED),
    (_PLATE_SN, _plate(MEDIUM, "Senegalese number plate", "SN"), MIXED),
    (
        _PLATE_SIV,
        _plate(MEDIUM, "number plate (Senegal's 2021 series, France's SIV)", None),
        MIXED,
    ),
    (_PLATE_NG, _plate(WEAK, "Nigerian number plate format", "NG"), MIXED),
    (_PLATE_KE, _plate(WEAK, "Kenyan number plate format", "KE"), MIXED),
    (_GPS, gps, frozenset(".")),
    (_DMS, dms, frozenset("°")),
)

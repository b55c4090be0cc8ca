"""How a value is read before it is searched: folded to what a reader sees, and decoded.

A sender can write an identifier so that a reader still reads it but a pattern does not match:
full-width or mathematical letters and digits, Cyrillic or Greek look-alikes, Arabic-Indic
digits, zero-width characters between the digits, or the whole value encoded as base64, hex,
percent-escapes or quoted-printable. :func:`readings` gives every spelling the detectors must
search, each with the disguise it undid.

Every step is linear in the text and none makes it longer (decoding shrinks text: base64 to 3/4,
hex to 1/2, escapes to at most their length), so a value cannot explode; decoding goes
:data:`MAX_DEPTH` levels deep at most (base64 of hex of percent-escapes).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from urllib.parse import unquote

import regex
from confusable_homoglyphs import utils as confusables_data

from broker.identifiers.folding import letter_forms

MAX_DEPTH = 3
_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}){6,}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_QUOTED_PRINTABLE = re.compile(r"=[0-9A-F]{2}")

NFKC = "compatibility characters (full-width, mathematical, ligatures)"
INVISIBLE = "invisible characters"
LOOK_ALIKE = "look-alike letters or digits"
BASE64, HEX, PERCENT, QUOTED_PRINTABLE = "base64", "hex", "percent-escapes", "quoted-printable"


@dataclass(frozen=True)
class Reading:
    """One spelling of a value to search, and the disguises undone to get it (outermost first)."""

    text: str
    disguises: tuple[str, ...] = ()


def fold(text: str) -> Reading:
    """``text`` as a reader sees it, in ASCII where a look-alike exists: NFKC, default-ignorable
    code points removed, every decimal digit of any script made an ASCII digit, letters that
    Unicode's confusables table (UTS #39) gives an ASCII prototype replaced by it, exotic blanks
    and dashes made plain.

    Examples
    --------
    >>> fold("ａｗａ＠ｅｘａｍｐｌｅ．ｓｎ").text
    'awa@example.sn'
    >>> fold("77\\u200b123 ٤٥ 67").text, fold("раssроrt").text  # zero-width, Arabic-Indic, Cyrillic
    ('77123 45 67', 'passport')
    """
    disguises = []
    folded = unicodedata.normalize("NFKC", text)
    if folded != text:
        disguises.append(NFKC)
    visible = _IGNORABLE.sub("", folded)
    if visible != folded:
        disguises.append(INVISIBLE)
    if visible.isascii():
        return Reading(visible, tuple(disguises))
    plain = visible.translate(_to_ascii())
    if plain != visible:
        disguises.append(LOOK_ALIKE)
    return Reading(plain, tuple(disguises))


def readings(text: str) -> list[Reading]:
    """Every spelling of ``text`` to search: folded, and each encoded run in it decoded (then
    folded and decoded again, :data:`MAX_DEPTH` levels at most).

    Examples
    --------
    >>> [r.text for r in readings("YXdhQGV4YW1wbGUuc24=")][1]
    'awa@example.sn'
    >>> [(r.text, r.disguises) for r in readings("awa%40example.sn")][1]
    ('awa@example.sn', ('percent-escapes',))
    """
    first = fold(text)
    found, queue = [first], [(first, 0)]
    while queue:
        reading, depth = queue.pop()
        if depth == MAX_DEPTH:
            continue
        for decoded, how in _decoded(reading.text):
            inner = fold(decoded)
            step = Reading(inner.text, (*reading.disguises, how, *inner.disguises))
            found.append(step)
            queue.append((step, depth + 1))
    return found


def _decoded(text: str) -> list[tuple[str, str]]:
    """The readable texts ``text`` decodes to, one per encoding: the whole text unescaped
    (percent-escapes, quoted-printable), and every hex or base64 run in it decoded, the runs
    joined by line breaks. Each is shorter than ``text``."""
    found = []
    if "%" in text and _PERCENT.search(text):
        found.append((unquote(text, errors="replace"), PERCENT))
    if "=" in text and _QUOTED_PRINTABLE.search(text):
        decoded = _readable(binascii.a2b_qp(text.encode("ascii", "ignore")))
        if decoded is not None and decoded != text:
            found.append((decoded, QUOTED_PRINTABLE))
    for pattern, decode, how in ((_HEX, _hex, HEX), (_BASE64, _base64, BASE64)):
        runs = [decode(match.group()) for match in pattern.finditer(text)]
        readable = [run for run in runs if run is not None]
        if readable:
            found.append(("\n".join(readable), how))
    return found


def _hex(token: str) -> str | None:
    return _readable(bytes.fromhex(token))


def _base64(token: str) -> str | None:
    padded = token.rstrip("=")
    padded += "=" * (-len(padded) % 4)
    if len(padded.rstrip("=")) % 4 == 1:  # no base64 text has this length
        return None
    try:
        if "-" in padded or "_" in padded:
            raw = base64.urlsafe_b64decode(padded)
        else:
            raw = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _readable(raw)


def _readable(raw: bytes) -> str | None:
    """``raw`` as text when it is UTF-8 a person could read (letters, digits, punctuation and
    blanks): random bytes almost never are, so words that happen to be base64 are let be."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text or any(unicodedata.category(c)[0] == "C" and c not in "\t\n\r" for c in text):
        return None
    return text


class _AsciiReading(dict):
    """Non-ASCII code point -> its ASCII reading, for ``str.translate``: decimal digits of every
    script by their value, look-alikes (confusables whose prototype is one ASCII character),
    blanks and dashes; any other character reads as itself. Filled as characters are met."""

    def __init__(self, look_alikes: dict[int, str]):
        super().__init__(look_alikes)

    def __missing__(self, code: int) -> str | int:
        char = chr(code)
        category = unicodedata.category(char)
        if category == "Nd":
            found: str | int = str(unicodedata.decimal(char))
        elif category == "Zs":
            found = " "
        elif category == "Pd":
            found = "-"
        else:
            found = code
        self[code] = found
        return found


@cache
def _to_ascii() -> _AsciiReading:
    look_alikes: dict[int, str] = {}
    confusables = confusables_data.load("confusables.json")
    # Letters first: a character that looks like both "O" and "0" reads as the letter, so that
    # a look-alike never turns words into numbers (digits of other scripts are read by value).
    keys = sorted(
        (k for k in confusables if len(k) == 1 and k.isascii() and k.isprintable()),
        key=lambda k: (not k.isalpha(), k),
    )
    for key in keys:
        for homoglyph in confusables[key]:
            other = _IGNORABLE.sub("", homoglyph["c"])
            if len(other) == 1 and not other.isascii() and unicodedata.category(other) != "Nd":
                look_alikes.setdefault(ord(other), key)
    look_alikes.update(letter_forms())  # small capitals, negative circled letters: folding.py
    return _AsciiReading(look_alikes)

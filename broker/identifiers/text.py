"""How a value is read before it is searched: folded to what a reader sees, decoded, and undone.

A sender can write an identifier so that a reader still reads it but a pattern does not match:
full-width or mathematical letters and digits, Cyrillic or Greek look-alikes, Arabic-Indic
digits, zero-width or control characters (NUL) between the characters, UTF-16 text; the whole
value encoded (base64, base32, base85 and Ascii85, hex with or without separators,
percent-escapes, quoted-printable, HTML character references, backslash escapes, any of them
over gzip, zlib, bzip2 or xz, and nested); or transformed by a rule a reader undoes
(written backwards, ROT13 or ROT47, digits written as words in English or French, a separator
between every character). :func:`readings` gives every spelling the detectors must search,
each with the disguises it undid.

Cost is bounded per value whatever the sender writes: decoding never makes a text longer except
decompression, which stops at :data:`MAX_INFLATED` bytes; a chain of decodings goes
:data:`MAX_DEPTH` levels deep at most and a value yields :data:`MAX_READINGS` readings
(:data:`MAX_READ_CHARS` characters in all) at most; base32 and base85 runs are decoded up to
:data:`MAX_RUN_CHARS` characters; a transformation is applied once per chain, to values of at
most :data:`MAX_TRANSFORMED_CHARS` characters,
and only when its result has what an identifier needs (an address's shape, seven digits in a
row, an IBAN's start). A reading that undid a transformation counts only strong evidence
(:func:`broker.identifiers.scan.scan`): it is a second chance for chance matches.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import html
import itertools
import lzma
import re
import unicodedata
import zlib
from dataclasses import dataclass
from functools import cache
from urllib.parse import unquote

import regex
from confusable_homoglyphs import utils as confusables_data

from broker.identifiers.folding import letter_forms

MAX_DEPTH = 8
MAX_READINGS = 48
MAX_READ_CHARS = 1 << 16
MAX_INFLATED = 1 << 14
MAX_TRANSFORMED_CHARS = 2048  # a longer value is read as written and decoded, not transformed
MAX_RUN_CHARS = 4096  # base32 and base85 runs longer than this are not decoded
_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
# Control characters other than tab and line breaks: NUL and the rest read as nothing.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_BASE32 = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z2-7]{8,}|[a-z2-7]{8,})={0,6}")
_BASE85 = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{10,}")
_ASCII85 = re.compile(r"<~[!-uz\s]{5,}~>|(?<![!-u])[!-uz]{10,}")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}){6,}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_QUOTED_PRINTABLE = re.compile(r"=[0-9A-F]{2}")
_LONG_TOKEN = re.compile(r"\S{8}")
# Hex bytes with a separator between them ("61 77 61 40", "61:77:61:40", "0x61,0x77"), HTML
# character references ("&#97;", "&#x61;", "&commat;"), backslash escapes ("\x61", "\u0061").
_SPACED_HEX = re.compile(
    r"(?:(?:0x)?[0-9A-Fa-f]{2}[ :,;.\-]{1,2}){5,}(?:0x)?[0-9A-Fa-f]{2}(?![0-9A-Fa-f])"
)
_NOT_HEX = re.compile(r"0[xX](?=[0-9A-Fa-f]{2})|[^0-9A-Fa-f]")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE = re.compile(r"\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{3})")
_UTF16_LATIN1 = re.compile(r"^[\xfe\xff]{2}|\x00")

NFKC = "compatibility characters (full-width, mathematical, ligatures)"
INVISIBLE = "invisible characters"
CONTROL = "control characters (NUL)"
LOOK_ALIKE = "look-alike letters or digits"
BASE64, HEX, PERCENT, QUOTED_PRINTABLE = "base64", "hex", "percent-escapes", "quoted-printable"
BASE32, BASE85, ASCII85 = "base32", "base85", "Ascii85"
HTML_ENTITIES, ESCAPES = "HTML character references", "backslash escapes"
GZIP, ZLIB, BZIP2, XZ, UTF16 = "gzip", "zlib", "bzip2", "xz", "UTF-16"
REVERSED, ROT13, ROT47 = "written backwards", "ROT13", "ROT47"
DIGIT_WORDS = "digits written as words"
TOO_DEEP = "more encodings than are read"
SPACED_OUT = "a separator between every character"
TRANSFORMS = frozenset({REVERSED, ROT13, ROT47, DIGIT_WORDS, SPACED_OUT})


@dataclass(frozen=True)
class Reading:
    """One spelling of a value to search, and the disguises undone to get it (outermost first)."""

    text: str
    disguises: tuple[str, ...] = ()


def fold(text: str) -> Reading:
    """``text`` as a reader sees it, in ASCII where a look-alike exists: NFKC, default-ignorable
    code points and control characters (NUL) removed, every decimal digit of any script made an
    ASCII digit, letters that Unicode's confusables table (UTS #39) gives an ASCII prototype
    replaced by it, exotic blanks and dashes made plain.

    Examples
    --------
    >>> fold("ａｗａ＠ｅｘａｍｐｌｅ．ｓｎ").text
    'awa@example.sn'
    >>> fold("77\\u200b123 ٤٥ 67").text, fold("раssроrt").text  # zero-width, Arabic-Indic, Cyrillic
    ('77123 45 67', 'passport')
    >>> fold("a\\x00w\\x00a\\x00@\\x00").text
    'awa@'
    """
    disguises = []
    folded = unicodedata.normalize("NFKC", text)
    if folded != text:
        disguises.append(NFKC)
    visible = _IGNORABLE.sub("", folded)
    if visible != folded:
        disguises.append(INVISIBLE)
    printed = _CONTROL.sub("", visible)
    if printed != visible:
        disguises.append(CONTROL)
    if printed.isascii():
        return Reading(printed, tuple(disguises))
    plain = printed.translate(_to_ascii())
    if plain != printed:
        disguises.append(LOOK_ALIKE)
    return Reading(plain, tuple(disguises))


def readings(text: str, transform: bool = True) -> list[Reading]:
    """Every spelling of ``text`` to search: folded; each encoded run in it decoded, and the
    whole transformed unless ``transform`` is False (then folded, decoded and transformed
    again, within the bounds of the module docstring).

    Examples
    --------
    >>> [r.text for r in readings("YXdhQGV4YW1wbGUuc24=")][1]
    'awa@example.sn'
    >>> [(r.text, r.disguises) for r in readings("awa%40example.sn")][1]
    ('awa@example.sn', ('percent-escapes',))
    >>> [r.text for r in readings("ns.elpmaxe@awa") if r.disguises == (REVERSED,)]
    ['awa@example.sn']

    Past the bounds, the last reading is empty, its disguise :data:`TOO_DEEP`: the caller fails
    closed (no ordinary value needs more than three readings; the labelled corpus, eleven).
    """
    first = fold(text)
    found, queue = [first], [(first, 0, False)]
    seen, size = {first.text}, len(first.text)
    while queue:
        reading, depth, transformed = queue.pop(0)
        steps = _decoded(reading.text)
        if depth == MAX_DEPTH:
            if steps:  # still encoded eight levels down: no ordinary value is
                return [*found, Reading("", (TOO_DEEP,))]
            continue
        if transform and not transformed and len(reading.text) <= MAX_TRANSFORMED_CHARS:
            steps += [(t, (how,)) for t, how in _transformed(reading.text)]
        for decoded, how in steps:
            inner = fold(decoded)
            if inner.text in seen:
                continue
            if len(found) >= MAX_READINGS or size + len(inner.text) > MAX_READ_CHARS:
                return [*found, Reading("", (TOO_DEEP,))]  # ordinary values have 3 at most
            seen.add(inner.text)
            size += len(inner.text)
            step = Reading(inner.text, (*reading.disguises, *how, *inner.disguises))
            found.append(step)
            queue.append((step, depth + 1, transformed or how[0] in TRANSFORMS))
    return found


def _decoded(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The readable texts ``text`` decodes to, one per encoding: the whole text unescaped
    (percent-escapes, quoted-printable, UTF-16 read as Latin-1), and every run of an encoding
    in it decoded (and decompressed), the runs joined by line breaks."""
    found: list[tuple[str, tuple[str, ...]]] = []
    if "%" in text and _PERCENT.search(text):
        found.append((unquote(text, errors="replace"), (PERCENT,)))
    if "=" in text and _QUOTED_PRINTABLE.search(text):
        decoded = _text_of(binascii.a2b_qp(text.encode("ascii", "ignore")))
        if decoded is not None and decoded[0] != text:
            found.append((decoded[0], (QUOTED_PRINTABLE, *decoded[1])))
    if "&" in text and _ENTITY.search(text):
        found.append((html.unescape(text), (HTML_ENTITIES,)))
    if "\\" in text and _ESCAPE.search(text):
        found.append((_ESCAPE.sub(_unescape, text), (ESCAPES,)))
    if _SPACED_HEX.search(text):
        digits = [_NOT_HEX.sub("", m.group()) for m in _SPACED_HEX.finditer(text)]
        runs = [_hex(d) for d in digits if len(d) % 2 == 0]
        readable = [run for run in runs if run is not None]
        if readable:
            found.append(("\n".join(run[0] for run in readable), (HEX,)))
    if _UTF16_LATIN1.search(text) and all(ord(c) < 256 for c in text):
        decoded = _utf16(text.encode("latin-1"))
        if decoded is not None:
            found.append((decoded, (UTF16,)))
    if not _LONG_TOKEN.search(text):  # every encoding below needs a run of 8 characters
        return found
    for pattern, decode, how in _RUNS:
        runs = [decode(match.group()) for match in pattern.finditer(text)]
        readable = [run for run in runs if run is not None]
        for inner in dict.fromkeys(run[1] for run in readable):
            joined = "\n".join(run[0] for run in readable if run[1] == inner)
            found.append((joined, (how, *inner)))
    return found


def _unescape(match: re.Match) -> str:
    """One backslash escape as the character it names (a code point past Unicode reads as
    nothing)."""
    code = match.group()[1:]
    value = int(code[1:], 16) if code[0] in "xuU" else int(code, 8)
    return chr(value) if value <= 0x10FFFF else ""


def _hex(token: str) -> tuple[str, tuple[str, ...]] | None:
    return _text_of(bytes.fromhex(token))


def _base64(token: str) -> tuple[str, tuple[str, ...]] | None:
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
    return _text_of(raw)


def _base32(token: str) -> tuple[str, tuple[str, ...]] | None:
    if len(token) > MAX_RUN_CHARS:
        return None
    bare = token.rstrip("=")
    if len(bare) % 8 not in (0, 2, 4, 5, 7):  # no base32 text has these lengths
        return None
    try:
        raw = base64.b32decode(bare + "=" * (-len(bare) % 8), casefold=True)
    except (binascii.Error, ValueError):
        return None
    return _text_of(raw)


def _base85(token: str) -> tuple[str, tuple[str, ...]] | None:
    if len(token) > MAX_RUN_CHARS:
        return None
    try:
        raw = base64.b85decode(token)
    except (ValueError, binascii.Error):
        return None
    return _text_of(raw)


def _ascii85(token: str) -> tuple[str, tuple[str, ...]] | None:
    if len(token) > MAX_RUN_CHARS:
        return None
    try:
        raw = base64.a85decode(token, adobe=token.startswith("<~"), ignorechars=" \t\n\r\v")
    except (ValueError, binascii.Error):
        return None
    return _text_of(raw)


_RUNS = (
    (_HEX, _hex, HEX),
    (_BASE64, _base64, BASE64),
    (_BASE32, _base32, BASE32),
    (_BASE85, _base85, BASE85),
    (_ASCII85, _ascii85, ASCII85),
)


def _text_of(raw: bytes, depth: int = 0) -> tuple[str, tuple[str, ...]] | None:
    """The readable text ``raw`` holds and the containers undone to read it: the bytes
    themselves as UTF-8 or UTF-16, or what they decompress to (gzip, zlib, bzip2, xz; at most
    :data:`MAX_INFLATED` bytes, two containers deep)."""
    if depth < 2:
        for how, inflate in _CONTAINERS:
            inflated = inflate(raw)
            if inflated is not None:
                inner = _text_of(inflated, depth + 1)
                return None if inner is None else (inner[0], (how, *inner[1]))
    text = _readable(raw)
    if text is not None:
        return text, ()
    text = _utf16(raw)
    return None if text is None else (text, (UTF16,))


def _inflate(raw: bytes) -> bytes | None:
    gzip = raw[:2] == b"\x1f\x8b"
    zlibbed = len(raw) > 2 and raw[0] & 0x0F == 8 and (raw[0] << 8 | raw[1]) % 31 == 0
    if not (gzip or zlibbed):
        return None
    try:
        return zlib.decompressobj(wbits=31 if gzip else 15).decompress(raw, MAX_INFLATED)
    except zlib.error:
        return None


def _bunzip(raw: bytes) -> bytes | None:
    if raw[:3] != b"BZh":
        return None
    try:
        return bz2.BZ2Decompressor().decompress(raw, MAX_INFLATED)
    except (OSError, ValueError, EOFError):
        return None


def _unxz(raw: bytes) -> bytes | None:
    if raw[:6] != b"\xfd7zXZ\x00":
        return None
    try:
        return lzma.LZMADecompressor().decompress(raw, MAX_INFLATED)
    except (lzma.LZMAError, EOFError):
        return None


def _gzip_or_zlib(raw: bytes) -> bytes | None:
    return _inflate(raw)


_CONTAINERS = (("gzip or zlib", _gzip_or_zlib), (BZIP2, _bunzip), (XZ, _unxz))


def _utf16(raw: bytes) -> str | None:
    """``raw`` as UTF-16 text (little- or big-endian, with or without its byte-order mark),
    when it reads as text a person could read."""
    if len(raw) < 4 or len(raw) % 2:
        return None
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encoding = "utf-16"
    elif raw[1::2].count(0) * 2 >= len(raw) // 2:
        encoding = "utf-16-le"
    elif raw[0::2].count(0) * 2 >= len(raw) // 2:
        encoding = "utf-16-be"
    else:
        return None
    try:
        return _readable(raw.decode(encoding).encode("utf-8"))
    except UnicodeError:
        return None


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


# --- Transformations: rules a reader undoes by reading the value another way ---------------

# What an identifier needs, for a transformed reading to be worth searching: an address's
# shape, seven digits in a row (a phone number, a card, an id), an IBAN's start, a
# machine-readable zone, or a token of 8 to 20 letters and digits (a passport or id number).
_WORTH = re.compile(
    r"[\w.+-]@[^\W_][\w-]*\.\w|(?:\d[ .\-/]?){7}"
    r"|(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){11}|[A-Z0-9<]{30}"
    r"|(?<![A-Za-z0-9])(?=[A-Za-z]{0,19}\d)(?=\d{0,19}[A-Za-z])[A-Za-z0-9]{8,20}(?![A-Za-z0-9])"
)
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
_ROT47 = str.maketrans(
    "".join(map(chr, range(33, 127))), "".join(chr(33 + (c - 33 + 47) % 94) for c in range(33, 127))
)
# One character, then the same kind of separator and one character, six times or more:
# "a.w.a.d.i.o.p", "4-1-1-1 1-1-1-1"; the content may itself be a separator ("a.w.a...d").
_SEPARATORS = r" .\-_/|*,:;~+·•"
_SPACED_ONE = re.compile(rf"[^\n](?:[{_SEPARATORS}][^\n]){{5,}}")
# Several separators between characters that are not separators: "a . w . a", "4 - 1 - 1".
_SPACED_MORE = re.compile(rf"[^\s{_SEPARATORS}](?:[{_SEPARATORS}]{{1,3}}[^\s{_SEPARATORS}]){{5,}}")


# What ordinary values write with digits, blanked before a value is read backwards (read
# forwards, they are not identifiers; backwards, "2019 2020 2021 2022" is a Mir card number):
# lists and ranges of years, dates, times.
_ORDINARY = re.compile(
    r"(?<!\d)(?:(?:19|20)\d\d(?:\s{0,3}[-/,;]?\s{0,3}(?:19|20)\d\d(?!\d))+"
    r"|\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?)(?!\d)"
)
_SHORTEST = 7  # no identifier is shorter, however it is written
# A long run of digits said in words may be an international number said without its "plus".
_BARE_NUMBER = re.compile(r"(?<![+\d])\d{11,15}(?!\d)")


def _transformed(text: str) -> list[tuple[str, str]]:
    """``text`` read by each rule that changes it into something worth searching."""
    found: list[tuple[str, str]] = []
    if len(text) < _SHORTEST:
        return found
    backwards = _ORDINARY.sub(lambda m: " " * len(m.group()), text)[::-1]
    if _WORTH.search(backwards):
        found.append((backwards, REVERSED))
    for table, how in ((_ROT13, ROT13), (_ROT47, ROT47)):
        rotated = text.translate(table)
        if rotated != text and _WORTH.search(rotated):
            found.append((rotated, how))
    glued = digits_from_words(text, glued=True)
    if glued != text:
        said = digits_from_words(text)
        plus = [f"+{m.group()}" for m in _BARE_NUMBER.finditer(said)]
        found.append(("\n".join([said, glued, *plus]), DIGIT_WORDS))
    joined = _spaced_out(text)
    if joined != text:
        found.append((joined, SPACED_OUT))
    return found


def _spaced_out(text: str) -> str:
    """``text`` with each run of characters spaced out by separators written without them."""
    if not _SPACED_ONE.search(text) and not _SPACED_MORE.search(text):
        return text
    one = _SPACED_ONE.sub(lambda m: m.group()[::2], text)
    return _SPACED_MORE.sub(
        lambda m: re.sub(rf"[{_SEPARATORS}]", "", m.group()), one if one != text else text
    )


# Digits said in words, English and French: units, teens, tens and their compounds to 99
# ("soixante-dix-sept", "quatre-vingt-douze", "seventy-seven"), "double"/"triple" before a
# digit, "plus" before the digits of an international number.
_UNITS = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "zéro": 0, "un": 1, "une": 1, "deux": 2, "trois": 3,
    "quatre": 4, "cinq": 5, "sept": 7, "huit": 8, "neuf": 9,
}  # fmt: skip
_TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "dix": 10, "onze": 11,
    "douze": 12, "treize": 13, "quatorze": 14, "quinze": 15, "seize": 16,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "vingt": 20, "vingts": 20, "trente": 30, "quarante": 40,
    "cinquante": 50, "soixante": 60, "septante": 70, "octante": 80, "huitante": 80,
    "nonante": 90,
}  # fmt: skip
_REPEAT = {"double": 2, "triple": 3}
_WORD = re.compile(r"[^\W\d_]+|\d{1,4}")  # words, and digits written among them
_BETWEEN = re.compile(r"[\s\-,;.]*")
_SAID = re.compile(
    r"(?<![^\W\d_])(?:"
    + "|".join(sorted({*_UNITS, *_TEENS, *_TENS}, key=len, reverse=True))
    + r")(?![^\W\d_])",
    re.I,
)
_WORD_RUN_MIN = 4  # number words in a row: fewer are ordinary prose ("one or two")


def digits_from_words(text: str, glued: bool = False) -> str:
    """``text`` with each run of at least four number words written in digits: one group per
    number said ("soixante-dix-sept" 77), single digits joined, groups apart; ``glued``: all
    of a run's digits joined, and joined to the words either side, every number word read
    once the text holds four ("GB eight two WEST one two ..." is "GB82WEST12...").

    Examples
    --------
    >>> digits_from_words("deux deux un sept sept un deux trois")
    '22177123'
    >>> digits_from_words("plus two two one, seventy-seven, one two three, forty-five, sixty-seven")
    '+221 77 123 45 67'
    >>> digits_from_words("soixante-dix-sept cent"), digits_from_words("one or two")
    ('soixante-dix-sept cent', 'one or two')
    """
    if len(list(itertools.islice(_SAID.finditer(text), _WORD_RUN_MIN))) < _WORD_RUN_MIN:
        return text
    words = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]
    out, done, j = [], 0, 0
    while j < len(words):
        run, k = [], j
        while k < len(words):
            if run and not _BETWEEN.fullmatch(text, words[k - 1][1], words[k][0]):
                break
            parsed = _number_at(words, k, text)
            if parsed is None or (parsed[0] == "+" and run):
                break
            run.append(parsed[0])
            k = parsed[1]
        if k - j >= (1 if glued else _WORD_RUN_MIN) and any(v != "+" for v in run):
            before = text[done : words[j][0]]
            digits = "".join(v.lstrip("=") for v in run) if glued else _joined(run)
            out += [before.rstrip(" ") if glued else before, digits]
            done, j = words[k - 1][1], k
            if glued:
                while done < len(text) and text[done] == " ":
                    done += 1
        else:
            j += 1
    return "".join(out) + text[done:] if out else text


def _number_at(words: list, j: int, text: str) -> tuple[str, int] | None:
    """The digits the words from ``words[j]`` say, and the index of the word after them."""

    def word(k: int) -> str | None:  # the k-th word, if only blanks or dashes lie before it
        if k >= len(words) or not re.fullmatch(r"[\s\-]*", text[words[k - 1][1] : words[k][0]]):
            return None
        return words[k][2]

    first = words[j][2]
    if first.isdigit():  # "sept 7 un 2": digits written among the words
        return first, j + 1
    if first == "plus":
        follows = j + 1 < len(words) and word(j + 1) is not None
        return ("+", j + 1) if follows and _number_at(words, j + 1, text) else None
    if first in _REPEAT:
        unit = word(j + 1)
        return ("=" + str(_UNITS[unit]) * _REPEAT[first], j + 2) if unit in _UNITS else None
    if first == "dix" and word(j + 1) in ("sept", "huit", "neuf"):
        return str(10 + _UNITS[word(j + 1)]), j + 2
    if first in _TEENS:
        return str(_TEENS[first]), j + 1
    if first == "quatre" and word(j + 1) in ("vingt", "vingts"):
        base, k = 80, j + 2
    elif first in _TENS:
        base, k = _TENS[first], j + 1
    elif first in _UNITS:
        return str(_UNITS[first]), j + 1
    else:
        return None
    joined = k + 1 if word(k) in ("et", "and") else k
    nxt = word(joined)
    if base in (60, 80) and nxt == "dix":
        unit = word(joined + 1)
        if unit in ("sept", "huit", "neuf"):
            return str(base + 10 + _UNITS[unit]), joined + 2
        return str(base + 10), joined + 1
    if base in (60, 80) and nxt in _TEENS:
        return str(base + _TEENS[nxt]), joined + 1
    if nxt in _UNITS and _UNITS[nxt] > 0 and nxt != "oh":
        return str(base + _UNITS[nxt]), joined + 1
    return str(base), k


def _joined(run: list[str]) -> str:
    """Number groups in digits: single digits run together, longer groups apart."""
    out, last = "", None
    for value in run:
        if value == "+":
            out, last = out + (" +" if out else "+"), "+"
            continue
        single = len(value) == 1 or value.startswith("=")  # "double seven": two single digits
        value = value.lstrip("=")
        glued = last in (None, "+") or (single and last == "single")
        out += value if glued else " " + value
        last = "single" if single else "group"
    return out


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

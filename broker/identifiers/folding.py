"""Letter forms that Unicode normalization leaves alone, read as the Latin letter they draw.

NFKC turns full-width, mathematical, circled and squared letters into plain ones, and the
confusables table (UTS #39) gives an ASCII look-alike for many others, but neither reads small
capitals (``ᴀᴡᴀ ᴅɪᴏᴘ``, ``ɴɪɴ``), negative circled or squared letters (``🅐🅦🅐``, ``🅰🆆🅰``) or
regional indicator letters (``🇦🇼🇦``), so a name or a label written with them dodges every
pattern. :func:`letter_forms` maps each such code point to its letter, from the characters'
own names in the Unicode Character Database (``LATIN LETTER SMALL CAPITAL N`` reads ``N``):
no list is kept by hand, and a newer Unicode's forms come with Python's.

One table for the whole broker: the identifier detector folds values with it
(:func:`broker.identifiers.text.fold`) and attribute names are compared with it
(:func:`broker.columns.names.attribute_key`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# Unicode names of letter forms, ending in the letter they draw.
_FORM_NAME = re.compile(
    r"(?:LATIN (?:CAPITAL )?LETTER SMALL CAPITAL|NEGATIVE (?:CIRCLED|SQUARED) LATIN CAPITAL LETTER"
    r"|REGIONAL INDICATOR SYMBOL LETTER|MODIFIER LETTER (?:CAPITAL|SMALL) CAPITAL"
    r"|LATIN SMALL CAPITAL LETTER) ([A-Z])"
)
# The blocks that hold them: IPA extensions, phonetic extensions, Latin extended-D and -G,
# modifier tone letters' neighbours, enclosed alphanumerics and their supplement.
_BLOCKS = ((0x0250, 0x02AF), (0x1D00, 0x1DBF), (0xA720, 0xA7FF), (0x1DF00, 0x1DFFF),
           (0x10780, 0x107BF), (0x1F100, 0x1F1FF))  # fmt: skip


@cache
def letter_forms() -> dict[int, str]:
    """Code point -> the ASCII capital it draws, for ``str.translate``.

    Examples
    --------
    >>> "ᴀᴡᴀ ᴅɪᴏᴘ 🅐🅦🅐 🅰🆆🅰 🇦🇼🇦".translate(letter_forms())
    'AWA DIOP AWA AWA AWA'
    """
    table = {}
    for low, high in _BLOCKS:
        for code in range(low, high + 1):
            match = _FORM_NAME.fullmatch(unicodedata.name(chr(code), ""))
            if match:
                table[code] = match.group(1)
    return table


def fold_letters(text: str) -> str:
    """``text`` with its letter forms read as letters (the rest as written).

    >>> fold_letters("ɴɪɴ"), fold_letters("🅔🅜🅐🅘🅛")
    ('NIN', 'EMAIL')
    """
    return text if text.isascii() else text.translate(letter_forms())

"""How attribute names are compared: one key per name that a person would read as the same.

A hostile sender can spell a forbidden attribute so that it looks the same and compares
different: ``"NIN "``, ``"nin"``, ``"ＮＩＮ"`` (fullwidth), ``"N\\u200bIN"`` (zero-width space),
``"ΝΙΝ"`` (Greek capitals), ``"Νin"`` (one Greek letter among Latin ones). :func:`attribute_key`
maps all of them to one key:

1. NFKC normalization (fullwidth and compatibility forms become their plain letters), and the
   letter forms NFKC leaves alone read as their letters (small capitals ``ɴɪɴ``, negative
   circled or squared letters ``🅝🅘🅝``, regional indicators), by the identifier detector's
   table (:func:`broker.identifiers.folding.letter_forms`);
2. every *default-ignorable* code point is removed (Unicode's ``Default_Ignorable_Code_Point``:
   zero-width characters, soft hyphen, word joiner, byte order mark, variation selectors, tag
   characters, ...), then blanks are trimmed and runs of blanks become one space;
3. each character is replaced by the representative of its class, where a class joins the
   characters that Unicode's confusables table (UTS #39, through ``confusable_homoglyphs``) says
   look alike *and* the ASCII letters that differ only by case, then casefolded. The union is
   deliberately coarse (``I``, ``l``, ``1`` and ``i`` share a class): two names that a reader
   could mistake for one another get one key, at the price of a few names that a careful reader
   would tell apart;
4. a name that is an identifier's label however it is spelled (its letters spelled out with
   dots or blanks, ``N.I.N.``; other separators or accents, ``e_mail``, ``E-Mail``,
   ``Numéro de téléphone``; its French or English synonym, ``courriel``) gets that label's key
   (:data:`IDENTIFIER_LABELS`), so a rule that forbids ``NIN`` or ``email`` forbids them all.

Keys are for comparison only; a dataset's columns keep their names as written.
"""

from __future__ import annotations

import difflib
import string
import unicodedata
from collections.abc import Iterable, Sequence
from functools import cache

import regex
from confusable_homoglyphs import utils as confusables_data

from broker.identifiers.folding import fold_letters

_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_BLANKS = regex.compile(r"\s+")
_SEPARATORS = regex.compile(r"[\s\p{P}\p{S}]+")

# The labels of direct identifiers, each with the spellings that name it (English and French;
# compared without case, accents, blanks or punctuation). Only true synonyms: two columns
# whose names share a key cannot sit side by side, so "mobile" is not "phone".
IDENTIFIER_LABELS = {
    "email": "email | e-mail | email address | adresse email | adresse e-mail | adresse mail | "
    "adresse électronique | courriel | adresse de courriel | mél",
    "phone": "phone | phone number | telephone | téléphone | telephone number | tel | tél | "
    "numéro de téléphone | numero de tel | num tel | no de téléphone | n° de téléphone",
    "nin": "nin | national identification number | national identity number | "
    "numéro d'identification nationale | numéro national d'identification",
    "nir": "nir | numéro de sécurité sociale | numéro insee",
    "bvn": "bvn | bank verification number",
    "ssn": "ssn | social security number",
    "passport": "passport | passport number | passeport | numéro de passeport",
    "iban": "iban | numéro iban",
    "name": "name | full name | nom complet | nom et prénom | prénom et nom",
    "imei": "imei | imei number | numéro imei",
    "ip address": "ip address | adresse ip",
    "mac address": "mac address | adresse mac",
    "vin": "vin | vehicle identification number | numéro d'identification du véhicule",
    "plate": "number plate | licence plate | license plate | plaque d'immatriculation | "
    "numéro d'immatriculation",
    "gps": "gps | gps coordinates | coordonnées gps",
}


def attribute_key(name: str) -> str:
    """The comparison key of an attribute name.

    Examples
    --------
    >>> attribute_key("NIN ") == attribute_key("nin") == attribute_key("N\\u200bI\\u00adN")
    True
    >>> attribute_key("ΝΙΝ") == attribute_key("NIN")  # Greek capital nu, iota, nu
    True
    >>> attribute_key("ɴɪɴ") == attribute_key("N.I.N.") == attribute_key("nin")  # small capitals
    True
    >>> attribute_key("E-Mail") == attribute_key("courriel") == attribute_key("email")
    True
    >>> attribute_key("age") == attribute_key("sex")
    False
    """
    key = _folded(name)
    return _labels().get(_bare(key), key)


def _folded(name: str) -> str:
    text = fold_letters(_IGNORABLE.sub("", unicodedata.normalize("NFKC", name)))
    text = _BLANKS.sub(" ", text).strip()
    classes = _classes()
    return "".join(classes.get(c, c) for c in text).casefold()


def _bare(key: str) -> str:
    """A folded key without accents, blanks or punctuation (``n.1.n.`` -> ``n1n``)."""
    plain = unicodedata.normalize("NFKD", key)
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    return _SEPARATORS.sub("", plain)


@cache
def _labels() -> dict[str, str]:
    """Bare key of each spelling of an identifier label -> the label's key."""
    found = {}
    for label, spellings in IDENTIFIER_LABELS.items():
        for spelling in spellings.split("|"):
            found[_bare(_folded(spelling))] = _folded(label)
    return found


def visible_text(name: str) -> str:
    """``name`` without its default-ignorable code points (what a reader sees)."""
    return _IGNORABLE.sub("", name)


def colliding_names(names: Iterable[str]) -> tuple[str, str] | None:
    """The first two names with one key, or None: such columns must not sit side by side."""
    seen: dict[str, str] = {}
    for name in names:
        key = attribute_key(name)
        if key in seen:
            return seen[key], name
        seen[key] = name
    return None


@cache
def _classes() -> dict[str, str]:
    """Character -> representative (smallest code point) of its look-alike-or-case class."""
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        parent.setdefault(c, c)
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            low, high = sorted((ra, rb))
            parent[high] = low

    table = confusables_data.load("confusables.json")
    for char, homoglyphs in table.items():
        for homoglyph in homoglyphs:
            other = _IGNORABLE.sub("", homoglyph["c"])
            if len(char) == 1 and len(other) == 1:
                union(char, other)
    # Case joins only ASCII letters: joining every script's case pairs chains unrelated Latin
    # letters together through Greek and Cyrillic ones (r, t, u, y and z would share a class).
    for char in string.ascii_uppercase:
        union(char, char.lower())
    return {c: find(c) for c in parent}


def near_misses(name: str, known: Sequence[str]) -> list[str]:
    """The known names closest to a misspelt ``name`` (a letter missing, swapped or doubled:
    ``Gendre`` -> ``Gender``), best first, compared as folded keys; none when nothing is close."""
    keys = {attribute_key(k): k for k in known}
    return [keys[key] for key in difflib.get_close_matches(attribute_key(name), keys, n=3)]

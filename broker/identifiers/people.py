"""Person names, from lists of given names and family names that ship with the broker.

No model is loaded and nothing is downloaded: ``data/first_names.txt`` and ``data/last_names.txt``
are the Latin-script names of Faker's 80-odd locales (English, French, Swahili, Yoruba, Igbo,
Hausa, Kenyan English, Arabic transliterations among them: ``scripts/build_name_lists.py``), and
``data/west_africa.txt`` adds the Senegalese and Nigerian names Faker lacks.

A *full name* is two neighbouring words, each written as a name is (a capital first, or all
capitals), one a given name and the other a family name, in either order ("Awa Diop", "DIOP
Awa"): strong evidence. Between them may stand blanks, a tab, an underscore, a line break, a dot
or middle initials ("Awa M. Diop"); written as one word ("AwaDiop", what is left once a
zero-width space between them is removed) they count when both are listed. A known given name
followed by another capitalised word, or a capitalised word followed by a known family name
("Emmanuel Macron", "Wole Soyinka"), with a blank, a comma or middle initials between them, is
medium evidence: the lists cannot hold every family name. A word of the :data:`COMMON_WORDS`
never counts. One given name alone is not a direct identifier (it is a quasi-identifier) and
is not reported. A value that is only initials with dots and a listed family name ("A. M.
Diop") is medium evidence; in prose it is most often an author cited, weak. A value that is
only a given name and a family name in lower case ("awa diop") is weak evidence: lower-case
prose pairs listed words all the time ("read as", "each run"), so half a column must hold such
values. Known limits: a lower-case name inside a sentence, a name none of the lists holds, and
a place or an institution named after a person ("Université Cheikh Anta Diop") read as a name.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import cache
from importlib import resources

from broker.identifiers.numbers import MEDIUM, PERSON_NAME, STRONG, WEAK, Hit

_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*")
# Words that are also names in the lists but that labels and descriptions use as words.
COMMON_WORDS = frozenset(
    re.findall(
        r"\w+",
        """
    will may june april august march grace hope faith joy rose lily summer autumn winter spring
    page long young white black brown green gray grey little king price cook hill wood stone
    day love north south east west mark bill art major general rich sunny dean chase case miles
    cash bond rice sale sales head bank city hall field moss lake ford street park baker mason
    hunter fisher sun star new old total average mean median count sum other unknown none male
    female homme femme man woman men women boy girl child adult senior junior saint sainte san
    santa de la le du des van von der den al el ben bin abu ibn mc mac st jan feb mar apr jun
    jul aug sep oct nov dec monday tuesday wednesday thursday friday saturday sunday lundi mardi
    mercredi jeudi vendredi samedi dimanche janvier avril mai juin juillet aout septembre
    octobre novembre decembre january february september october november december
    doctor docteur nurse patient client health sante data national public private state region
    district county central lagos dakar nairobi paris abuja kano thies louis victoria mombasa
    kenya nigeria senegal france island falls port lake river valley hospital clinic center
    centre university universite school ecole village town avenue road rue boulevard
    disease syndrome cancer fever malaria report survey census index table file dataset
    france england britain america africa europe asia china india jordan georgia chad niger
    mali guinea gambia ghana benin togo congo sudan morocco egypt israel
    prize award foundation institute fund trust company group bureau office ministry
    department service services agency council committee board union church mosque
    per week weeks year years month months date time rate hours hour days number code type
    status level class name names first last middle full age sex gender ward room bed unit
    score value amount weight height pressure admission discharge birth death place address
    country zip post postal phone email education occupation race marital income salary
    capital gain loss native relationship work prenom nom famille naissance lieu ville pays
    main primary secondary diagnosis treatment result results test tests sample samples
    """,
    )
)


def name_key(word: str) -> str | None:
    """A name's lookup key: letters without accents, lower case; None for what is not one word
    of Latin letters (two letters at least)."""
    plain = unicodedata.normalize("NFKD", word)
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    plain = plain.replace("’", "'").casefold()
    if not re.fullmatch(r"[a-z][a-z'\-]+", plain):
        return None
    return plain


@cache
def lists() -> tuple[frozenset[str], frozenset[str]]:
    """(given names, family names): the shipped lists, common words left out."""
    data = resources.files("broker.identifiers") / "data"
    first, last = set(), set()
    for file, into in (("first_names.txt", first), ("last_names.txt", last)):
        into.update(_lines(data.joinpath(file).read_text(encoding="utf-8")))
    into = None
    for line in _lines(data.joinpath("west_africa.txt").read_text(encoding="utf-8")):
        if line in ("[first]", "[last]"):
            into = first if line == "[first]" else last
            continue
        for word in line.split():
            key = name_key(word)
            if key is not None and into is not None:
                into.add(key)
    return frozenset(first - COMMON_WORDS), frozenset(last - COMMON_WORDS)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


# What may stand between the two words of a full name: blanks, a tab, an underscore, a line
# break, a comma or a dot; or one or two middle initials ("Awa M. Diop", "Awa M.K. Diop").
_GAP = re.compile(r"[ \t_]{1,3}|, ?|\.|\r?\n")
_PLAIN_GAP = re.compile(r" {1,2}|, ")  # the others join words of names and labels too
_MIDDLE = re.compile(r"[ \t_]{1,3}(?:[A-Z](?:\.[ \t_]{0,2}|[ \t_]{1,3})){1,2}")
# Initials with dots just before a word: "A. Diop", "A.M. Diop".
_INITIALS_BEFORE = re.compile(r"(?<![A-Za-z.])(?:[A-Z]\.[ \t]?){1,2}$")
# Two names written as one word once the invisible characters between them are gone.
_JOINED = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]+)+")
_LOWER_PAIR = re.compile(r"([a-z][a-z'-]{2,})[ \t_.]{1,2}([a-z][a-z'-]{2,})")
STRONG_WHAT = "full name (a listed given name and family name)"


def full_names(text: str) -> list[Hit]:
    """The full names in ``text``: a given name and a family name side by side.

    Examples
    --------
    >>> [h.what for h in full_names("Patient seen by Awa Diop in Thiès")]
    ['full name (a listed given name and family name)']
    >>> full_names("White, Married-civ-spouse, Prof-specialty"), full_names("read as an")
    ([], [])
    >>> full_names("Awa M. Diop")[0].strength, [h.strength for h in full_names("AwaDiop")]
    ('strong', ['strong'])
    >>> [h.strength for h in full_names("awa diop")], [h.strength for h in full_names("A. Diop")]
    (['weak'], ['medium'])
    """
    first, last = lists()
    words = [w for w in _WORD.finditer(text) if len(w.group()) > 1]
    found = []
    for a, b in itertools.pairwise(words):
        gap = text[a.end() : b.start()]
        plain = gap in (" ", "  ", ", ")  # most pairs: decided without a pattern
        middle = not plain and _MIDDLE.fullmatch(gap) is not None
        if not (plain or middle or _GAP.fullmatch(gap)):
            continue
        hit = _pair(a.group(), b.group(), first, last)
        # SOME_LABEL or First_Second: one listed part is not enough there.
        if hit and (hit.strength == STRONG or plain or middle):
            found.append(hit)
    for word in words:
        w = word.group()
        if w[0].islower() or len(w) < 3:
            continue
        if _JOINED.fullmatch(w):
            parts = re.findall(r"[A-Z][a-z]+", w)
            for x, y in itertools.pairwise(parts):
                hit = _pair(x, y, first, last)
                if hit and hit.strength == STRONG:
                    found.append(hit)
            continue
        base = max(0, word.start() - 8)
        if "." not in text[base : word.start()]:
            continue
        initials = _INITIALS_BEFORE.search(text[base : word.start()])
        keys = _parts(w) if initials else set()
        if keys & last and not keys & COMMON_WORDS:
            # A value that is only that ("A. M. Diop") names someone; in prose it is most
            # often an author cited ("K. Wang and B. C. M. Fung"): a format there.
            alone = not text[: base + initials.start()].strip(" \t")
            alone = alone and not text[word.end() :].strip()
            what = "a family name after initials"
            found.append(Hit(PERSON_NAME, MEDIUM if alone else WEAK, what))
    lower = _LOWER_PAIR.fullmatch(text.strip())
    if lower:  # "awa diop": a name's form only, for a column where half the values are such
        ka, kb = name_key(lower.group(1)), name_key(lower.group(2))
        if (
            ka
            and kb
            and not {ka, kb} & COMMON_WORDS
            and ((ka in first and kb in last) or (ka in last and kb in first))
        ):
            found.append(Hit(PERSON_NAME, WEAK, "full name in lower case (both parts listed)"))
    return found


def _pair(a: str, b: str, first: frozenset[str], last: frozenset[str]) -> Hit | None:
    """Two neighbouring words as a full name: strong when a given name and a family name are
    both listed, medium when one is."""
    if not (_written_as_name(a) and _written_as_name(b)):
        return None
    ka, kb = _parts(a), _parts(b)
    if not ka or not kb or (ka | kb) & COMMON_WORDS:
        return None
    # What is found is said without the name: reports and refusals never echo a value.
    if (ka & first and kb & last) or (ka & last and kb & first):
        return Hit(PERSON_NAME, STRONG, STRONG_WHAT)
    if (ka & first or kb & last) and min(len(a), len(b)) > 2:
        return Hit(PERSON_NAME, MEDIUM, "full name (one part listed)")
    return None


def _written_as_name(word: str) -> bool:
    return word[0].isupper() and (word[1:].islower() or word.isupper() or "-" in word)


def _parts(word: str) -> set[str]:
    """The keys of a word and of its hyphenated parts ("Okonjo-Iweala")."""
    keys = {name_key(word)} | {name_key(part) for part in re.split(r"[-'’]", word)}
    return {k for k in keys if k is not None}

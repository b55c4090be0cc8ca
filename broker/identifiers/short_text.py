"""What direct identifier a short text holds: column names (each, and read one after the
other), the keys and labels of aggregate releases, the paths of references, a catalog entry's
description. Such text crosses the border or is published without being measured, so it is
judged alone, by the one detector (:mod:`broker.identifiers`), with a few rules of its own
(too many digits for a name, encoded data). Below the readers and the measures, which both
call it: :mod:`broker.datasets.column_names`, :mod:`broker.metrics.content`,
:mod:`broker.privacy.queries`, :mod:`broker.negotiations.texts`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from broker.identifiers import DEFAULT_REGIONS, STRONG, BudgetSpent, scan, verdict
from broker.identifiers.text import TRANSFORMS

_DIGITS = re.compile(r"\d")
_MAX_NAME_DIGITS = 6  # in a column name: a year and a month, not a phone number or an id
_TOKENS = re.compile(r"[A-Za-z0-9+/=]{20,}")
# Nine digits or more in a row: an id or a phone number, never a year or a count as people
# write them (1,000,000).
_LONG_NUMBER = re.compile(r"\d{9,}")


def contact_in_text(text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> str | None:
    """What direct identifier a free text holds ("an e-mail address", "an IBAN (FR)", "a full
    name", ...), or None: for text that is published without being measured, such as
    a catalog entry's description (numbers alone, a year or a count, are not flagged).

    >>> contact_in_text("Call Awa on +221 77 123 45 67"), contact_in_text("400 rows, 2025")
    ('a phone number (SN)', None)
    >>> contact_in_text("see 1012345678901")  # a run of digits no description needs
    'a number of 9 digits or more (an id?)'
    """
    found = _found_in(text, regions)
    if found:
        return found
    if _LONG_NUMBER.search(text):
        return "a number of 9 digits or more (an id?)"
    return None


def identifier_in_text(text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> str | None:
    """What direct identifier one piece of text holds ("an e-mail address", "a phone number
    (SN)", "a Visa card number", "more than 6 digits", ...), or None. For short text that
    crosses the border or is published unmeasured: column names, file names, the keys and
    labels of aggregate releases, the paths of references.

    Examples
    --------
    >>> identifier_in_text("ref 1850578006084"), identifier_in_text("zip_75001")
    ('more than 6 digits', None)
    >>> identifier_in_text("ａｗａ＠ｅｘａｍｐｌｅ．ｓｎ")
    'an e-mail address, written as compatibility characters (full-width, mathematical, ligatures)'
    """
    found = _found_in(text, regions)
    if found:
        return found
    if len(_DIGITS.findall(text)) > _MAX_NAME_DIGITS:
        return f"more than {_MAX_NAME_DIGITS} digits"
    if any(_encoded(token) for token in _TOKENS.findall(text)):
        return "encoded data (a long run mixing upper and lower case and digits)"
    return None


def identifier_across_names(
    names: Sequence[str], regions: Sequence[str] = DEFAULT_REGIONS
) -> str | None:
    """What direct identifier a header holds once its names are read one after the other,
    joined by blanks and without them (a phone number cut over several names: "+221", "77",
    "123", ...), or None. Each name alone is judged by :func:`identifier_in_text`; here only
    strong evidence as written counts (the joined names are long, many hold digits, and read
    backwards years make card numbers).

    >>> identifier_across_names(["age", "+221", "77", "123", "45", "67"])
    'a phone number (SN)'
    >>> identifier_across_names(["id", "2019", "2020", "2021", "2022", "q1", "q2"])
    """
    try:
        for joined in (" ".join(names), "".join(names)):
            for finding in scan(joined, regions):
                if finding.strength == STRONG and TRANSFORMS.isdisjoint(finding.disguises):
                    return finding.describe()
    except BudgetSpent:
        return "more identifier-like runs than are checked"
    return None


def _found_in(text: str, regions: Sequence[str]) -> str | None:
    try:
        found = verdict(scan(text, regions))
    except BudgetSpent:
        return "more identifier-like runs than are checked"
    return found.describe() if found else None


def _encoded(token: str) -> bool:
    """20+ characters in both cases with a digit, where at least 5 capitals do not begin a word
    (are not followed by two small letters): base64, not camelCase (``numberOfVisits2023``)."""
    if not (any(c.islower() for c in token) and any(c.isdigit() for c in token)):
        return False
    irregular = sum(
        not _word_start(token[i + 1 : i + 3]) for i, c in enumerate(token) if c.isupper()
    )
    return irregular >= 5


def _word_start(following: str) -> bool:
    return len(following) == 2 and following.isalpha() and following.islower()

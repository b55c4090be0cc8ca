"""What a party writes that the other party reads: checked by the broker's one detector first.

A negotiation carries the sender's own text to the other party, unmeasured: the consumer's
purpose and the columns it asks for (in a request or a counter-request), the columns of a
provider's offer, the reason either party gives for ending it. Each is shown to the other
member in the negotiation and its events, so none may carry a value of the data: every one
goes through the detector (:mod:`broker.identifiers.short_text`, which calls
:mod:`broker.identifiers`, which folds full-width, look-alike and invisible characters itself)
as the catalog's descriptions do. Free text (a reason) is read as the catalog reads a description
(:func:`~broker.identifiers.short_text.contact_in_text`: numbers alone, a date or a count,
pass); a label (a purpose, a column name) as a key of an aggregate is
(:func:`~broker.identifiers.short_text.identifier_in_text`: more than six digits, or a long
encoded-looking run, are refused too). A list of texts is also read as the other party reads
it, side by side (:func:`split_across`): an identifier cut into pieces, one a column name or
one a reason, is refused as the split-identifier reading of uploads refuses one cut over
columns. A refusal names the field, never the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from broker.identifiers.short_text import contact_in_text, identifier_in_text
from broker.metrics.content import split_across


def identifier_in(text: str, free: bool = False) -> str | None:
    """What identifier ``text`` holds (``free``: read as free text), or None.

    Examples
    --------
    >>> identifier_in("research"), identifier_in("call +221 77 123 45 67 first", free=True)
    (None, 'a phone number (SN)')
    >>> identifier_in("ａｗａ．ｄｉｏｐ＠ｅｘａｍｐｌｅ．ｓｎ")  # doctest: +ELLIPSIS
    'an e-mail address...'
    """
    return (contact_in_text if free else identifier_in_text)(text)  # it folds the text itself


def labels(field: str, texts: Sequence[str] | None) -> list[tuple[str, str]]:
    """``field[i]`` and each text, for :func:`first_identifier`."""
    return [(f"{field}[{i}]", text) for i, text in enumerate(texts or ())]


def first_identifier(
    labels_: Iterable[tuple[str, str]], free: Iterable[tuple[str, str]] = ()
) -> tuple[str, str] | None:
    """The first (field, what it holds) among label texts, free texts and the label lists' texts
    side by side (:func:`split_across`), or None."""
    labels_ = list(labels_)
    for field, text in labels_:
        if found := identifier_in(text):
            return field, found
    for field, text in free:
        if found := identifier_in(text, free=True):
            return field, found
    for field, texts in _lists(labels_).items():
        if found := split_across(field, texts):
            return found
    return None


def _lists(labels_: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """The texts of each list among ``labels_`` (fields ``name[i]``, as :func:`labels` names
    them), in order."""
    lists: dict[str, list[str]] = {}
    for field, text in labels_:
        name, bracket, _ = field.partition("[")
        if bracket:
            lists.setdefault(name, []).append(text)
    return lists

"""What identifies people: one definition, for the rules, the remedy and the catalog.

An attribute *identifies* (:func:`identifying`) when its values are direct identifiers
(e-mails, phone numbers, national ids), when it is not declared sensitive and its values are all
distinct (its Mmaq class is ``identifier``), or when it is declared sensitive and most of its
rows hold a value that fewer than k rows hold. The ``no_identifiers`` rule fails on these
(:mod:`broker.fsla.rules`).

The remedy cannot generalize all of them: a quasi-identifier of ordered values (numbers, dates)
becomes ranges, but text would become lists of its values and a sensitive attribute is not
generalized at all, so those leave the table (:func:`dropped`). The remedy drops exactly those
(:func:`broker.fsla.remedy.target_for`), and the catalog estimates the utility an offer keeps
after dropping the same columns (:mod:`broker.catalog.service`), so the utility it advertises is
the one a transfer would get.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from broker.anonymize._values import ordered
from broker.metrics.content import TEXT
from broker.metrics.mmaq import IDENTIFIER
from broker.metrics.report import AnalysisReport, AttributeReport

# A declared-sensitive attribute singles people out when at least this share of its rows hold a
# value that fewer than k rows hold; for text, also at least this many rows (on a small table,
# one diagnosis per patient is expected and is what l-diversity protects).
SINGLED_OUT_SHARE = 0.5
SINGLED_OUT_TEXT_ROWS = 20


def identifying(
    attribute: AttributeReport, sensitive: tuple[str, ...] | set[str], k: int | None = None
) -> bool:
    """Whether ``attribute`` identifies rows on its own, whatever role it was declared in.

    Values that hold e-mails, phone numbers or national ids always do. An attribute not declared
    sensitive does when its values are all distinct (its Mmaq class is ``identifier``). A
    declared-sensitive one does when most of its rows hold a value that fewer than ``k`` rows
    hold (see the constants above; pairs of birth dates count, not only unique ones): its values
    are what is protected, but values shared by so few people link to outside records however
    they are declared (national ids, birth dates, a column of names).
    """
    if attribute.content.direct_identifier:
        return True
    if attribute.name not in sensitive:
        return attribute.measure.attribute_class == IDENTIFIER
    rare = attribute.rows_in_values_smaller_than(max(k or 2, 2))
    many = rare >= SINGLED_OUT_SHARE * attribute.measure.rows
    if attribute.content.values != TEXT:
        return many or attribute.measure.attribute_class == IDENTIFIER
    return many and rare >= SINGLED_OUT_TEXT_ROWS


def dropped(
    report: AnalysisReport,
    quasi_identifiers: Sequence[str],
    sensitive: Sequence[str],
    k: int | None,
    values: Callable[[str], pd.Series],
) -> list[str]:
    """The attributes that identify (:func:`identifying`, at ``k``) and that the remedy drops
    rather than generalizes: all but the quasi-identifiers of ordered values that hold no
    direct identifier. ``values(name)``: a column's values (all, or its distinct ones)."""
    return [
        a.name
        for a in report.attributes
        if identifying(a, sensitive, k)
        and not (
            a.name in quasi_identifiers
            and not a.content.direct_identifier
            and ordered(values(a.name))
        )
    ]

"""Which generalization hierarchy a remedy follows for each column: the F-SLA records' first,
then the request's.

A record may give hierarchies for attributes (:attr:`broker.fsla.models.FSLARecord.hierarchies`):
what data leaving or entering its jurisdiction is generalized along. The records that apply to a
transfer are the source's and, across a border, the destination's; where a record gives one for
a column of the data, the remedy follows it, and a request's hierarchy for the same column is
not used (a note says so). Two records giving different hierarchies for one column cannot both
be followed: no remedy is offered, saying why. A column no record speaks of follows the request's
hierarchy (sent as ARX files, :mod:`broker.intake.hierarchies`), else the broker's own ladder.

Every hierarchy followed has its labels made safe (:func:`broker.anonymize.hierarchies.
safe_labels`: range labels re-labelled, refused labels refused) and must cover every value of
its column (a missing value stays missing). Pure: records, names and values in, tables out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from broker.anonymize.hierarchies import HierarchyError, of_table, safe_labels
from broker.fsla.models import FSLARecord
from broker.identifiers.short_text import identifier_in_text

SHOWN_VALUES = 3  # values named in an error, at most


@dataclass(frozen=True)
class Followed:
    """The level tables the remedy follows (column -> value -> labels), the notes it carries,
    and why no remedy can follow them (None when one can)."""

    tables: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    problem: str | None = None


def followed(
    requested: Mapping[str, Mapping[str, Sequence[str]]],
    records: Sequence[FSLARecord],
    columns: Sequence[str],
    values: Callable[[str], pd.Series],
) -> Followed:
    """The hierarchies a remedy follows for the table of ``columns`` (``values(column)``: its
    distinct values): each record's of ``records`` (the ones that apply), then ``requested``
    (keys: the table's column names, as the intake resolved them)."""
    chosen: dict[str, tuple[str, Mapping[str, Sequence[str]]]] = {}
    notes: list[str] = []
    distinct = list({record.jurisdiction: record for record in records}.values())
    for column in columns:
        given = [(r.jurisdiction, found) for r in distinct if (found := r.hierarchy(column))]
        if not given:
            continue
        tables = {_canonical(table) for _, (_, table) in given}
        if len(tables) > 1:
            names = " and ".join(jurisdiction for jurisdiction, _ in given)
            return Followed(
                problem=f"the F-SLA records of {names} give different hierarchies for the "
                f"attribute {column!r}: no remedy can follow both"
            )
        who = " and ".join(jurisdiction for jurisdiction, _ in given)
        chosen[column] = (f"{who}'s hierarchy for {column!r}", given[0][1][1])
        if column in requested:
            notes.append(
                f"the request's hierarchy for {column!r} is not used: the F-SLA record of {who} "
                "gives the one to follow"
            )
    for column, table in requested.items():
        if column in columns and column not in chosen:
            chosen[column] = (f"the request's hierarchy for {column!r}", table)
    tables: dict[str, dict[str, list[str]]] = {}
    for column, (label, table) in chosen.items():
        try:
            safe, relabelled = safe_labels(of_table(table, label), label, identifier_in_text)
        except HierarchyError as error:
            return Followed(problem=str(error))
        gap = uncovered(safe.levels, values(column))
        if gap:
            return Followed(problem=f"{label} {gap}")
        tables[column] = safe.table()
        notes.extend(relabelled)
    return Followed(tables, tuple(notes))


def uncovered(levels: Mapping[str, object], present: pd.Series) -> str | None:
    """What values of a column (``present``: its distinct values; missing ones stay missing) a
    hierarchy lacks, in words; None when it covers them all."""
    written = [str(value) for value in present.dropna().tolist()]
    missing = [value for value in written if value not in levels]
    if not missing:
        return None
    shown = ", ".join(repr(value) for value in missing[:SHOWN_VALUES])
    more = f" and {len(missing) - SHOWN_VALUES:,} more" if len(missing) > SHOWN_VALUES else ""
    return (
        f"does not cover {len(missing):,} value(s) of the column ({shown}{more}): every value "
        "needs a line"
    )


def _canonical(table: Mapping[str, Sequence[str]]) -> tuple:
    return tuple(sorted((str(value), tuple(labels)) for value, labels in table.items()))

"""Generalization hierarchies as ARX writes them, read and written.

ARX (Prasser and Kohlmayer, "Putting statistical disclosure control into practice: the ARX data
anonymization tool", Medical Data Privacy Handbook, Springer 2015) describes the generalization of
a column as a hierarchy file: one row per value, the value first and its generalizations to the
right, one column per level, ``;`` separated, ``*`` usually the top::

    39;35-39;30-39;*
    Bachelors;Undergraduate;Higher education;*

Level n of a value is the label in column n (level 0 is the value itself). ARX recodes globally:
every row holding a value gets the same label, so a generalization is the level chosen for each
column, which is also what the broker's generalization method chooses.

:func:`read_hierarchy` makes such a file a level table (value -> its labels from level 1 up), the
form :func:`broker.anonymize.generalization.generalize_hierarchy` and the generalization ladder
take. :func:`write_hierarchy` writes a level table back, and :func:`exported` turns what a
generalization did to a column into a hierarchy and a level that ARX can apply to the same data to
get the same output.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from broker.anonymize._values import SUPPRESSED

DELIMITER = ";"
MAX_BYTES = 16 << 20  # a hierarchy is read whole; this one is far larger than ARX's own


class HierarchyError(ValueError):
    """A hierarchy file that is not one: says which line and why."""


@dataclass(frozen=True)
class Hierarchy:
    """One column's generalization: each value's labels from level 1 up, all of one depth."""

    levels: dict[str, tuple[str, ...]]

    @property
    def depth(self) -> int:
        """The number of levels above the values."""
        return len(next(iter(self.levels.values()), ()))

    def table(self) -> dict[str, list[str]]:
        """The level table the generalization steps take (JSON-ready: lists)."""
        return {value: list(labels) for value, labels in self.levels.items()}


def read_hierarchy(data: bytes | str, label: str = "the hierarchy") -> Hierarchy:
    """An ARX hierarchy file (``;`` separated; ``,`` or tab when every line uses it instead).

    Raises
    ------
    HierarchyError
        Empty, larger than :data:`MAX_BYTES`, not UTF-8, a line with fewer than two fields or
        another number of fields than the first, a value on two lines, an empty label.

    Examples
    --------
    >>> h = read_hierarchy("Male;*\\nFemale;*\\n")
    >>> h.depth, h.levels["Male"]
    (1, ('*',))
    """
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise HierarchyError(f"{label} is larger than {MAX_BYTES >> 20} MiB")
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise HierarchyError(f"{label} is not UTF-8 text (byte {error.start})") from None
    lines = [line for line in data.splitlines() if line.strip()]
    if not lines:
        raise HierarchyError(f"{label} is empty: one line per value, its labels to the right")
    rows = list(csv.reader(lines, delimiter=_delimiter(lines)))
    width = len(rows[0])
    levels: dict[str, tuple[str, ...]] = {}
    for number, row in enumerate(rows, start=1):
        where = f"{label}, line {number}"
        if len(row) < 2:
            raise HierarchyError(
                f"{where}: a value needs at least one generalization to its right, "
                f"separated by {DELIMITER!r}"
            )
        if len(row) != width:
            raise HierarchyError(
                f"{where}: {len(row) - 1} levels where the first line has {width - 1} (ARX "
                "hierarchies give every value the same number of levels)"
            )
        value, *labels = row
        if value in levels:
            raise HierarchyError(f"{where}: the value {value!r} is already on an earlier line")
        if any(not text.strip() for text in labels):
            raise HierarchyError(f"{where}: an empty label")
        levels[value] = tuple(labels)
    return Hierarchy(levels)


def write_hierarchy(hierarchy: Hierarchy) -> str:
    """The hierarchy as ARX reads it: ``;`` separated, one line per value, in its order."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=DELIMITER, lineterminator="\n")
    for value, labels in hierarchy.levels.items():
        writer.writerow([value, *labels])
    return out.getvalue()


def exported(
    method: str, parameters: Mapping, originals: Sequence[str], labels: Sequence[str]
) -> tuple[Hierarchy, int]:
    """A hierarchy and the level of it that ARX applies to do what one generalization step did.

    A step that applied an ARX hierarchy (``method`` "hierarchy" with a level table) gives it
    back with its level. Any other generalization (ranges, quantile bins, prefixes, dates,
    masking) is a map of each value to its label: it becomes a hierarchy of one level and the top
    (``value;label;*``) applied at level 1. ``originals`` and ``labels`` are the column's
    values before and after, row by row (each value has one label: the recoding is global).
    """
    table = parameters.get("hierarchy") if method == "hierarchy" else None
    if isinstance(table, Mapping) and any(isinstance(r, list | tuple) for r in table.values()):
        levels = {str(value): tuple(str(label) for label in row) for value, row in table.items()}
        depth = max(map(len, levels.values()))
        for value in originals:  # a value the hierarchy lacks was suppressed: say so to ARX
            levels.setdefault(str(value), (SUPPRESSED,) * depth)
        return Hierarchy(levels), int(parameters.get("levels", 1))
    mapping: dict[str, str] = {}
    for value, label in zip(originals, labels, strict=True):
        if mapping.setdefault(str(value), str(label)) != str(label):
            raise ValueError(
                f"the value {value!r} was given two labels: a generalization that is not a "
                "global recoding cannot be written as a hierarchy"
            )
    return Hierarchy({value: (label, SUPPRESSED) for value, label in mapping.items()}), 1


def unchanged(values: Sequence[str]) -> Hierarchy:
    """The hierarchy of a column left as it is (level 0): each value and the top."""
    return Hierarchy({str(value): (SUPPRESSED,) for value in dict.fromkeys(values)})


def _delimiter(lines: list[str]) -> str:
    """``;``, ARX's own, unless every line holds none of it and all hold ``,`` (or a tab)."""
    for candidate in (DELIMITER, ",", "\t"):
        if all(candidate in line for line in lines):
            return candidate
    return DELIMITER

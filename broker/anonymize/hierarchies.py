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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np

from broker.anonymize._values import SUPPRESSED
from broker.anonymize.labels import grid_bounds, number_of, range_label, read_label
from broker.identifiers.text import fold

DELIMITER = ";"
MAX_BYTES = 16 << 20  # a hierarchy is read whole; this one is far larger than ARX's own
# What a transfer request or an F-SLA record may hold (threat: small inputs that cost a lot):
# hierarchies (one a column), values a hierarchy, levels above the values, characters a value
# or label, and bytes a hierarchy file sent with a request.
MAX_HIERARCHIES = 32
MAX_VALUES = 20_000
MAX_LEVELS = 16
MAX_TEXT_CHARS = 200
MAX_UPLOAD_BYTES = 1 << 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_WORD_START_CHARS = 4  # a value this long, beginning a word of a label of its class, names it


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


def read_hierarchy(
    data: bytes | str, label: str = "the hierarchy", max_bytes: int = MAX_BYTES
) -> Hierarchy:
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
        if len(data) > max_bytes:
            raise HierarchyError(f"{label} is larger than {_size(max_bytes)}")
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise HierarchyError(f"{label} is not UTF-8 text (byte {error.start})") from None
    lines = [line for line in data.splitlines() if line.strip()]
    if not lines:
        raise HierarchyError(f"{label} is empty: one line per value, its labels to the right")
    try:
        rows = list(csv.reader(lines, delimiter=_delimiter(lines)))
    except csv.Error as error:  # a field past the reader's own limit (131,072 characters)
        raise HierarchyError(f"{label} cannot be read as CSV: {error}") from None
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


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count >> 10} KiB"


def _delimiter(lines: list[str]) -> str:
    """``;``, ARX's own, unless every line holds none of it and all hold ``,`` (or a tab)."""
    for candidate in (DELIMITER, ",", "\t"):
        if all(candidate in line for line in lines):
            return candidate
    return DELIMITER


def of_table(table: Mapping, label: str = "the hierarchy") -> Hierarchy:
    """A level table (value -> its labels from level 1 up, as an F-SLA record writes it inline)
    as a :class:`Hierarchy`, held to the same rules as a file (:func:`bounded`)."""
    if not isinstance(table, Mapping) or not table:
        raise HierarchyError(f"{label} is empty: each value and its labels from level 1 up")
    levels: dict[str, tuple[str, ...]] = {}
    width = None
    for number, (value, row) in enumerate(table.items(), start=1):
        where = f"{label}, value {number} ({str(value)[:MAX_TEXT_CHARS]!r})"
        if not isinstance(row, list | tuple) or not row:
            raise HierarchyError(f"{where}: its labels are a list of at least one level")
        if any(not isinstance(text, str) or not text.strip() for text in row):
            raise HierarchyError(f"{where}: an empty label, or one that is not text")
        if width is not None and len(row) != width:
            raise HierarchyError(
                f"{where}: {len(row)} levels where the first value has {width} (every value "
                "has the same number of levels)"
            )
        width = len(row)
        levels[str(value)] = tuple(row)
    return bounded(Hierarchy(levels), label)


def bounded(hierarchy: Hierarchy, label: str = "the hierarchy") -> Hierarchy:
    """``hierarchy`` when it stays within :data:`MAX_VALUES` values, :data:`MAX_LEVELS` levels
    and :data:`MAX_TEXT_CHARS` characters a value or label, with no control character in a
    label and each level grouping whole classes of the level below; else
    :class:`HierarchyError`."""
    if len(hierarchy.levels) > MAX_VALUES:
        raise HierarchyError(
            f"{label} has {len(hierarchy.levels):,} values, more than {MAX_VALUES:,}: generalize "
            "the column first (ranges, a prefix), or give a hierarchy of its groups"
        )
    if hierarchy.depth > MAX_LEVELS:
        raise HierarchyError(f"{label} has {hierarchy.depth} levels, more than {MAX_LEVELS}")
    above: list[dict[str, str]] = [{} for _ in range(max(hierarchy.depth - 1, 0))]
    for number, (value, labels) in enumerate(hierarchy.levels.items(), start=1):
        for level, (text, parent) in enumerate(pairwise(labels)):
            if above[level].setdefault(text, parent) != parent:
                raise HierarchyError(
                    f"{label}, line {number}: the level {level + 1} label {text!r} is generalized "
                    f"to {above[level][text]!r} and to {parent!r} at level {level + 2}: each "
                    "level must group whole classes of the level below (as ARX's do), else two "
                    "releases at different levels single out where their classes meet"
                )
        if any(_CONTROL.search(text) for text in labels):  # labels leave as written
            raise HierarchyError(f"{label}, line {number}: a label holds a control character")
        for text in (value, *labels):
            if len(text) > MAX_TEXT_CHARS:
                raise HierarchyError(
                    f"{label}, line {number}: {text[:40]!r}... is longer than {MAX_TEXT_CHARS} "
                    "characters"
                )
    return hierarchy


def safe_labels(
    hierarchy: Hierarchy,
    label: str = "the hierarchy",
    identifier_in: Callable[[str], str | None] | None = None,
) -> tuple[Hierarchy, tuple[str, ...]]:
    """``hierarchy`` with labels that say no more than their class (the values sharing the label
    at one level), and notes on what was re-labelled; :class:`HierarchyError` naming the line
    of the first label that cannot be made so.

    A label leaves the broker in place of the values of its class, so, at each level:

    - a label that holds a direct identifier (``identifier_in``, the broker's detector for short
      text) is refused;
    - in a class of several values, a label that is one of them, or names one as a whole word
      (``Other`` for {Other, Unknown}; ``Lyon area`` for {Lyon, Villeurbanne}), is refused: the
      recipient would read it as that value;
    - in a class of several values, a label that is a prefix or a suffix of some of them but
      not of all (``Bach*`` or ``Bachelor`` for {Bachelors, Masters}) is refused: it singles
      them out. Labels and values are compared folded (NFKC, invisible characters removed,
      look-alike letters read as Latin ones, case ignored: :func:`broker.identifiers.text.fold`);
    - in a class of several numbers, a range label whose bound is one of them (ARX's ``35-39``
      for 35..39: the class's extreme values), or that is narrower than the grid's stretch
      holding them (``34.9-39.1``), is re-labelled (the class's numbers only, when it holds
      other values too) as the broker labels its own ranges, on a
      1-2-5 grid (:func:`broker.anonymize.labels.grid_bounds`; ``35-40``).

    Examples
    --------
    >>> safe, notes = safe_labels(Hierarchy({"35": ("35-39", "*"), "39": ("35-39", "*")}))
    >>> safe.levels["35"], len(notes)
    (('35-40', '*'), 1)
    >>> safe_labels(Hierarchy({"Lyon": ("Lyon",), "Nice": ("Lyon",)}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    broker.anonymize.hierarchies.HierarchyError: the hierarchy, line 1: the level 1 label 'Lyon' ...
    """
    line = {value: number for number, value in enumerate(hierarchy.levels, start=1)}
    rows = {value: list(labels) for value, labels in hierarchy.levels.items()}
    relabelled: list[tuple[str, str]] = []
    for level in range(hierarchy.depth):
        classes: dict[str, list[str]] = {}
        for value, labels in hierarchy.levels.items():
            classes.setdefault(labels[level], []).append(value)
        for text, members in classes.items():
            where = f"{label}, line {line[members[0]]}: the level {level + 1} label {text!r}"
            found = identifier_in(text) if identifier_in is not None else None
            if found:
                raise HierarchyError(f"{where} holds {found}: labels leave with the data")
            if len(members) < 2 or text == SUPPRESSED:
                continue
            numbers = [number_of(member) for member in members]
            present = [number for number in numbers if number is not None]
            read = read_label(text)
            bounds = read.range
            if bounds is not None and len(present) >= 2:  # its other values name no number
                low, high = grid_bounds(np.array([min(present)]), np.array([max(present)]))
                # bounds that are values of the class, or within the grid's stretch (34.9-39.1
                # for 35..39), give its extremes away; a wider range says less and stays
                if not (set(bounds) & set(present) or bounds[0] > low[0] or bounds[1] < high[0]):
                    continue
                finite = bool(np.isfinite(low[0]) and np.isfinite(high[0]))
                written = range_label(low[0], high[0]) if finite else SUPPRESSED
                for member in members:
                    rows[member][level] = written
                if written != text:  # bounds on the grid are the grid's, not the class's
                    relabelled.append((text, written))
                continue
            folded = _fold(text)
            named = [member for member in members if _names(folded, member)]
            named = named or _singled_out(text, folded, members)
            named = named or [  # a number in another spelling (3.5e1, 35.00), or a bound
                member
                for member, number in zip(members, numbers, strict=True)
                if number is not None and (number == read.number or number in (bounds or ()))
            ]
            if named:
                raise HierarchyError(
                    f"{where} names {named[0]!r}, one of the {len(members)} values of its class: "
                    "a recipient would read it as that value; give the class a label of its own"
                )
    notes = ()
    if relabelled:
        text, written = relabelled[0]
        notes = (
            f"{label}: {len(relabelled)} range label(s) whose bounds are values of their class "
            f"leave re-labelled on a 1-2-5 grid (e.g. {text!r} as {written!r})",
        )
    return Hierarchy({value: tuple(labels) for value, labels in rows.items()}), notes


def _names(label: str, value: str) -> bool:
    """Whether ``label`` (folded) is ``value`` or holds it as a whole word, folded; a value of four
    characters or more needs only to begin a word not joined by ``-`` (``Bachelors_``,
    ``Bachelorsx``; ``Female-or-male`` does not name ``female``)."""
    if not value.strip() or value == SUPPRESSED:
        return False
    value = _fold(value)
    if label == value:
        return True
    if value not in label:  # most values: no pattern to compile
        return False
    after = "(?!-)" if len(value) >= _WORD_START_CHARS else r"(?![\w-])"
    return re.search(rf"(?<![\w-]){re.escape(value)}{after}", label) is not None


def _singled_out(label: str, folded: str, members: Sequence[str]) -> list[str]:
    """The ``members`` that ``label`` begins or ends, when it does so for some of them but not
    all: a masked label (``Bach*``, ``*lors``) always, a plain one (``Bachelor``) when it spells
    at least half of the value (``Other`` for a class holding ``Other-service`` is a word of its
    own)."""
    masked = label.startswith(SUPPRESSED) or label.endswith(SUPPRESSED)
    core = folded.strip(SUPPRESSED + " ")
    if not core:
        return []
    hit = []
    for member in members:
        value = _fold(member)
        if (value.startswith(core) or value.endswith(core)) and (
            masked or 2 * len(core) >= len(value)
        ):
            hit.append(member)
    return hit if len(hit) < len(members) else []


@lru_cache(maxsize=1 << 16)
def _fold(text: str) -> str:
    return fold(text).text.casefold()

"""Linkage across releases: a new release judged together with the earlier ones it can be
joined with.

A destination that receives several releases drawn from one source can join them. Each release
may be k-anonymous alone while together they isolate people: release 1 generalizes age and keeps
the postcode exact, release 2 keeps age exact and generalizes the postcode; someone who knows a
person's age and postcode finds them in one class of each, and the people in *both* classes can
be far fewer than k (the "intersection" of Wang and Fung 2006, *Anonymizing sequential releases*;
the composition attack of Ganta, Kasiviswanathan and Smith 2008 intersects the sensitive values
the same way; m-invariance, Xiao and Tao 2007, is the same concern for re-publication).

The model, and its assumption. The broker remembers, per (source, destination), what each
approved transfer released: its quasi-identifier columns and its classes (the distinct released
tuples, with the people holding each), never the data. It assumes the **same people** appear in
every release from one source (releases drawn from one registry), and that the destination can
tell which records of two releases are the same person (a shared column, or the released values
themselves). For a new release, each row's *original* values on an earlier release E's
quasi-identifiers are mapped to the classes of E whose labels hold them (a raw value is in a
label when equal, inside the range ``"30-39"``, matching the mask ``"570*"``, in the set
``"F, M"``, in the calendar unit ``"2024-03"`` or ``"2020/2024"`` (a date read however it is
written, :mod:`broker.precision`), in the top category ``"90+"``, or under ``"*"``). Rows that
fall in no class of E are people E did not hold. The others are grouped by (new class, the set
of E classes they fall in): a **joint class**. Everyone in a joint class is among the people an
attacker who knows a member's values cannot tell apart after the join (the true candidates may
be more: people whose labels in E overlap), so its size is a lower bound of that crowd, and the
rule holds joint classes to the policy's k (and l, for a sensitive attribute released in both).
When the new table lacks some of E's quasi-identifiers, rows are placed on the ones it has (the
classes of E they may be in); when it has none of them, there is nothing to join on and the
release is not linked (a destination that could still tell the same people apart, by a key of
its own, is beyond what the broker can see).

Sizes count people as the engine does (a tuple's people, summed over the tuples of the class).
A label the broker cannot read (a value of a policy's own hierarchy, say) holds no raw value:
such people count as absent from E, which the README lists as a limit.

Cost: one count table of the new table over both releases' columns. Per column, a label written
as a value is looked up; the others (ranges, sets, masks, dates) are each tested once over the
column's distinct values, which are then grouped by the set of labels holding them; a tuple's
classes are the intersection, over columns, of the classes its groups allow (one set operation per
distinct combination of groups, not per tuple and class).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from broker.anonymize.labels import Label, number_of, read_label
from broker.engines.base import Engine, RecodePlan
from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.missing import blank_strings
from broker.numbers import numbers_of
from broker.precision import read_date

RULE = "linkage"
_ISO_DATE = re.compile(r"\d{4}-\d{2}")  # a date read into ISO, to the month at least


@dataclass(frozen=True)
class Release:
    """What one approved transfer released: its quasi-identifiers and sensitive attributes as
    they left, and its classes (labels in the order of ``quasi_identifiers``, people).

    ``classes`` is None when the release had more classes than the broker keeps
    (``class_count`` says how many): it cannot be checked against, and says so.
    """

    transfer_id: str
    released_at: datetime
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    classes: tuple[tuple[tuple[Any, ...], int], ...] | None
    class_count: int


@dataclass(frozen=True)
class History:
    """The earlier releases from a transfer's source to its destination within the longest
    look-back of its rules, and when the new transfer is decided."""

    now: datetime
    releases: tuple[Release, ...] = ()
    since: datetime | None = None  # where the window starts (None: the releases say)


@dataclass(frozen=True)
class Joint:
    """A new release joined with one earlier release: its smallest joint class.

    ``smallest`` is None when no one of the new release falls in a class of the earlier one;
    ``diversity`` gives, per sensitive attribute released in both, the fewest distinct values in
    a joint class. ``age`` is how long before the new decision the earlier one was released.
    """

    release: Release
    age: timedelta
    attributes: tuple[str, ...]
    linked_people: int = 0
    classes: int = 0
    smallest: int | None = None
    diversity: Mapping[str, int] = field(default_factory=dict)
    unchecked: str | None = None  # why the broker could not check this release
    people: int = 0  # of the new release, linked or not


# --- labels ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Values:
    """A column's distinct values, read once in every form a label may test."""

    text: pd.Series
    numbers: np.ndarray
    missing: np.ndarray
    years: np.ndarray
    dates: pd.Series  # a date however written, in ISO (broker.precision); else the text
    compact: pd.Series  # without blanks or hyphens, uppercase: a postcode as a mask reads it

    @classmethod
    def of(cls, values: pd.Series) -> _Values:
        values = pd.Series(np.asarray(values, dtype=object))
        missing = values.isna().to_numpy() | blank_strings(values)
        text = values.map(_text).where(~missing, "")
        numbers = numbers_of(text.where(~missing, None))
        pairs = zip(values, missing, strict=True)
        read = [None if absent else read_date(v).canonical for v, absent in pairs]
        dates = pd.Series([r or t for r, t in zip(read, text, strict=True)], dtype=object)
        dated = dates.str.match(_ISO_DATE.pattern).to_numpy(dtype=bool)
        years = np.where(dated, numbers_of(dates.str[:4]), np.nan)
        compact = text.str.replace(r"[\s\-]", "", regex=True).str.upper()
        return cls(text, numbers, missing, years, dates, compact)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, pd.Timestamp) and value == value.normalize():
        return value.strftime("%Y-%m-%d")
    return str(value)


def label_holds(label: Any, values: pd.Series | _Values) -> np.ndarray:
    """Which of ``values`` (raw, as written) fall in ``label`` (as released).

    Examples
    --------
    >>> ages = pd.Series(["25", "30", "41", None])
    >>> label_holds("30-39", ages).tolist(), label_holds("*", ages).tolist()
    ([False, True, False, False], [True, True, True, True])
    >>> label_holds("20-30, NA", ages).tolist()
    [True, True, False, True]
    >>> label_holds("570*", pd.Series(["57001", "58001"])).tolist()
    [True, False]
    >>> label_holds("2024-03", pd.Series(["2024-03-17", "17/03/2024", "2024-04-01"])).tolist()
    [True, True, False]
    >>> label_holds("90+", pd.Series(["93", "89"])).tolist()
    [True, False]
    """
    found = values if isinstance(values, _Values) else _Values.of(values)
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return found.missing.copy()
    if not isinstance(label, str):
        hit = (found.text == _text(label)).to_numpy()
        if isinstance(label, (int, float)) and not isinstance(label, bool):
            hit |= found.numbers == float(label)
        return hit & ~found.missing
    return _holds(read_label(label), found)


def _holds(label: Label, found: _Values) -> np.ndarray:
    """Which values fall in ``label``, under any of its readings."""
    if label.any:
        return np.ones(len(found.missing), dtype=bool)
    hit = (found.text == label.text).to_numpy() & ~found.missing
    if not label.text.strip():
        return hit | found.missing
    if label.missing:
        hit |= found.missing
    if label.number is not None:
        hit |= found.numbers == label.number
    if label.range is not None:
        low, high = label.range
        hit |= (found.numbers >= low) & (found.numbers <= high)
    if label.years is not None:
        hit |= (found.years >= label.years[0]) & (found.years <= label.years[1])
    if label.top is not None:
        hit |= found.numbers >= label.top
    if label.calendar is not None:
        unit = label.calendar
        following = found.dates.str[len(unit) : len(unit) + 1]
        hit |= (found.dates.str.startswith(unit) & following.isin(["", "-", "T", " "])).to_numpy()
    if label.prefix is not None:
        starts = found.text.str.startswith(label.prefix) | found.compact.str.startswith(
            label.prefix
        )
        hit |= starts.to_numpy() & ~found.missing
    for member in label.members:
        hit |= _holds(member, found)
    return hit


# --- joint classes -----------------------------------------------------------------------------


def earlier_cells(
    dictionaries: Mapping[str, pd.Series],
    codes: Mapping[str, np.ndarray],
    release: Release,
) -> np.ndarray:
    """For each tuple (its value codes per column of ``release``), the id of the set of
    ``release``'s classes holding it; -1 when none does (someone the release did not hold).

    Examples
    --------
    >>> release = Release("t1", None, ("age", "sex"), (), ((("20-29", "F"), 3),
    ...     (("30-39", "F, M"), 4)), 2)
    >>> dictionaries = {"age": pd.Series(["25", "35", "50"]), "sex": pd.Series(["F", "M"])}
    >>> codes = {"age": np.array([0, 0, 1, 2]), "sex": np.array([0, 1, 1, 0])}
    >>> earlier_cells(dictionaries, codes, release).tolist()
    [0, -1, 1, -1]
    """
    columns = release.quasi_identifiers
    classes = release.classes or ()
    size = len(next(iter(codes.values()))) if codes else 0
    if not classes or size == 0:
        return np.full(size, -1, dtype=np.int64)
    tuple_sets, classes_of_sets = [], []
    for position, column in enumerate(columns):
        ids, labels = pd.factorize(
            pd.Series([labels[position] for labels, _ in classes], dtype=object),
            use_na_sentinel=False,
        )
        classes_of_label: list[list[int]] = [[] for _ in labels]
        for index, label in enumerate(ids):
            classes_of_label[label].append(index)
        set_of_value, held = _label_sets(dictionaries[column], list(labels))
        classes_of_sets.append(
            [frozenset(c for label in labels_ for c in classes_of_label[label]) for labels_ in held]
        )
        tuple_sets.append(set_of_value[codes[column]])
    # Tuples whose values lie in the same label sets, column by column, lie in the same classes.
    signature = np.zeros(size, dtype=np.int64)
    for sets, classes_of_set in zip(tuple_sets, classes_of_sets, strict=True):
        signature = pd.factorize(signature * len(classes_of_set) + sets)[0].astype(np.int64)
    firsts = np.unique(signature, return_index=True)[1]
    cells: dict[frozenset[int], int] = {}
    cell_of_signature = np.full(firsts.size, -1, dtype=np.int64)
    for index in np.argsort(firsts):  # in order of appearance
        first = firsts[index]
        held = frozenset.intersection(
            *(
                classes_of_set[sets[first]]
                for sets, classes_of_set in zip(tuple_sets, classes_of_sets, strict=True)
            )
        )
        if held:
            cell_of_signature[index] = cells.setdefault(held, len(cells))
    return cell_of_signature[signature]


def _label_sets(dictionary: pd.Series, labels: list[Any]) -> tuple[np.ndarray, list[list[int]]]:
    """Each distinct value's set of labels holding it, as an id, and each set's labels (their
    positions in ``labels``; a set may be empty).

    Values are grouped first (a label written as a value is looked up, not tested), so the
    labels that need a test (ranges, sets, masks, dates) are tested once on all the values and
    once on a representative of each group.
    """
    values = _Values.of(dictionary)
    keys = np.random.default_rng(len(labels)).integers(1, 2**62, size=len(labels), dtype=np.int64)
    by_text: dict[str, list[int]] = {}
    by_number: dict[float, list[int]] = {}
    tested = []
    for index, label in enumerate(labels):
        if _plain(label):
            by_text.setdefault(label, []).append(index)
        elif (number := number_of(label)) is not None:
            by_number.setdefault(number, []).append(index)
        else:
            tested.append(index)
    signature = np.zeros(len(values.missing), dtype=np.int64)
    for table, column in ((by_text, values.text), (by_number, pd.Series(values.numbers))):
        if table:
            xor = np.array([np.bitwise_xor.reduce(keys[ids]) for ids in table.values()])
            position = {key: i for i, key in enumerate(table)}
            found = column.map(position).fillna(-1).to_numpy(dtype=np.int64)
            signature ^= np.where((found >= 0) & ~values.missing, xor[np.maximum(found, 0)], 0)
    for index in tested:
        signature ^= np.where(label_holds(labels[index], values), keys[index], 0)
    set_of_value, _ = pd.factorize(signature)
    firsts = np.unique(set_of_value, return_index=True)[1]
    held: list[list[int]] = []
    for first in firsts:
        found = [] if values.missing[first] else list(by_text.get(values.text.iloc[first], []))
        if np.isfinite(values.numbers[first]):
            found += by_number.get(float(values.numbers[first]), [])
        held.append(found)
    representatives = _Values.of(pd.Series(np.asarray(dictionary, dtype=object)[firsts]))
    for index in tested:
        for group in np.flatnonzero(label_holds(labels[index], representatives)):
            held[group].append(index)
    return set_of_value.astype(np.int64), held


def _plain(label: Any) -> bool:
    """A label that holds exactly the values written as it is (a raw value, a category)."""
    return isinstance(label, str) and read_label(label).plain


def joint_of(
    new_class: np.ndarray,
    cell: np.ndarray,
    people: np.ndarray,
    sensitive: Mapping[str, np.ndarray] | None = None,
) -> tuple[int, int, int | None, dict[str, int]]:
    """(people linked, joint classes, fewest people in one, fewest distinct values of each
    sensitive attribute in one) for tuples with a new-release class id, an earlier-release
    cell id (-1: not in the earlier release) and their people.

    Examples
    --------
    >>> joint_of(np.array([0, 0, 1, 1]), np.array([0, 1, 1, -1]), np.array([2, 1, 3, 5]),
    ...          {"disease": np.array([0, 1, 1, 0])})
    (6, 3, 1, {'disease': 1})
    """
    linked = cell >= 0
    if not linked.any():
        return 0, 0, None, {}
    pairs, joint = np.unique(
        np.stack([new_class[linked], cell[linked]], axis=1), axis=0, return_inverse=True
    )
    joint = joint.reshape(-1)
    sizes = np.bincount(joint, weights=people[linked]).astype(np.int64)
    diversity = {}
    for name, codes in (sensitive or {}).items():
        distinct = np.unique(np.stack([joint, codes[linked]], axis=1), axis=0)[:, 0]
        diversity[name] = int(np.bincount(distinct, minlength=len(pairs)).min())
    return int(people[linked].sum()), len(pairs), int(sizes.min()), diversity


# --- on an engine ------------------------------------------------------------------------------

Relabel = Mapping[str, Mapping[Any, Any]]


def assess(
    engine: Engine,
    quasi_identifiers: Sequence[str],
    sensitive: Sequence[str],
    earlier: Sequence[Release],
    now: datetime,
    released: Mapping[str, str] | None = None,
    relabel: RecodePlan | None = None,
) -> tuple[Joint, ...]:
    """The new release (the table in ``engine``) joined with each earlier release.

    The new release's classes are its ``quasi_identifiers`` as they leave: the columns
    themselves, or those named by ``released`` (quasi-identifier -> a column of ``engine``
    holding its released label, for anonymized rows kept beside the originals), or their values
    relabelled by ``relabel`` (a generalization planned on counts). Original values are read
    from the quasi-identifiers' own columns.
    """
    released = dict(released or {})
    joints = []
    for original in earlier:
        release = original
        age = now - release.released_at
        attributes = tuple(dict.fromkeys([*quasi_identifiers, *release.quasi_identifiers]))
        if release.classes is None:
            joints.append(
                Joint(
                    release,
                    age,
                    attributes,
                    unchecked=f"it released {release.class_count:,} classes, more than the "
                    "broker keeps (BROKER_LINKAGE_MAX_CLASSES)",
                )
            )
            continue
        shared = [q for q in release.quasi_identifiers if q in engine.columns]
        if not shared:  # nothing to join on: see the module docstring
            joints.append(Joint(release, age, attributes))
            continue
        release = _on(release, shared)
        shared_sensitive = [s for s in sensitive if s in release.sensitive and s in engine.columns]
        new_columns = [released.get(q, q) for q in quasi_identifiers]
        columns = list(dict.fromkeys([*new_columns, *shared, *shared_sensitive]))
        (table,) = engine.counts([columns], people=True)
        people = table.rows if table.people is None else table.people
        new_class = _new_classes(engine, table, quasi_identifiers, new_columns, relabel)
        cell = earlier_cells(
            {q: engine.dictionary(q) for q in shared},
            {q: table.codes(q) for q in shared},
            release,
        )
        diversity_codes = {s: table.codes(s) for s in shared_sensitive}
        linked, classes, smallest, diversity = joint_of(new_class, cell, people, diversity_codes)
        joints.append(
            Joint(
                original,
                age,
                attributes,
                linked,
                classes,
                smallest,
                diversity,
                people=int(people.sum()),
            )
        )
    return tuple(joints)


def _on(release: Release, columns: Sequence[str]) -> Release:
    """The release seen on some of its quasi-identifiers only (the others are not in the new
    table): classes that differ only elsewhere hold the same tuples, and stay apart."""
    if tuple(columns) == release.quasi_identifiers:
        return release
    positions = [release.quasi_identifiers.index(q) for q in columns]
    classes = tuple(
        (tuple(labels[p] for p in positions), people) for labels, people in release.classes or ()
    )
    return Release(
        release.transfer_id,
        release.released_at,
        tuple(columns),
        release.sensitive,
        classes,
        release.class_count,
    )


def _new_classes(engine, table, quasi_identifiers, new_columns, relabel) -> np.ndarray:
    """Each tuple's class in the new release, as an id."""
    if not quasi_identifiers:
        return np.zeros(table.size, dtype=np.int64)
    if relabel is None:
        return table.tuple_ids(new_columns)[0]
    keys = np.zeros(table.size, dtype=np.int64)
    for name in quasi_identifiers:
        if name in relabel.drop:
            continue
        dictionary = engine.dictionary(name)
        labels = relabel.labels.get(name, {})
        written = dictionary.map(lambda v, labels=labels: labels.get(v, v) if v in labels else v)
        label_codes = pd.factorize(written.astype(object), use_na_sentinel=False)[0]
        codes = label_codes[table.codes(name)]
        keys = pd.factorize(keys * (int(label_codes.max(initial=0)) + 1) + codes)[0]
    return keys.astype(np.int64)


# --- the rule ----------------------------------------------------------------------------------


def linkage_rules(
    joints: Sequence[Joint], scope: str, jurisdiction: str, rules_: RuleSet
) -> list[RuleResult]:
    """One result per earlier release within the rule set's look-back window (none when the
    rule set does not look back, or asks for neither k nor l)."""
    window = rules_.linkage_lookback_days
    if window is None or (rules_.min_k is None and rules_.min_l is None):
        return []
    results = []
    for joint in joints:
        if joint.age > timedelta(days=window):
            continue
        results.append(_result(joint, scope, jurisdiction, rules_))
    return results


def _result(joint: Joint, scope: str, jurisdiction: str, rules_: RuleSet) -> RuleResult:
    earlier = joint.release.transfer_id
    attributes = ", ".join(joint.attributes)
    threshold = rules_.min_k
    if joint.unchecked is not None:
        return RuleResult(
            RULE,
            scope,
            jurisdiction,
            False,
            f"the earlier transfer {earlier} to this destination cannot be checked against: "
            f"{joint.unchecked}; {jurisdiction} ({scope}) looks back "
            f"{rules_.linkage_lookback_days} days",
            attributes,
            None,
            threshold,
            fixable=False,
        )
    if joint.smallest is None:
        return RuleResult(
            RULE,
            scope,
            jurisdiction,
            True,
            f"no one of this table can be placed in a class of the earlier transfer {earlier} "
            "(it held none of them, or the two share no quasi-identifier)",
            attributes,
            None,
            threshold,
        )
    too_small = rules_.min_k is not None and joint.smallest < rules_.min_k
    thin = {
        name: value
        for name, value in joint.diversity.items()
        if rules_.min_l is not None and value < rules_.min_l
    }
    joined = (
        f"joined with the earlier transfer {earlier} on {attributes} (the same people assumed "
        f"in both), {joint.linked_people:,} people fall in {joint.classes:,} joint classes, the "
        f"smallest of {joint.smallest} people"
        + (
            f" ({joint.people - joint.linked_people:,} fall in no class of it: people it did "
            "not hold, or values given already generalized, which the broker cannot place)"
            if joint.people > joint.linked_people
            else ""
        )
    )
    if not too_small and not thin:
        return RuleResult(
            RULE, scope, jurisdiction, True, joined, attributes, joint.smallest, threshold
        )
    failing = []
    if too_small:
        failing.append(f"{jurisdiction} ({scope}) requires k >= {rules_.min_k}")
    failing += [
        f"{name} has only {value} distinct value(s) in one, {jurisdiction} ({scope}) requires "
        f"l >= {rules_.min_l}"
        for name, value in thin.items()
    ]
    return RuleResult(
        RULE,
        scope,
        jurisdiction,
        False,
        f"{joined}: {'; '.join(failing)}; generalize these attributes at least as the earlier "
        "release did, or coarser",
        attributes,
        joint.smallest,
        threshold,
    )


def lookback(rule_sets: Sequence[RuleSet]) -> int | None:
    """The longest look-back of the rule sets (the stricter wins), None when none looks back."""
    days = [r.linkage_lookback_days for r in rule_sets if r.linkage_lookback_days is not None]
    return max(days) if days else None


def released_classes(
    engine: Engine, quasi_identifiers: Sequence[str], cap: int
) -> tuple[tuple[tuple[tuple[Any, ...], int], ...] | None, int]:
    """The classes a table leaves with: each distinct tuple of its ``quasi_identifiers`` (as
    JSON values) and its people (None when there are more than ``cap``), and how many."""
    (table,) = engine.counts([list(quasi_identifiers)], people=True)
    if table.size > cap:
        return None, table.size
    people = table.rows if table.people is None else table.people
    columns = [
        np.array([_json_value(v) for v in engine.dictionary(q)], dtype=object)[table.codes(q)]
        for q in quasi_identifiers
    ]
    labels = zip(*columns, strict=True) if columns else [()] * table.size
    classes = tuple((tuple(row), int(n)) for row, n in zip(labels, people, strict=True))
    return classes, table.size


def _json_value(value: Any) -> Any:
    """A released value as JSON keeps it: text, a number, or None for a missing one."""
    if value is None or (not isinstance(value, (str, bytes)) and pd.isna(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else str(value)  # JSON has no infinity
    if isinstance(value, str):
        return value
    return _text(value)

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
``"F, M"``, in the calendar unit ``"2024-03"`` or ``"2020/2024"``, or under ``"*"``). Rows that
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

Cost: one count table of the new table over both releases' columns; each of its distinct
projections on E's columns is matched against E's labels, column by column and label by label
(vectorized over the distinct values); only where labels overlap is each class tested in turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from broker.engines.base import Engine, RecodePlan
from broker.fsla.models import RuleSet
from broker.fsla.results import RuleResult
from broker.missing import blank_strings

RULE = "linkage"
ANY = "*"
MISSING = "NA"

_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_RANGE = re.compile(rf"({_NUMBER})-({_NUMBER})")
_YEARS = re.compile(r"(\d{4})/(\d{4})")
_CALENDAR = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?")
_ISO_DATE = re.compile(r"\d{4}-\d{2}")


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

    @classmethod
    def of(cls, values: pd.Series) -> _Values:
        values = pd.Series(np.asarray(values, dtype=object))
        missing = values.isna().to_numpy() | blank_strings(values)
        text = values.map(_text).where(~missing, "")
        numbers = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(float)
        dated = text.str.match(_ISO_DATE.pattern).to_numpy(dtype=bool)
        years = np.where(dated, pd.to_numeric(text.str[:4], errors="coerce"), np.nan)
        return cls(text, numbers, missing, years)


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
    >>> label_holds("2024-03", pd.Series(["2024-03-17", "2024-04-01"])).tolist()
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
    if label == ANY:
        return np.ones(len(found.missing), dtype=bool)
    hit = (found.text == label).to_numpy() & ~found.missing
    if not label.strip():
        return hit | found.missing
    if label == MISSING:
        hit |= found.missing
    if re.fullmatch(_NUMBER, label):
        hit |= found.numbers == float(label)
    if ranged := _RANGE.fullmatch(label):
        low, high = float(ranged[1]), float(ranged[2])
        if low <= high:
            hit |= (found.numbers >= low) & (found.numbers <= high)
    if years := _YEARS.fullmatch(label):
        hit |= (found.years >= int(years[1])) & (found.years <= int(years[2]))
    if _CALENDAR.fullmatch(label):
        following = found.text.str[len(label) : len(label) + 1]
        hit |= (found.text.str.startswith(label) & following.isin(["", "-", "T", " "])).to_numpy()
    if len(label) > 1 and label.endswith(ANY):
        prefix = label.rstrip(ANY)
        if prefix and ", " not in prefix:
            hit |= found.text.str.startswith(prefix).to_numpy() & ~found.missing
    if ", " in label:
        for part in label.split(", "):
            hit |= label_holds(part, found)
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
    # Per column: the distinct labels, each class's label id, and which values each label holds.
    label_ids, holds = [], []
    for position, column in enumerate(columns):
        labels = [labels[position] for labels, _people in classes]
        ids, uniques = pd.factorize(pd.Series(labels, dtype=object), use_na_sentinel=False)
        values = _Values.of(dictionaries[column])
        matrix = np.column_stack([label_holds(label, values) for label in uniques])
        label_ids.append(ids.astype(np.int64))
        holds.append(matrix[codes[column]])  # tuples x labels of this column
    if all((matrix.sum(axis=1) <= 1).all() for matrix in holds):
        return _cells_when_labels_partition(label_ids, holds)
    return _cells_when_labels_overlap(label_ids, holds, size)


def _cells_when_labels_partition(label_ids, holds) -> np.ndarray:
    """Each value in at most one label per column: a tuple's labels name at most one class."""
    class_keys = np.zeros(label_ids[0].size, dtype=np.int64)
    tuple_keys = np.zeros(holds[0].shape[0], dtype=np.int64)
    absent = np.zeros(holds[0].shape[0], dtype=bool)
    for ids, matrix in zip(label_ids, holds, strict=True):
        width = matrix.shape[1]
        class_keys = class_keys * width + ids
        absent |= ~matrix.any(axis=1)
        tuple_keys = tuple_keys * width + matrix.argmax(axis=1)
    order = np.argsort(class_keys)
    found = np.searchsorted(class_keys[order], tuple_keys)
    found = np.minimum(found, class_keys.size - 1)
    hit = (class_keys[order][found] == tuple_keys) & ~absent
    return np.where(hit, order[found], -1).astype(np.int64)


def _cells_when_labels_overlap(label_ids, holds, size: int) -> np.ndarray:
    """Labels overlap (grid ranges that never state a class's own extremes): the set of
    classes holding each tuple, as an id; each class is tested in turn."""
    keys = np.random.default_rng(0).integers(1, 2**63 - 1, size=label_ids[0].size, dtype=np.int64)
    signature = np.zeros(size, dtype=np.int64)
    matched = np.zeros(size, dtype=bool)
    for index in range(label_ids[0].size):
        inside = np.ones(size, dtype=bool)
        for ids, matrix in zip(label_ids, holds, strict=True):
            inside &= matrix[:, ids[index]]
        signature ^= np.where(inside, keys[index], 0)
        matched |= inside
    cells = np.full(size, -1, dtype=np.int64)
    cells[matched] = pd.factorize(signature[matched])[0]
    return cells


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
        return float(value)
    if isinstance(value, str):
        return value
    return _text(value)

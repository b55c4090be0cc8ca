"""The new release joined with the earlier ones on an engine's count tables, and the classes a
release leaves with (see :mod:`broker.fsla.linkage`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from broker.engines.base import Engine, RecodePlan
from broker.fsla.linkage.joint import earlier_cells, joint_of
from broker.fsla.linkage.labels import _text
from broker.fsla.linkage.releases import Joint, Release

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

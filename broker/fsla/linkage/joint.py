"""Joint classes: each tuple of the new release placed in the classes of an earlier one that may
hold it, and grouped with its new class (see :mod:`broker.fsla.linkage`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from broker.anonymize.labels import number_of, read_label
from broker.fsla.linkage.labels import _Values, label_holds
from broker.fsla.linkage.releases import Release


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

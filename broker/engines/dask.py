"""The Dask engine: count tables of a table that stays where a cluster holds it.

A Dask dataframe is split into partitions held by the workers of a cluster (``dask.distributed``;
without a client, the local threads). Every count table is a ``groupby(..., dropna=False)``
computed there; only the distinct tuples come back, and are numbered here by each column's
dictionary. Who the rows are travels with them: a 64-bit hash of each whole row, computed when
the engine is made (``pandas.util.hash_pandas_object``; two different rows with one hash would
count as one person: fewer people, never more), and the person key when one is declared: each
row's person is then labelled once (``__fedbroker_person``), the rows sharing a folded key, a
row hash or a rare tuple joined (:func:`broker.engines.people.components`, on the distinct
(key, row) pairs the workers send back).

Columns must hold one type each (text, as the canonical CSV reader gives, or numbers): the hash
of a row compares values as pandas hashes them. Dask is an optional extra
(``pip install 'fedbroker[dask]'``); only this module imports it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from broker.columns.precision import fold
from broker.columns.roles import require_columns
from broker.engines.base import (
    IDENTICAL_ROWS,
    PERSON_KEY,
    WORST_CASE,
    CountTable,
    RecodePlan,
    dictionary_of,
)
from broker.engines.people import RareTuples, components, rare_tuples

_ROW = "__fedbroker_row"
_KEY = "__fedbroker_key"
_WORST = "__fedbroker_worst"  # the row hash, or its rare tuple's (the worst case)
_FOLDED = "__fedbroker_folded"  # the person key, folded
_PERSON = "__fedbroker_person"  # with a person key: the rows it, identical rows, rare tuples join


def _row_hashes(partition: pd.DataFrame, columns: list[str]) -> pd.Series:
    return pd.util.hash_pandas_object(partition[columns], index=False)


_HEAD_PARTITIONS = 8


class DaskEngine:
    """A Dask dataframe seen through counts; see the module docstring."""

    def __init__(
        self,
        frame: dd.DataFrame,
        columns: Sequence[str],
        person_key: bool,
        rare: RareTuples | None = None,
    ):
        self._frame = frame
        self._names = list(columns)
        self._person_key = person_key
        self._rare = rare  # with rare tuples, the frame holds _WORST (the worst case)
        self._rows = int(frame.shape[0].compute())
        self._dictionaries: dict[str, pd.Series] = {}
        self._indexes: dict[str, pd.Index] = {}

    @classmethod
    def from_dask(cls, frame: dd.DataFrame, person_key: str | None = None) -> DaskEngine:
        """A Dask dataframe (read from the cluster's storage, say ``dd.read_parquet``)."""
        columns = [c for c in frame.columns if c != person_key]
        require_columns(list(frame.columns), [person_key] if person_key else [], "Person key")
        hashes = frame.map_partitions(_row_hashes, columns, meta=(_ROW, "uint64"))
        prepared = frame[columns].assign(**{_ROW: hashes})
        if person_key:
            prepared = prepared.assign(**{_KEY: frame[person_key]})
        return cls(prepared, columns, person_key is not None)

    @classmethod
    def from_pandas(
        cls, frame: pd.DataFrame, person_key: str | None = None, partitions: int = 4
    ) -> DaskEngine:
        """A frame in memory split into ``partitions``: tests, and small tables."""
        return cls.from_dask(dd.from_pandas(frame, npartitions=partitions), person_key)

    # --- the Engine protocol --------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        return list(self._names)

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def people_counted_by(self) -> str:
        if self._person_key:
            return PERSON_KEY
        return WORST_CASE if self._worst else IDENTICAL_ROWS

    @property
    def _worst(self) -> bool:
        return self._rare is not None and not self._rare.empty

    @property
    def rare(self) -> RareTuples | None:
        return self._rare

    def assume_worst(self, quasi_identifiers: Sequence[str]) -> None:
        """Each row is labelled on the workers with its possible person (its rare tuple's, or
        its hash), which a recoded table keeps."""
        if _WORST in self._frame.columns:
            return
        if _PERSON in self._frame.columns:  # labelled before the worst case: again, with it
            self._frame = self._frame.drop(columns=[_PERSON])
        rare = rare_tuples(self, quasi_identifiers)
        if not rare.empty:
            indexes = {name: self._indexes[name] for name in rare.columns}
            labels = self._frame.map_partitions(
                _worst_labels, indexes, rare, meta=(_WORST, "uint64")
            )
            self._frame = self._frame.assign(**{_WORST: labels})
        self._rare = rare
        self._label_people()

    def _label_people(self) -> None:
        """With a person key, each row's person: the components of the rows sharing a folded
        key, or a row hash (or a rare tuple: the worst case, once assumed). The key only
        merges; computed on the distinct (key, row) pairs, then labelled on the workers."""
        if not self._person_key or _PERSON in self._frame.columns:
            return
        base = _WORST if _WORST in self._frame.columns else _ROW
        folded = self._frame[_KEY].map_partitions(_fold_keys, meta=(_FOLDED, object))
        frame = self._frame.assign(**{_FOLDED: folded})
        pairs = frame[[_FOLDED, base]].drop_duplicates().compute()
        keys, distinct = pd.factorize(pairs[_FOLDED].to_numpy(dtype=object))
        found = components(keys, pairs[base].to_numpy())
        person = np.empty(len(distinct), dtype=np.int64)
        person[keys] = found
        index = pd.Index(distinct, dtype=object)
        labels = frame[_FOLDED].map_partitions(_people_of, index, person, meta=(_PERSON, "int64"))
        self._frame = frame.drop(columns=[_FOLDED]).assign(**{_PERSON: labels})

    def dictionary(self, column: str) -> pd.Series:
        self._learn([column])
        return self._dictionaries[column]

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        found = self._grouped([list(columns) for columns in column_sets], people)
        return [
            CountTable.of(columns, codes, rows, persons)
            for columns, (codes, rows, persons) in zip(column_sets, found, strict=True)
        ]

    def tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        return [rows for _codes, rows, _persons in self._grouped(column_sets, False)]

    def distinct_estimates(self) -> dict[str, float]:
        """Each column's number of distinct values, estimated in one pass (HyperLogLog, within
        a few percent): what its dictionary would bring back to the broker's memory."""
        found = dask.compute(*(self._frame[c].nunique_approx() for c in self._names))
        return {name: float(n) for name, n in zip(self._names, found, strict=True)}

    def duplicate_rows(self) -> int:
        return self._rows - int(self._frame[_ROW].nunique().compute())

    def head(self, columns: Sequence[str], rows: int) -> pd.DataFrame:
        """The first ``rows`` rows in order, read from the first partitions one at a time (at
        most :data:`_HEAD_PARTITIONS` of them: the rest of the data stays where it is)."""
        require_columns(self._names, columns)
        selected = self._frame[list(columns)]
        parts: list[pd.DataFrame] = []
        for index in range(min(selected.npartitions, _HEAD_PARTITIONS)):
            parts.append(selected.get_partition(index).head(rows, npartitions=1, compute=True))
            if sum(len(p) for p in parts) >= rows:
                break
        return pd.concat(parts).head(rows) if parts else selected._meta

    def recode(self, plan: RecodePlan) -> DaskEngine:
        kept = [c for c in self._names if c not in plan.drop]
        frame = self._frame.drop(columns=[c for c in plan.drop if c in self._names])
        for column, labels in plan.labels.items():
            if column in kept:
                frame = frame.assign(
                    **{column: frame[column].map_partitions(_relabel, dict(labels))}
                )
        return DaskEngine(frame, kept, self._person_key, self._rare)

    # --- internals ------------------------------------------------------------------------------

    def _learn(self, columns: Sequence[str]) -> None:
        """The dictionaries of ``columns`` not known yet, computed together (one pass)."""
        missing = [c for c in dict.fromkeys(columns) if c not in self._dictionaries]
        require_columns(self._names, missing)
        found = dask.compute(*(self._frame[c].drop_duplicates() for c in missing))
        for column, values in zip(missing, found, strict=True):
            values = dictionary_of(values)
            self._dictionaries[column] = values
            self._indexes[column] = pd.Index(values.to_numpy(dtype=object), dtype=object)

    def _grouped(self, column_sets: Sequence[Sequence[str]], people: bool):
        """Each tuple's codes, rows and (with ``people``) people, for every set in one compute.
        The workers replace values by their codes first, so the groups are integers: no missing
        keys to lose, and the codes come back as they are."""
        column_sets = [list(columns) for columns in column_sets]
        self._learn([name for columns in column_sets for name in columns])
        persons_of = []
        if people:
            self._label_people()
            persons_of = [_PERSON] if self._person_key else [_WORST if self._worst else _ROW]
        named = sorted({name for columns in column_sets for name in columns})
        selected = self._frame[[*named, *persons_of]]
        meta = selected._meta.astype({name: "int64" for name in named})
        indexes = {name: self._indexes[name] for name in named}
        coded = selected.map_partitions(_encode, indexes, meta=meta)
        graphs = []
        for columns in column_sets:
            if not columns:
                graphs.append([coded.shape[0], *(coded[p].nunique() for p in persons_of)])
                continue
            sizes = coded.groupby(columns).size()
            pairs = [
                coded[[*columns, person]].drop_duplicates().groupby(columns).size()
                for person in (persons_of if people else [])
            ]
            graphs.append([sizes, *pairs])
        results = []
        for columns, computed in zip(column_sets, dask.compute(*graphs)[0:], strict=True):
            sizes, *per_person = computed
            if not columns:
                rows = np.array([int(sizes)], dtype=np.int64)
                persons = np.array([min(int(n) for n in per_person)]) if people else None
                results.append(([], rows, persons))
                continue
            persons = None
            if people:
                persons = np.minimum.reduce(
                    [n.reindex(sizes.index).to_numpy(np.int64) for n in per_person]
                )
            results.append((_keys(sizes.index, len(columns)), sizes.to_numpy(np.int64), persons))
        return results


def _fold_keys(keys: pd.Series) -> pd.Series:
    return pd.Series(fold(keys), index=keys.index, name=_FOLDED, dtype=object)


def _people_of(folded: pd.Series, index: pd.Index, person: np.ndarray) -> pd.Series:
    found = index.get_indexer(folded.to_numpy(dtype=object))
    if (found < 0).any():  # every key was among the pairs counted
        raise RuntimeError("a person key is missing from the people labelled")
    return pd.Series(person[found], index=folded.index, name=_PERSON)


def _encode(partition: pd.DataFrame, indexes: dict[str, pd.Index]) -> pd.DataFrame:
    """A partition with each value replaced by its code in its column's dictionary."""
    out = partition.copy()
    for column, index in indexes.items():
        values = partition[column].astype(object)
        codes = index.get_indexer(values.where(values.notna(), None).to_numpy(dtype=object))
        if (codes < 0).any():  # a value the dictionary lacks would be a broken contract
            raise RuntimeError(f"Column {column!r}: a value is not in its dictionary")
        out[column] = codes.astype(np.int64)
    return out


def _worst_labels(
    partition: pd.DataFrame, indexes: dict[str, pd.Index], rare: RareTuples
) -> pd.Series:
    """Each row's possible person: a hash of its rare tuple's group, else its row hash."""
    coded = _encode(partition[list(indexes)], indexes)
    codes = [coded[c].to_numpy() for c in rare.columns]
    tuples = CountTable.of(rare.columns, codes, np.ones(len(partition), dtype=np.int64))
    group = rare.group_of(tuples)
    hashed = pd.util.hash_array(group, hash_key="fedbroker-worst!")
    labels = np.where(group >= 0, hashed, partition[_ROW].to_numpy(dtype=np.uint64))
    return pd.Series(labels.astype(np.uint64), index=partition.index, name=_WORST)


def _keys(index: pd.Index, width: int) -> list[np.ndarray]:
    if width == 1:
        return [index.to_numpy(dtype=np.int64)]
    return [index.get_level_values(i).to_numpy(dtype=np.int64) for i in range(width)]


def _relabel(values: pd.Series, labels: dict) -> pd.Series:
    return values.map(labels).where(values.map(labels.__contains__), values)


# --- data that stays on the cluster's storage (transfers by reference) ------------------------


def connect(address: str):
    """A client of the Dask scheduler at ``address`` (``tcp://host:8786``): every computation
    of this process then runs on that cluster."""
    from distributed import Client

    return Client(address, set_as_default=True, timeout="10s")


def compute_each(function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``function`` of every item, computed on the cluster in parallel (one task each)."""
    return list(dask.compute(*(dask.delayed(function, pure=False)(item) for item in items)))


def from_partitions(
    read: Callable[[Any], pd.DataFrame],
    pieces: Sequence[Any],
    meta: pd.DataFrame,
    person_key: str | None = None,
) -> DaskEngine:
    """A table whose partitions are ``read(piece)``, called on the workers at every pass over
    the data (nothing is kept between passes): ``read`` is where each pass checks what it
    reads. ``meta`` is an empty frame with the partitions' columns and types."""
    frame = dd.from_map(read, list(pieces), meta=meta, enforce_metadata=True)
    return DaskEngine.from_dask(frame, person_key)


def write(engine: DaskEngine, location: str) -> list[dict]:
    """Write the table as Parquet files under the folder ``location``, rows in a fresh random
    order (spread over the partitions by a random key, then shuffled within each), computed on
    the cluster; returns the files written with their size and SHA-256, read back in chunks."""
    import fsspec

    frame = engine._frame[engine.columns]
    spread = frame.assign(__fedbroker_rank=frame.map_partitions(_random_ranks, meta=("r", "f8")))
    shuffled = spread.shuffle("__fedbroker_rank").map_partitions(_shuffled)
    shuffled.drop(columns=["__fedbroker_rank"]).to_parquet(location, write_index=False)
    written = []
    for opened in fsspec.open_files(f"{location.rstrip('/')}/*.parquet"):
        digest, size = hashlib.sha256(), 0
        with opened as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        written.append({"path": opened.path, "size": size, "sha256": digest.hexdigest()})
    return sorted(written, key=lambda f: f["path"])


def _random_ranks(partition: pd.DataFrame) -> pd.Series:
    return pd.Series(np.random.default_rng().random(len(partition)), index=partition.index)


def _shuffled(partition: pd.DataFrame) -> pd.DataFrame:
    return partition.sample(frac=1, random_state=np.random.default_rng()).reset_index(drop=True)

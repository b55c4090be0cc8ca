"""The DuckDB engine: count tables of a file larger than memory, counted out of core.

The file is read once into a DuckDB table on disk (a temporary database, spilling under a memory
limit), with a 64-bit hash of each whole row beside the columns (identical rows are one person;
two different rows with the same hash would count as one person: fewer people, never more, so a
collision can only make a decision stricter). Every count table is then one ``GROUP BY`` over
that table; only the distinct tuples come back to Python, where their values are numbered by each
column's dictionary. Memory follows the number of distinct tuples, not the size of the file.

CSV is read as the canonical reader reads it (:mod:`broker.datasets.csv_reader`): every value is
text as written, an empty field is the empty string, never missing. DuckDB is an optional extra
(``pip install 'fedbroker[duckdb]'``); only this module imports it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from broker.datasets import CSV, DatasetError, ReadLimits, detect_format
from broker.datasets.csv_reader import BOM, HEAD_BYTES, csv_header
from broker.engines.base import CountTable, RecodePlan
from broker.engines.pandas import IDENTICAL_ROWS, PERSON_KEY
from broker.roles import require_columns

_ROW = "__fedbroker_row"
_KEY = "__fedbroker_key"
DEFAULT_MEMORY_LIMIT = "1GB"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class DuckDBEngine:
    """A table held by DuckDB in a temporary database file; see the module docstring."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        table: str,
        columns: Sequence[str],
        person_key: bool,
        keep: object = None,
    ):
        self._con = connection
        self._table = table
        self._names = list(columns)
        self._person_key = person_key
        self._keep = keep  # the temporary folder, removed when the engine is collected
        self._rows = int(self._con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])
        self._dictionaries: dict[str, pd.Series] = {}
        self._indexes: dict[str, pd.Index] = {}

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        person_key: str | None = None,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
    ) -> DuckDBEngine:
        """A dataset file, read out of core; its header is checked as the canonical reader
        checks it (:class:`~broker.datasets.DatasetError` otherwise). CSV only for now."""
        path = Path(path)
        try:
            with path.open("rb") as file:
                head = file.read(HEAD_BYTES + len(BOM))
        except OSError as error:
            raise DatasetError(f"{path}: {error.strerror or error}") from None
        if detect_format(path.name, head[:16]) != CSV:
            raise DatasetError(f"{path}: the duckdb engine reads CSV files; use the pandas engine")
        head = head[len(BOM) :] if head.startswith(BOM) else head[:HEAD_BYTES]
        delimiter, header = csv_header(head, str(path), ReadLimits())
        if person_key is not None and person_key not in header:
            raise DatasetError(f"Person key {person_key!r} is not a column of {path}")
        columns = [name for name in header if name != person_key]
        return cls.from_csv(path, header, delimiter, person_key, memory_limit, columns)

    @classmethod
    def from_csv(
        cls,
        path: str | Path,
        header: Sequence[str],
        delimiter: str = ",",
        person_key: str | None = None,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
        columns: Sequence[str] | None = None,
    ) -> DuckDBEngine:
        """A CSV file whose ``header`` the canonical reader has checked; ``columns`` are the
        ones measured (default: all but the person key)."""
        types = ", ".join(f"{_text(name)}: 'VARCHAR'" for name in header)
        not_null = ", ".join(_text(name) for name in header)
        if columns is None:
            columns = [name for name in header if name != person_key]
        source = (
            f"read_csv({_text(str(path))}, auto_detect=false, header=true, "
            f"delim={_text(delimiter)}, quote='\"', escape='\"', columns={{{types}}}, "
            f"force_not_null=[{not_null}])"
        )
        return cls._load(source, columns, person_key, memory_limit)

    @classmethod
    def from_parquet(
        cls,
        path: str | Path,
        columns: Sequence[str],
        person_key: str | None = None,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
    ) -> DuckDBEngine:
        return cls._load(f"read_parquet({_text(str(path))})", columns, person_key, memory_limit)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, person_key: str | None = None) -> DuckDBEngine:
        """A frame whose columns each hold one type (DuckDB columns are typed): tests, and
        tables already in memory."""
        columns = [c for c in frame.columns if c != person_key]
        engine = cls._load("source_frame", columns, person_key, DEFAULT_MEMORY_LIMIT, frame)
        return engine

    @classmethod
    def _load(cls, source, columns, person_key, memory_limit, frame=None) -> DuckDBEngine:
        folder = tempfile.TemporaryDirectory(prefix="fedbroker-duckdb-")
        con = duckdb.connect(str(Path(folder.name) / "counts.duckdb"))
        con.sql(f"SET memory_limit = {_text(memory_limit)}")
        con.sql(f"SET temp_directory = {_text(folder.name)}")
        con.sql("SET preserve_insertion_order = true")  # rowid = the file's row order
        if frame is not None:
            con.register("source_frame", frame)
        names = ", ".join(_quote(c) for c in columns)
        key = f", {_quote(person_key)} AS {_KEY}" if person_key else ""
        try:
            con.sql(
                f"CREATE TABLE data AS SELECT {names}{key}, hash({names}) AS {_ROW} FROM {source}"
            )
        except duckdb.Error as error:  # a malformed body: ragged rows, bad UTF-8, ...
            con.close()
            folder.cleanup()
            raise DatasetError(str(error).splitlines()[0]) from None
        if frame is not None:
            con.unregister("source_frame")
        return cls(con, "data", columns, person_key is not None, folder)

    # --- the Engine protocol --------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        return list(self._names)

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def people_counted_by(self) -> str:
        return PERSON_KEY if self._person_key else IDENTICAL_ROWS

    def dictionary(self, column: str) -> pd.Series:
        found = self._dictionaries.get(column)
        if found is None:
            require_columns(self._names, [column])
            query = f"SELECT DISTINCT {_quote(column)} AS v FROM {self._table}"
            found = self._remember(column, self._con.execute(query).df()["v"])
        return found

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        return [self._count_table(list(columns), people) for columns in column_sets]

    def tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        return [self._grouped(list(columns), False)[0] for columns in column_sets]

    def duplicate_rows(self) -> int:
        query = f"SELECT count(*) - count(DISTINCT {_ROW}) FROM {self._table}"
        return int(self._con.execute(query).fetchall()[0][0])

    def partition_fingerprint(self, column: str) -> bytes:
        # Each row is labelled by the first row of its class: equal partitions, equal labels.
        query = (
            f"SELECT count(DISTINCT first), sum(hash(first)::HUGEINT) FROM (SELECT min(rowid) "
            f"OVER (PARTITION BY {_quote(column)}) AS first FROM {self._table})"
        )
        distinct, total = self._con.execute(query).fetchall()[0]
        return f"{distinct}:{total}".encode()

    def recode(self, plan: RecodePlan) -> DuckDBEngine:
        kept = [c for c in self._names if c not in plan.drop]
        parts, joins = [], []
        for position, name in enumerate(kept):
            labels = plan.labels.get(name)
            if not labels:
                parts.append(f"t.{_quote(name)}")
                continue
            alias = f"labels_{position}"
            table = pd.DataFrame({"value": list(labels), "label": list(labels.values())})
            self._con.register(alias, table)
            joins.append(f"LEFT JOIN {alias} ON t.{_quote(name)} = {alias}.value")
            parts.append(f"COALESCE({alias}.label, t.{_quote(name)}) AS {_quote(name)}")
        key = f", t.{_KEY}" if self._person_key else ""
        target = f"recoded_{id(plan)}"
        self._con.sql(
            f"CREATE TABLE {target} AS SELECT {', '.join(parts)}{key}, t.{_ROW} "
            f"FROM {self._table} t {' '.join(joins)} ORDER BY t.rowid"
        )
        return DuckDBEngine(self._con, target, kept, self._person_key, self._keep)

    # --- internals ------------------------------------------------------------------------------

    def _count_table(self, columns: list[str], people: bool) -> CountTable:
        rows, persons, values = self._grouped(columns, people)
        if len(columns) == 1 and columns[0] not in self._dictionaries:
            # A column's own count table lists its distinct values: its dictionary, for free.
            self._remember(columns[0], values[columns[0]])
            return CountTable.of(columns, [np.arange(len(rows))], rows, persons)
        codes = [self._codes(name, values[name]) for name in columns]
        return CountTable.of(columns, codes, rows, persons)

    def _remember(self, column: str, values: pd.Series) -> pd.Series:
        found = values.astype(object)
        found = found.where(found.notna(), None).reset_index(drop=True)
        self._dictionaries[column] = found
        self._indexes[column] = pd.Index(found.to_numpy(dtype=object), dtype=object)
        return found

    def _grouped(self, columns: list[str], people: bool):
        require_columns(self._names, columns)
        names = ", ".join(f"{_quote(c)} AS __fedbroker_c{i}" for i, c in enumerate(columns))
        counted = f"count(DISTINCT {_ROW})"
        if self._person_key:
            counted = f"least({counted}, count(DISTINCT {_KEY}))"
        aggregates = (
            f"count(*) AS __fedbroker_n{', ' + counted + ' AS __fedbroker_p' if people else ''}"
        )
        select = f"{names}, {aggregates}" if columns else aggregates
        group = " GROUP BY ALL" if columns else ""
        result = self._con.execute(f"SELECT {select} FROM {self._table}{group}").df()
        rows = result["__fedbroker_n"].to_numpy(dtype=np.int64)
        persons = result["__fedbroker_p"].to_numpy(dtype=np.int64) if people else None
        values = {name: result[f"__fedbroker_c{i}"] for i, name in enumerate(columns)}
        return rows, persons, values

    def _codes(self, column: str, values: pd.Series) -> np.ndarray:
        self.dictionary(column)
        index = self._indexes[column]
        present = values.astype(object)
        present = present.where(present.notna(), None)
        codes = index.get_indexer(present.to_numpy(dtype=object))
        if (codes < 0).any():  # a value the dictionary lacks would be a broken contract
            raise RuntimeError(f"Column {column!r}: a counted value is not in its dictionary")
        return codes.astype(np.int64)

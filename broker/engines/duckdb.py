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

import itertools
import tempfile
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from broker.datasets import CSV, DatasetError, ReadLimits, detect_format
from broker.datasets.csv_reader import BOM, HEAD_BYTES, csv_header
from broker.engines.base import IDENTICAL_ROWS, PERSON_KEY, CountTable, RecodePlan, dictionary_of
from broker.roles import require_columns

_NAMES = itertools.count()  # unique names for the tables an engine creates on its connection
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
        enums: dict[str, str] | None = None,
    ):
        self._con = connection
        self._table = table
        self._names = list(columns)
        self._person_key = person_key
        self._keep = keep  # the temporary folder, removed when the engine is collected
        self._dictionaries: dict[str, pd.Series] = {}
        self._dictionary_tables: dict[str, str] = {}
        # Text columns stored as DuckDB ENUMs: grouped as small integers, coded by enum_code();
        # a missing value, which an ENUM cannot hold, gets the code after every value.
        self._enums = dict(enums or {})
        self._rows, self._with_missing = self._scan(list(self._enums))

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
        con = duckdb.connect()  # in memory, spilling to temp_directory beyond the limit
        try:
            con.sql(f"SET memory_limit = {_text(memory_limit)}")
        except duckdb.Error as error:
            con.close()
            folder.cleanup()
            message = str(error).splitlines()[0].split(": ", 1)[-1]
            raise ValueError(f"memory limit {memory_limit!r}: {message}") from None
        con.sql(f"SET temp_directory = {_text(folder.name)}")
        # Row order does not matter (a partition fingerprint compares rowids within one table),
        # and not keeping it lets DuckDB stream under a lower memory limit.
        con.sql("SET preserve_insertion_order = false")
        if frame is not None:
            con.register("source_frame", frame)
        names = ", ".join(_quote(c) for c in columns)
        key = f", {_quote(person_key)} AS {_KEY}" if person_key else ""
        try:
            con.sql(
                f"CREATE TABLE raw AS SELECT {names}{key}, hash({names}) AS {_ROW} FROM {source}"
            )
        except duckdb.Error as error:  # a malformed body: ragged rows, bad UTF-8, ...
            con.close()
            folder.cleanup()
            raise DatasetError(str(error).splitlines()[0]) from None
        if frame is not None:
            con.unregister("source_frame")
        enums = _encode_text_columns(con, "data", columns)
        return cls(con, "data", columns, person_key is not None, folder, enums)

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
        if found is None and column in self._enums:
            query = f"SELECT unnest(enum_range(NULL::{self._enums[column]})) AS v"
            values = self._con.execute(query).df()["v"]
            if column in self._with_missing:
                values = pd.concat([values, pd.Series([None])])  # the code after every value
            found = self._dictionaries[column] = dictionary_of(values)
        if found is None:
            table = self._dictionary_table(column)
            values = self._con.execute(f"SELECT v FROM {table} ORDER BY code").df()["v"]
            found = self._dictionaries[column] = dictionary_of(values)
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
        for name in kept:
            labels = plan.labels.get(name)
            if not labels:
                parts.append(f"t.{_quote(name)}")
                continue
            alias = f"__fedbroker_labels_{next(_NAMES)}"
            table = pd.DataFrame({"value": list(labels), "label": list(labels.values())})
            self._con.register(alias, table)
            joins.append(
                f"LEFT JOIN {alias} ON t.{_quote(name)} IS NOT DISTINCT FROM {alias}.value"
            )
            parts.append(f"COALESCE({alias}.label, t.{_quote(name)}) AS {_quote(name)}")
        key = f", t.{_KEY}" if self._person_key else ""
        target = f"__fedbroker_recoded_{next(_NAMES)}"
        self._con.sql(
            f"CREATE TABLE {target} AS SELECT {', '.join(parts)}{key}, t.{_ROW} "
            f"FROM {self._table} t {' '.join(joins)}"
        )
        return DuckDBEngine(self._con, target, kept, self._person_key, self._keep)

    # --- internals ------------------------------------------------------------------------------

    def _count_table(self, columns: list[str], people: bool) -> CountTable:
        rows, persons, codes = self._grouped(columns, people, coded=True)
        return CountTable.of(columns, codes, rows, persons)

    def _scan(self, columns: list[str]) -> tuple[int, set[str]]:
        """The number of rows, and which of ``columns`` hold a missing value: one scan."""
        missing = "".join(f", count(*) FILTER (WHERE {_quote(c)} IS NULL)" for c in columns)
        rows, *found = self._con.execute(f"SELECT count(*){missing} FROM {self._table}").fetchall()[
            0
        ]
        return int(rows), {column for column, n in zip(columns, found, strict=True) if n}

    def _dictionary_table(self, column: str) -> str:
        """A DuckDB table numbering the column's distinct values: codes are assigned there, so
        count tables come back as integers and values cross into Python once."""
        table = self._dictionary_tables.get(column)
        if table is None:
            require_columns(self._names, [column])
            table = f"__fedbroker_dictionary_{next(_NAMES)}"
            self._con.sql(
                f"CREATE TABLE {table} AS SELECT v, (row_number() OVER ()) - 1 AS code "
                f"FROM (SELECT DISTINCT {_quote(column)} AS v FROM {self._table})"
            )
            self._dictionary_tables[column] = table
        return table

    def _grouped(self, columns: list[str], people: bool, coded: bool = False):
        """Rows (and people) per distinct tuple of ``columns``, and with ``coded`` each tuple's
        codes. People are counted in two steps (distinct (tuple, person) pairs, then pairs per
        tuple), which DuckDB does faster than ``count(DISTINCT ...)`` over many groups."""
        require_columns(self._names, columns)
        aliases = [f"__fedbroker_c{i}" for i in range(len(columns))]
        names = "".join(f"{_quote(c)} AS {a}, " for c, a in zip(columns, aliases, strict=True))
        outer = "".join(f"{a}, " for a in aliases)
        if people:
            query = self._people_query(names, outer, aliases)
        else:
            query = f"SELECT {names}count(*) AS __fedbroker_n FROM {self._table} GROUP BY ALL"
        if coded and columns:
            joins, codes = [], []
            for position, (column, alias) in enumerate(zip(columns, aliases, strict=True)):
                if column in self._enums:
                    size = len(self.dictionary(column))
                    codes.append(
                        f"coalesce(enum_code(g.{alias})::BIGINT, {size - 1}) AS "
                        f"__fedbroker_k{position}"
                    )
                    continue
                table, d = self._dictionary_table(column), f"d{position}"
                joins.append(f"JOIN {table} {d} ON g.{alias} IS NOT DISTINCT FROM {d}.v")
                codes.append(f"{d}.code AS __fedbroker_k{position}")
            counted = ", g.__fedbroker_p" if people else ""
            query = (
                f"SELECT {', '.join(codes)}, g.__fedbroker_n{counted} FROM ({query}) g "
                + " ".join(joins)
            )
        result = self._con.execute(query).fetchnumpy()
        rows = np.asarray(result["__fedbroker_n"], dtype=np.int64)
        persons = np.asarray(result["__fedbroker_p"], dtype=np.int64) if people else None
        codes = [
            np.asarray(result[f"__fedbroker_k{i}"], dtype=np.int64)
            for i in range(len(columns) if coded else 0)
        ]
        return rows, persons, codes

    def _people_query(self, names: str, outer: str, aliases: list[str]) -> str:
        by_row = (
            f"SELECT {outer}sum(n)::BIGINT AS __fedbroker_n, count(*) AS __fedbroker_p FROM "
            f"(SELECT {names}{_ROW}, count(*) AS n FROM {self._table} GROUP BY ALL) GROUP BY ALL"
        )
        if not self._person_key:
            return by_row
        by_key = (
            f"SELECT {outer}count(*) AS __fedbroker_q FROM "
            f"(SELECT {names}{_KEY} FROM {self._table} GROUP BY ALL) GROUP BY ALL"
        )
        on = " AND ".join(f"r.{a} IS NOT DISTINCT FROM k.{a}" for a in aliases) or "true"
        kept = "".join(f"r.{a}, " for a in aliases)
        return (
            f"SELECT {kept}r.__fedbroker_n, least(r.__fedbroker_p, k.__fedbroker_q) AS "
            f"__fedbroker_p FROM ({by_row}) r JOIN ({by_key}) k ON {on}"
        )


def _encode_text_columns(con, table: str, columns: Sequence[str]) -> dict[str, str]:
    """Store each text column of ``raw`` as an ENUM of its distinct values in ``table``: DuckDB
    then groups small integers instead of strings, and a value's code is its enum position."""
    kinds = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE raw)").fetchall())
    enums, selected = {}, []
    for name in [*columns, *(c for c in kinds if c not in columns)]:
        if name in columns and kinds[name] == "VARCHAR":
            enum = f"__fedbroker_enum_{next(_NAMES)}"
            con.sql(
                f"CREATE TYPE {enum} AS ENUM (SELECT DISTINCT {_quote(name)} FROM raw "
                f"WHERE {_quote(name)} IS NOT NULL)"
            )
            enums[name] = enum
            selected.append(f"CAST({_quote(name)} AS {enum}) AS {_quote(name)}")
        else:
            selected.append(_quote(name))
    con.sql(f"CREATE TABLE {table} AS SELECT {', '.join(selected)} FROM raw")
    con.sql("DROP TABLE raw")
    return enums


# Output formats :func:`write` knows, by their name in broker.datasets.
_COPY_FORMATS = {"csv": "FORMAT csv, HEADER true, DELIMITER ','", "parquet": "FORMAT parquet"}


def write(engine: DuckDBEngine, path: str | Path, fmt: str, shuffle: bool = True) -> None:
    """Write the table ``engine`` holds (its columns, in order) to ``path`` as ``fmt`` ("csv",
    comma-delimited with a header, or "parquet"), by DuckDB's ``COPY``: the rows stream from
    its table to the file, spilling to disk under the memory limit, never through Python.

    ``shuffle`` writes them in a fresh random order (an out-of-core sort on ``random()``), so
    that two releases of one table cannot be lined up by position. A file it cannot write is
    an ``OSError``.
    """
    if fmt not in _COPY_FORMATS:
        raise ValueError(f"The duckdb engine writes {sorted(_COPY_FORMATS)}, not {fmt!r}")
    columns = ", ".join(_quote(name) for name in engine.columns)
    order = " ORDER BY random()" if shuffle else ""
    try:
        engine._con.sql(
            f"COPY (SELECT {columns} FROM {engine._table}{order}) TO {_text(str(path))} "
            f"({_COPY_FORMATS[fmt]})"
        )
    except duckdb.IOException as error:  # a folder that does not exist, no permission, ...
        raise OSError(str(error).splitlines()[0]) from None

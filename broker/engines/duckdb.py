"""The DuckDB engine: count tables of a file larger than memory, counted out of core.

A report announces its column sets (:class:`broker.engines.base.PlansCounts`) and they are
counted from the file in one pass (:class:`_Pass`): no copy of the rows, only the distinct
tuples, written to a Parquet file in a temporary folder and numbered there by each column's
dictionary. Whatever no plan counted (the combination search, partitions, recoding) reads a copy
of the rows made on first need: a DuckDB table (spilling under the memory limit) with a 64-bit
hash of each whole row beside the columns. Identical rows are one person, by that hash: two
different rows with the same hash would count as one person, fewer people, never more, so a
collision can only make a decision stricter. Memory follows the number of distinct tuples, not
the size of the file.

CSV is read as the canonical reader reads it (:mod:`broker.datasets.csv_reader`): every value is
text as written, an empty field is the empty string, never missing. DuckDB is part of every
install; only this module imports it.

A full disk, where the engine spills or writes, is the ``OSError`` it is (``ENOSPC``), never a
malformed dataset or too little memory: the broker answers it 507, to be tried again.
"""

from __future__ import annotations

import errno
import itertools
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from broker.datasets import CSV, DatasetError, DatasetTooLarge, ReadLimits, detect_format
from broker.datasets.csv_reader import FILE_HEAD_BYTES, csv_file_header
from broker.engines.base import (
    IDENTICAL_ROWS,
    PERSON_KEY,
    WORST_CASE,
    CountTable,
    RecentTables,
    RecodePlan,
    dictionary_of,
    mixed_radix_strides,
)
from broker.engines.people import (
    RareTuples,
    components,
    counted_with,
    key_codes,
    rare_tuples,
)
from broker.engines.recoded import Recoded
from broker.roles import require_columns

_NAMES = itertools.count()  # unique names for the tables an engine creates on its connection
_ROW = "__fedbroker_row"
_KEY = "__fedbroker_key"
_UNION = "__fedbroker_union"  # the hash of a row's tuple of the planned union
DEFAULT_MEMORY_LIMIT = "1GB"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class OutOfMemory(DatasetTooLarge):
    """DuckDB needed more memory than its limit for a query over the table."""


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_ERRNO = re.compile(r'"errno"\s*:\s*"?(\d+)')


def disk_full(error: BaseException) -> OSError | None:
    """The ``OSError`` a DuckDB error stands for when it is a full disk, else None: a file it
    could not write (an IO error carrying ``ENOSPC``, ``EDQUOT`` or ``EFBIG``), or blocks it
    could not spill (its temporary folder may grow to the free space of its disk, which the
    broker never bounds lower, so a spill that finds no room is a full disk)."""
    message = str(error)
    first = message.splitlines()[0] if message else type(error).__name__
    if isinstance(error, duckdb.IOException):
        found = _ERRNO.search(message)
        number = int(found.group(1)) if found else None
        if number is None:  # an error of the kind DuckDB words without its number
            texts = {os.strerror(n): n for n in _DISK_FULL}
            number = next((n for text, n in texts.items() if text in message), None)
        if number in _DISK_FULL:
            return OSError(number, f"{os.strerror(number)}: {_unwrapped(first)}")
    if isinstance(error, duckdb.OutOfMemoryException) and "offload" in message:
        return OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: {first}")
    return None


def _unwrapped(line: str) -> str:
    """DuckDB's message inside the JSON it wraps some IO errors in."""
    start = line.find("{")
    try:
        return json.loads(line[start:])["exception_message"]
    except (ValueError, KeyError, TypeError):
        return line


class _Connection:
    """A DuckDB connection whose queries report a full disk as an ``OSError``
    (:func:`disk_full`): every query of the engine runs through it."""

    def __init__(self, connection: duckdb.DuckDBPyConnection):
        self._connection = connection

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        try:
            return self._connection.sql(query)
        except duckdb.Error as error:
            raise disk_full(error) or error from None

    def execute(self, query: str) -> duckdb.DuckDBPyConnection:
        try:
            return self._connection.execute(query)
        except duckdb.Error as error:
            raise disk_full(error) or error from None

    def register(self, name: str, frame: pd.DataFrame) -> None:
        self._connection.register(name, frame)

    def close(self) -> None:
        self._connection.close()


@dataclass(frozen=True)
class ValueProfile:
    """What an out-of-core table's values cost once they reach Python, counted in SQL."""

    longest: dict[str, int]  # characters of each column's longest value
    distinct: dict[str, int]  # each column's number of distinct values


class DuckDBEngine:
    """A table DuckDB reads from its source; see the module docstring."""

    def __init__(
        self,
        connection: _Connection,
        source: str,
        columns: Sequence[str],
        person_key: bool,
        keep: object = None,
        table: str | None = None,
        max_tuples: int | None = None,
        labelled: bool = False,
    ):
        self._con = connection
        self._source = source  # SQL of the rows: the columns, the row hash and the person key
        self._names = list(columns)
        self._person_key = person_key
        self._keep = keep  # the temporary folder, removed when the engine is collected
        self._table = table  # the rows copied into DuckDB, made on the first unplanned question
        self._passes: list[_Pass] = []
        self._max_tuples = max_tuples
        self._rows: int | None = None
        self._dictionaries: dict[str, pd.Series] = {}
        self._dictionary_tables: dict[str, str] = {}
        self._recent = RecentTables()
        # Text columns of the copy stored as DuckDB ENUMs: grouped as small integers, coded by
        # enum_code() (a missing value, which an ENUM cannot hold, has the dictionary's last code).
        self._enums: dict[str, str] = {}
        self._rare: RareTuples | None = None  # told by assume_worst
        # With a person key: whether the source's key column already holds each row's person
        # (:meth:`_label_people`), and the column sets planned with people (counted again then).
        self._fixed = labelled  # a recoded copy: its people are the table as sent's
        self._labelled = labelled
        self._written_source = source  # the source with the key as written
        self._planned_people: list[list[str]] = []

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        person_key: str | None = None,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
    ) -> DuckDBEngine:
        """A dataset file, read out of core; its header is checked as the canonical reader
        checks it (:class:`~broker.datasets.DatasetError` otherwise), its body when it is read.
        CSV only for now."""
        path = Path(path)
        try:
            with path.open("rb") as file:
                head = file.read(FILE_HEAD_BYTES)
        except OSError as error:
            raise DatasetError(f"{path}: {error.strerror or error}") from None
        if detect_format(path.name, head[:16]) != CSV:
            raise DatasetError(f"{path}: the duckdb engine reads CSV files; use the pandas engine")
        delimiter, header = csv_file_header(head, str(path), ReadLimits())
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
        max_tuples: int | None = None,
    ) -> DuckDBEngine:
        """A CSV file whose ``header`` the canonical reader has checked; ``columns`` are the
        ones measured (default: all but the person key); ``max_tuples``: see :meth:`plan`."""
        types = ", ".join(f"{_text(name)}: 'VARCHAR'" for name in header)
        not_null = ", ".join(_text(name) for name in header)
        if columns is None:
            columns = [name for name in header if name != person_key]
        reader = (
            f"read_csv({_text(str(path))}, auto_detect=false, header=true, "
            f"delim={_text(delimiter)}, quote='\"', escape='\"', columns={{{types}}}, "
            f"force_not_null=[{not_null}])"
        )
        return cls._open(reader, columns, person_key, memory_limit, max_tuples=max_tuples)

    @classmethod
    def from_parquet(
        cls,
        path: str | Path,
        columns: Sequence[str],
        person_key: str | None = None,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
    ) -> DuckDBEngine:
        return cls._open(f"read_parquet({_text(str(path))})", columns, person_key, memory_limit)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, person_key: str | None = None) -> DuckDBEngine:
        """A frame whose columns each hold one type (DuckDB columns are typed): tests, and
        tables already in memory."""
        columns = [c for c in frame.columns if c != person_key]
        return cls._open(None, columns, person_key, DEFAULT_MEMORY_LIMIT, frame)

    @classmethod
    def _open(
        cls, reader, columns, person_key, memory_limit, frame=None, max_tuples=None
    ) -> DuckDBEngine:
        folder = tempfile.TemporaryDirectory(prefix="fedbroker-duckdb-")
        con = _Connection(duckdb.connect())  # in memory, spilling to temp_directory past the limit
        try:
            con.sql(f"SET memory_limit = {_text(memory_limit)}")
        except duckdb.Error as error:
            con.close()
            folder.cleanup()
            message = str(error).splitlines()[0].split(": ", 1)[-1]
            raise ValueError(f"memory limit {memory_limit!r}: {message}") from None
        con.sql(f"SET temp_directory = {_text(folder.name)}")
        # Give freed memory back after each query (by default DuckDB's allocator keeps up to
        # 128 MiB, and 512 MiB of a bulk free): the broker's own arrays come next.
        con.sql("SET allocator_flush_threshold = '16MB'")
        con.sql("SET allocator_bulk_deallocation_flush_threshold = '16MB'")
        # Row order does not matter (counts do not see it, and what leaves is shuffled), and not
        # keeping it lets DuckDB stream under a lower memory limit.
        con.sql("SET preserve_insertion_order = false")
        if frame is not None:
            reader = f"__fedbroker_frame_{next(_NAMES)}"
            con.register(reader, frame)  # for the engine's life: the source is read again
        names = ", ".join(_quote(c) for c in columns)
        key = f", {_quote(person_key)} AS {_KEY}" if person_key else ""
        source = f"(SELECT {names}{key}, hash({names}) AS {_ROW} FROM {reader})"
        return cls(con, source, columns, person_key is not None, folder, max_tuples=max_tuples)

    # --- the Engine protocol --------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        return list(self._names)

    @property
    def rows(self) -> int:
        if self._rows is None:
            query = f"SELECT count(*) FROM {self._loaded()}"
            self._rows = int(self._con.execute(query).fetchall()[0][0])
        return self._rows

    @property
    def people_counted_by(self) -> str:
        if self._person_key:
            return PERSON_KEY
        return IDENTICAL_ROWS if self._rare is None or self._rare.empty else WORST_CASE

    def assume_worst(self, quasi_identifiers: Sequence[str]) -> None:
        """The worst case is read off the count tables (:func:`counted_with`): nothing is
        counted again. With a person key, which only merges, each row's person is labelled
        with it (:meth:`_label_people`)."""
        if self._fixed:
            return
        self._rare = None  # the tuples are counted as they are
        self._rare = rare_tuples(self, quasi_identifiers)
        if self._person_key:
            self._labelled = False  # labelled again, with the rare tuples
            self._label_people()

    def _label_people(self) -> None:
        """With a person key, the key column of the source becomes each row's person: the
        rows sharing a folded key (:func:`broker.engines.people.key_codes`), a row hash or a
        rare tuple, joined (:func:`broker.engines.people.components`), computed on the
        distinct (key, row hash) pairs; what was counted with people is counted again."""
        if not self._person_key or self._labelled:
            return
        self._labelled = True
        rare = self._rare if self._rare is not None and not self._rare.empty else None
        codes, joins = [], []
        for position, column in enumerate(rare.columns if rare else ()):
            code, join = self._code(column, f"t.{_quote(column)}", typed=False)
            codes.append(f", any_value({code}) AS c{position}")
            joins.append(join)
        query = (
            f"SELECT t.{_KEY} AS k, t.{_ROW} AS r{''.join(codes)} FROM {self._written_source} t "
            f"{' '.join(joins)} GROUP BY t.{_KEY}, t.{_ROW}"
        )
        try:
            pairs = self._con.execute(query).df()
        except duckdb.Error as error:
            raise DatasetError(str(error).splitlines()[0]) from None
        worst = pd.factorize(pairs["r"].to_numpy())[0].astype(np.int64)
        if rare is not None:
            at = CountTable.of(
                rare.columns,
                [pairs[f"c{i}"].to_numpy(dtype=np.int64) for i in range(len(rare.columns))],
                np.ones(len(pairs), dtype=np.int64),
            )
            group = rare.group_of(at)
            worst = np.where(group >= 0, len(pairs) + group, worst)
        person = components(worst, key_codes(pairs["k"]))
        alias = f"__fedbroker_people_{next(_NAMES)}"
        mapping = pd.DataFrame({"k": pairs["k"], "p": person}).drop_duplicates("k")
        self._con.register(alias, mapping)  # one person a key as written
        self._source = (
            f"(SELECT s.* EXCLUDE ({_KEY}), m.p AS {_KEY} FROM {self._written_source} s "
            f"JOIN {alias} m ON s.{_KEY} IS NOT DISTINCT FROM m.k)"
        )
        # What was counted with the key as written is counted again, with the people.
        self._passes = [counted for counted in self._passes if not counted.people]
        self._recent = RecentTables()
        if self._table is not None:
            self._con.sql(f"DROP TABLE {self._table}")
            self._table, self._enums = None, {}
        if self._planned_people:
            self.plan(self._planned_people, people=True)

    @property
    def rare(self) -> RareTuples | None:
        return self._rare

    def plan(self, column_sets: Sequence[Sequence[str]], people: bool = True) -> None:
        """Count ``column_sets`` in one pass over the source (see :class:`_Pass`), those no
        earlier plan counted; a table already copied answers on its own.

        A planned set of several columns with more distinct tuples than ``max_tuples`` is a
        :class:`~broker.datasets.DatasetTooLarge`, found before any of them reaches Python."""
        if self._table is not None:
            return
        if people:
            self._planned_people += [list(c) for c in column_sets]
        sets = [list(c) for c in column_sets if self._pass_answering(list(c), people) is None]
        if sets or (people and not any(counted.people for counted in self._passes)):
            self._count_within_memory(sets, people)

    def _count_within_memory(self, sets: list[list[str]], people: bool) -> None:
        """One pass; if DuckDB cannot hold its hash tables together under the memory limit
        (they spill, but not every part of every one can), two passes of half the sets each,
        the columns alone first (and so on, down to one set a pass)."""
        try:
            counted = _Pass(self, sets, people)
        except OutOfMemory:
            if len(sets) < 2:
                raise
            ordered = sorted(sets, key=len)
            half = len(ordered) // 2
            self._count_within_memory(ordered[:half], False)
            self._count_within_memory(ordered[half:], people)
            return
        self._passes.append(counted)
        self._rows = counted.rows

    def _pass_answering(self, columns: list[str], people: bool = False) -> _Pass | None:
        """The earliest pass that counted ``columns`` (and, if asked, their people)."""
        return next(
            (c for c in self._passes if c.answers(columns) and (c.people or not people)), None
        )

    def dictionary(self, column: str) -> pd.Series:
        found = self._dictionaries.get(column)
        if found is None:
            table = self._dictionary_table(column)
            values = self._con.execute(f"SELECT v FROM {table} ORDER BY code").df()["v"]
            found = self._dictionaries[column] = dictionary_of(values)
        return found

    def counts(
        self, column_sets: Sequence[Sequence[str]], people: bool = False
    ) -> list[CountTable]:
        if people:
            self._label_people()
        found = [self._count_table(list(columns), people) for columns in column_sets]
        if not people or self._person_key:  # a key's people hold the rare tuples' merges
            return found
        return counted_with(self, self._rare, column_sets, found)

    def tuple_sizes(self, column_sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        found = []
        for columns in map(list, column_sets):
            counted = self._pass_answering(columns)
            if counted is not None:
                found.append(counted.sizes(columns))
            else:
                found.append(self._grouped(columns, False)[0])
        return found

    def duplicate_rows(self) -> int:
        counted = next((c for c in self._passes if c.people), None)
        if counted is not None:
            return counted.duplicate_rows
        query = f"SELECT count(*) - count(DISTINCT {_ROW}) FROM {self._loaded()}"
        return int(self._con.execute(query).fetchall()[0][0])

    def head(self, columns: Sequence[str], rows: int) -> pd.DataFrame:
        """The first ``rows`` rows as the source holds them, in order (DuckDB keeps the
        insertion order of a file it reads; a limit stops the read early)."""
        require_columns(self._names, columns)
        selected = ", ".join(_quote(c) for c in columns)
        try:
            return self._con.execute(
                f"SELECT {selected} FROM {self._source} LIMIT {int(rows)}"
            ).df()
        except duckdb.Error as error:
            raise DatasetError(str(error).splitlines()[0]) from None

    def row_sketch(
        self, columns: Sequence[str], cell_hash: Callable[[str], str], size: int
    ) -> tuple[np.ndarray, int]:
        """The ``size`` smallest distinct row fingerprints of ``columns`` and their number,
        counted where the rows are (a row's fingerprint: its cells' ``cell_hash`` SQL added
        modulo 2**64; :mod:`broker.privacy.identity`). The distinct fingerprints spill to disk
        under the memory limit; only ``size`` of them reach Python."""
        require_columns(self._names, columns)
        cells = " + ".join(f"CAST({cell_hash(_quote(c))} AS HUGEINT)" for c in columns)
        fingerprint = f"CAST(({cells}) % 18446744073709551616 AS UBIGINT)"
        table = f"__fedbroker_fingerprints_{next(_NAMES)}"
        source = self._table or self._source
        self._read(f"CREATE TEMP TABLE {table} AS SELECT DISTINCT {fingerprint} AS f FROM {source}")
        try:
            distinct = self._scalar(f"SELECT count(*) FROM {table}")
            smallest = self._con.execute(
                f"SELECT f FROM {table} ORDER BY f LIMIT {int(size)}"
            ).fetchnumpy()["f"]
        finally:
            self._con.sql(f"DROP TABLE {table}")
        return np.asarray(smallest, dtype=np.uint64), distinct

    def _scalar(self, query: str) -> int:
        return int(self._con.execute(query).fetchall()[0][0])

    def recode(self, plan: RecodePlan) -> Recoded | DuckDBEngine:
        """The recoded table, seen through this engine's counts (:class:`Recoded`: no row is
        read again or copied, and :func:`write` applies the plan as it streams the rows out);
        with a person key, whose rows may merge into one tuple, the rows recoded into a table
        of their own."""
        if not self._person_key:
            return Recoded(self, plan)
        self._label_people()
        selected, joins = self._relabelled(plan)
        target = f"__fedbroker_recoded_{next(_NAMES)}"
        self._con.sql(
            f"CREATE TABLE {target} AS SELECT {selected}, t.{_KEY}, t.{_ROW} "
            f"FROM {self._loaded()} t {joins}"
        )
        kept = [c for c in self._names if c not in plan.drop]
        return DuckDBEngine(
            self._con, target, kept, self._person_key, self._keep, target, labelled=True
        )

    def profile(self) -> ValueProfile:
        """Each column's longest value (characters) and number of distinct values, exact, from
        the first look: one pass counting each column alone (no people), which a report would
        count anyway, so what bounds an upload's cost is checked before any value reaches
        Python. A malformed body (ragged rows, bad UTF-8) is a
        :class:`~broker.datasets.DatasetError` here already."""
        self.plan([[c] for c in self._names], people=False)
        figures = " UNION ALL ".join(
            f"SELECT {position} AS position, coalesce(max(length(CAST(v AS VARCHAR))), 0) AS "
            f"longest, count(*) AS distinct_values FROM {self._dictionary_table(column)}"
            for position, column in enumerate(self._names)
        )
        found = self._con.execute(f"SELECT * FROM ({figures}) ORDER BY position").fetchall()
        return ValueProfile(
            {name: int(row[1]) for name, row in zip(self._names, found, strict=True)},
            {name: int(row[2]) for name, row in zip(self._names, found, strict=True)},
        )

    # --- internals ------------------------------------------------------------------------------

    def _read(self, query: str) -> None:
        """Run a query that reads the source: a malformed body (ragged rows, bad UTF-8, ...)
        is a :class:`~broker.datasets.DatasetError`."""
        try:
            self._con.sql(query)
        except duckdb.OutOfMemoryException as error:
            raise OutOfMemory(
                f"{str(error).splitlines()[0]}: the table needs more than the out-of-core "
                f"engine's memory limit ({self._memory_limit()}); raise it "
                "(BROKER_DUCKDB_MEMORY_LIMIT, or --memory-limit)"
            ) from None
        except duckdb.Error as error:
            raise DatasetError(str(error).splitlines()[0]) from None

    def _relabelled(self, plan: RecodePlan) -> tuple[str, str]:
        """SQL selecting the columns ``plan`` keeps from rows ``t``, each value replaced by its
        label where the plan names one, and the joins that need (one label table a column)."""
        selected, joins = [], []
        for name in self._names:
            if name in plan.drop:
                continue
            labels = plan.labels.get(name)
            if not labels:
                selected.append(f"t.{_quote(name)}")
                continue
            alias = f"__fedbroker_labels_{next(_NAMES)}"
            table = pd.DataFrame({"value": list(labels), "label": list(labels.values())})
            self._con.register(alias, table)
            joins.append(
                f"LEFT JOIN {alias} ON t.{_quote(name)} IS NOT DISTINCT FROM {alias}.value"
            )
            selected.append(f"COALESCE({alias}.label, t.{_quote(name)}) AS {_quote(name)}")
        return ", ".join(selected), " ".join(joins)

    def _memory_limit(self) -> str:
        return str(self._con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])

    def _loaded(self) -> str:
        """The rows copied into a DuckDB table (text columns as ENUMs), for what no plan
        counted: the combination search, partitions, recoding."""
        if self._table is None:
            raw = f"__fedbroker_raw_{next(_NAMES)}"
            self._read(f"CREATE TABLE {raw} AS SELECT * FROM {self._source}")
            self._table = raw  # where the dictionaries no plan counted are read
            kinds = dict(
                self._con.execute(
                    f"SELECT column_name, column_type FROM (DESCRIBE {raw})"
                ).fetchall()
            )
            selected = []
            for name in kinds:
                if name in self._names and kinds[name] == "VARCHAR":
                    enum = f"__fedbroker_enum_{next(_NAMES)}"
                    self._con.sql(
                        f"CREATE TYPE {enum} AS ENUM (SELECT v FROM "
                        f"{self._dictionary_table(name)} WHERE v IS NOT NULL ORDER BY code)"
                    )
                    self._enums[name] = enum
                    selected.append(f"CAST({_quote(name)} AS {enum}) AS {_quote(name)}")
                else:
                    selected.append(_quote(name))
            table = f"__fedbroker_data_{next(_NAMES)}"
            self._con.sql(f"CREATE TABLE {table} AS SELECT {', '.join(selected)} FROM {raw}")
            self._con.sql(f"DROP TABLE {raw}")
            self._table = table
        return self._table

    def _count_table(self, columns: list[str], people: bool) -> CountTable:
        found = self._recent.get(columns, people)
        if found is not None:
            return found
        counted = self._pass_answering(columns, people)
        if counted is not None:
            return self._recent.keep(counted.count_table(columns, people))
        rows, persons, codes = self._grouped(columns, people, coded=True)
        return self._recent.keep(CountTable.of(columns, codes, rows, persons))

    def _dictionary_table(self, column: str) -> str:
        """A DuckDB table numbering the column's distinct values (``v``, ``code``, rows ``n``),
        a missing value last: codes are assigned there, so count tables come back as integers
        and values cross into Python once. Counted by the plan's pass when it counted the
        column, else read from the copy."""
        table = self._dictionary_tables.get(column)
        if table is None:
            require_columns(self._names, [column])
            counted = next(
                (found for c in self._passes if (found := c.values(column)) is not None), None
            )
            if counted is None:
                counted = (
                    f"SELECT {_quote(column)} AS v, count(*) AS n FROM {self._loaded()} "
                    "GROUP BY ALL"
                )
            table = f"__fedbroker_dictionary_{next(_NAMES)}"
            self._con.sql(
                f"CREATE TABLE {table} AS SELECT v, n, (row_number() OVER "
                f"(ORDER BY v IS NULL)) - 1 AS code FROM ({counted})"
            )
            self._dictionary_tables[column] = table
        return table

    def _width(self, column: str) -> int:
        """The number of the column's codes."""
        if column in self._dictionaries:
            return len(self._dictionaries[column])
        table = self._dictionary_table(column)
        return int(self._con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

    def _code(self, column: str, value: str, typed: bool = True) -> tuple[str, str]:
        """SQL giving the code of ``value`` (a value of ``column``, of the copy's type when
        ``typed``, else as read), and the join it needs."""
        table = self._dictionary_table(column)
        if typed and column in self._enums:
            size = len(self.dictionary(column))
            return f"coalesce(enum_code({value})::BIGINT, {size - 1})", ""
        alias = f"__fedbroker_d{next(_NAMES)}"
        return f"{alias}.code", f"JOIN {table} {alias} ON {value} IS NOT DISTINCT FROM {alias}.v"

    def _grouped(self, columns: list[str], people: bool, coded: bool = False):
        """Rows (and people) per distinct tuple of ``columns`` in the copy, and with ``coded``
        each tuple's codes. People are counted in two steps (distinct (tuple, person) pairs,
        then pairs per tuple), which DuckDB does faster than ``count(DISTINCT ...)`` over many
        groups."""
        require_columns(self._names, columns)
        table = self._loaded()
        aliases = [f"__fedbroker_c{i}" for i in range(len(columns))]
        names = "".join(f"{_quote(c)} AS {a}, " for c, a in zip(columns, aliases, strict=True))
        outer = "".join(f"{a}, " for a in aliases)
        if people:
            query = self._people_query(table, names, outer, aliases)
        else:
            query = f"SELECT {names}count(*) AS __fedbroker_n FROM {table} GROUP BY ALL"
        if coded and columns:
            codes, joins = [], []
            for position, (column, alias) in enumerate(zip(columns, aliases, strict=True)):
                code, join = self._code(column, f"g.{alias}")
                codes.append(f"{code} AS __fedbroker_k{position}")
                joins.append(join)
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

    def _people_query(self, table: str, names: str, outer: str, aliases: list[str]) -> str:
        by_row = (
            f"SELECT {outer}sum(n)::BIGINT AS __fedbroker_n, count(*) AS __fedbroker_p FROM "
            f"(SELECT {names}{_ROW}, count(*) AS n FROM {table} GROUP BY ALL) GROUP BY ALL"
        )
        if not self._person_key:
            return by_row
        by_key = (
            f"SELECT {outer}count(*) AS __fedbroker_q FROM "
            f"(SELECT {names}{_KEY} FROM {table} GROUP BY ALL) GROUP BY ALL"
        )
        on = " AND ".join(f"r.{a} IS NOT DISTINCT FROM k.{a}" for a in aliases) or "true"
        kept = "".join(f"r.{a}, " for a in aliases)
        return (
            f"SELECT {kept}r.__fedbroker_n, least(r.__fedbroker_p, k.__fedbroker_q) AS "
            f"__fedbroker_p FROM ({by_row}) r JOIN ({by_key}) k ON {on}"
        )


class _Pass:
    """Planned column sets counted in one pass over the source: DuckDB's ``GROUPING SETS``
    feed one scan of the file into one hash table per set, and keep only the counts.

    The sets of several columns are counted as their union (the report's all lie within its
    quasi-identifiers and sensitive attributes, whose tuples it needs anyway), each then summed
    from the union's counts; a column in no such set is counted alone.

    People, in the same pass: the row hashes held by more than one row, each with the hash of
    its union tuple (identical rows share it). A tuple's people are its rows less those
    repeats, which is the copy's count of distinct (tuple, row hash) pairs without the copy.
    With a person key, or a set outside the union, or (64-bit odds) two union tuples with one
    hash, the rows whose hash or key repeats are read again, once, and the repeats counted
    among them: none of this when no row repeats.
    """

    def __init__(self, engine: DuckDBEngine, column_sets: list[list[str]], people: bool):
        for columns in column_sets:
            require_columns(engine.columns, columns)
        self._engine = engine
        self._con = engine._con
        self.people = people
        several = {c for columns in column_sets if len(columns) > 1 for c in columns}
        self.union = [c for c in engine.columns if c in several]
        counted = {c for columns in column_sets for c in columns}
        self.alone = [c for c in engine.columns if c in counted and c not in several]
        # Who repeats: the row hash (with its union tuple's hash), and the person key.
        self._identities = [[_ROW, *([_UNION] if self.union else [])]] if people else []
        self._identities += [[_KEY]] if engine._person_key and people else []
        self._grouped = [
            *map(_quote, self.union + self.alone),
            *(name for names in self._identities for name in names),
        ]
        sets = [[], *([self._grouped[: len(self.union)]] if self.union else [])]
        sets += [[_quote(c)] for c in self.alone] + self._identities
        # The counts go to a Parquet file: as a DuckDB table, one column per grouped column,
        # mostly missing, they took more memory than the pass itself.
        path = Path(engine._keep.name) / f"counted_{next(_NAMES)}.parquet"
        self._table = f"read_parquet({_text(str(path))})"
        listed = ", ".join(self._grouped)
        repeats = ", ".join(str(self._set_id(names)) for names in self._identities)
        union_hash = f", hash({', '.join(map(_quote, self.union))}) AS {_UNION}"
        unique = f" HAVING NOT (GROUPING({listed}) IN ({repeats}) AND count(*) = 1)"
        engine._read(
            f"COPY (SELECT GROUPING({listed}) AS __fedbroker_g, {listed}, count(*) AS "
            f"__fedbroker_n FROM (SELECT *{union_hash if self.union else ''} FROM "
            f"{engine._source}) GROUP BY GROUPING SETS "
            f"({', '.join('(' + ', '.join(s) + ')' for s in sets)})"
            f"{unique if repeats else ''}) TO {_text(str(path))} (FORMAT parquet)"
        )
        self.rows = self._scalar(f"SELECT __fedbroker_n FROM {self._rows_of([])}")
        self._refuse_too_many_tuples()
        self.duplicate_rows = 0
        self._repeats = 0
        self._repeated_rows = ""
        if people:
            self._repeated_rows = self._rows_of(self._identities[0])
            self.duplicate_rows = self._scalar(
                f"SELECT coalesce(sum(__fedbroker_n - 1), 0) FROM {self._repeated_rows}"
            )
            self._repeats = self._scalar(
                f"SELECT count(*) FROM {self._table} WHERE __fedbroker_g IN ({repeats})"
            )
        self._shared: str | None = None  # the rows read again, made when first needed

    def _refuse_too_many_tuples(self) -> None:
        bound = self._engine._max_tuples
        if bound is None or not self.union:
            return
        found = self._scalar(f"SELECT count(*) FROM {self._rows_of(self.union)}")
        if found > bound:
            raise DatasetTooLarge(
                f"The quasi-identifiers and sensitive attributes measured together "
                f"({', '.join(self.union)}) take {found:,} distinct combinations of values, "
                f"more than the {bound:,} this broker measures (BROKER_OUT_OF_CORE_MAX_DISTINCT): "
                "nearly every row is then unique; generalize them first"
            )

    def answers(self, columns: list[str]) -> bool:
        """Whether this pass counted ``columns``: a column alone once any pass counted it (its
        dictionary table holds its rows by code), several within the union."""
        if len(columns) == 1:
            return any(columns[0] in c.union or columns[0] in c.alone for c in self._passes)
        return set(columns) <= set(self.union)

    @property
    def _passes(self) -> list[_Pass]:
        return [*self._engine._passes, self]

    def values(self, column: str) -> str | None:
        """SQL of the column's distinct values ``v`` and their rows ``n``, or None."""
        if column in self.alone:
            return (
                f"SELECT {_quote(column)} AS v, __fedbroker_n AS n FROM {self._rows_of([column])}"
            )
        if column in self.union:
            return (
                f"SELECT {_quote(column)} AS v, sum(__fedbroker_n)::BIGINT AS n "
                f"FROM {self._rows_of(self.union)} GROUP BY ALL"
            )
        return None

    def sizes(self, columns: list[str]) -> np.ndarray:
        if len(columns) == 1:  # in code order, as its count table gives them
            query = f"SELECT n FROM {self._engine._dictionary_table(columns[0])} ORDER BY code"
        else:
            query = f"SELECT __fedbroker_n AS n FROM ({self._tuples(columns)})"
        return np.asarray(self._con.execute(query).fetchnumpy()["n"], dtype=np.int64)

    def count_table(self, columns: list[str], people: bool) -> CountTable:
        if len(columns) == 1 and (not people or not self._repeats):
            # A column alone, near-unique or not: its rows by code, read off its dictionary.
            rows = self.sizes(columns)
            codes = np.arange(rows.size, dtype=np.int64)
            return CountTable.of(columns, [codes], rows, rows.copy() if people else None)
        keys = [f"__fedbroker_k{i}" for i in range(len(columns))]
        selected, joins = ["g.__fedbroker_n", *(f"g.{k}" for k in keys)], []
        if people and not self._repeats:
            selected.append("g.__fedbroker_n AS p")
        elif people and not self._engine._person_key and self._repeats_known(columns):
            selected.append("g.__fedbroker_n - g.__fedbroker_x AS p")
        elif people:
            shared = self._shared_rows()
            kept = [f"g.__fedbroker_n - coalesce({alias}.x, 0)" for alias in ("r", "q")]
            fewer = f"least({', '.join(kept)})" if self._engine._person_key else kept[0]
            selected.append(f"{fewer} AS p")
            joins.append(self._repeated(shared, columns, _ROW, "r"))
            if self._engine._person_key:
                joins.append(self._repeated(shared, columns, _KEY, "q"))
        widths = [self._engine._width(c) for c in columns]
        packed = len(columns) > 1 and math.prod(widths) < 2**62
        if packed:  # one key a tuple instead of one code a column: millions of tuples come back
            strides = mixed_radix_strides(widths)
            key = " + ".join(f"g.{k} * {s}" for k, s in zip(keys, strides, strict=True))
            selected[1 : 1 + len(keys)] = [f"{key} AS __fedbroker_key"]
        query = f"SELECT {', '.join(selected)} FROM ({self._tuples(columns)}) g {' '.join(joins)}"
        if packed:
            query += " ORDER BY __fedbroker_key"
        result = self._con.execute(query).fetchnumpy()
        rows = np.asarray(result["__fedbroker_n"], dtype=np.int64)
        persons = np.asarray(result["p"], dtype=np.int64) if people else None
        if packed:
            found = np.asarray(result["__fedbroker_key"], dtype=np.int64)
            return CountTable.of_keys(columns, widths, found, rows, persons)
        codes = [np.asarray(result[k], dtype=np.int64) for k in keys]
        return CountTable.of(columns, codes, rows, persons)

    # --- internals ------------------------------------------------------------------------------

    def _set_id(self, grouped: list[str]) -> int:
        """The GROUPING() id of the set grouping ``grouped`` (columns quoted, or identities)."""
        width = len(self._grouped)
        return sum(1 << (width - 1 - i) for i, g in enumerate(self._grouped) if g not in grouped)

    def _rows_of(self, columns: list[str]) -> str:
        """The counted table's rows of one grouping set (columns unquoted, or identities)."""
        grouped = [c if c in (_ROW, _UNION, _KEY) else _quote(c) for c in columns]
        return f"(SELECT * FROM {self._table} WHERE __fedbroker_g = {self._set_id(grouped)})"

    @cached_property
    def _coded_union(self) -> tuple[str, bool]:
        """The union's tuples as codes (``k0``... in union order) with their rows and their
        repeated rows ``__fedbroker_x``, found by the union hash of each repeated row; and
        whether those are known: not when two tuples share a hash (then the repeats are
        counted among the rows read again). Sets within the union are summed from it."""
        names = ", ".join(f"t.{_quote(c)}" for c in self.union)
        codes, joins = [], []
        for position, column in enumerate(self.union):
            code, join = self._engine._code(column, f"t.{_quote(column)}", typed=False)
            codes.append(f"{code}::UINTEGER AS k{position}")
            joins.append(join)
        repeats, hashed = "0", ""
        if self._repeats:
            repeats = "coalesce(r.x, 0)"
            hashed = f", hash({names}) AS {_UNION}"
            joins.append(
                f"LEFT JOIN (SELECT {_UNION}, sum(__fedbroker_n - 1) AS x FROM "
                f"{self._repeated_rows} "
                f"GROUP BY ALL) r ON hash({names}) = r.{_UNION}"
            )
        # On disk, as the pass's counts: millions of tuples would stay in the broker's memory
        # as a table, while each set within the union reads them once.
        path = Path(self._engine._keep.name) / f"union_{next(_NAMES)}.parquet"
        self._con.sql(
            f"COPY (SELECT {', '.join(codes)}, t.__fedbroker_n, {repeats} AS __fedbroker_x"
            f"{hashed} FROM {self._rows_of(self.union)} t {' '.join(joins)}) "
            f"TO {_text(str(path))} (FORMAT parquet)"
        )
        table = f"read_parquet({_text(str(path))})"
        if not self._repeats:
            return table, True
        shared = self._scalar(f"SELECT count(*) - count(DISTINCT {_UNION}) FROM {table}")
        return table, not shared

    def _repeats_known(self, columns: list[str]) -> bool:
        """Whether the repeated rows of each tuple of ``columns`` are known without reading
        rows again: the whole table's, or a union's subset's when the union hashes told them."""
        return not columns or (set(columns) <= set(self.union) and self._coded_union[1])

    def _tuples(self, columns: list[str]) -> str:
        """SQL of the tuples of ``columns`` as codes (``__fedbroker_k{i}``) with their rows
        ``__fedbroker_n`` and, where known, their repeated rows ``__fedbroker_x``."""
        if not columns:
            return (
                f"SELECT __fedbroker_n, {self.duplicate_rows} AS __fedbroker_x "
                f"FROM {self._rows_of([])}"
            )
        if len(columns) == 1 and columns[0] not in self.union:
            table = self._engine._dictionary_table(columns[0])
            return f"SELECT code AS __fedbroker_k0, n AS __fedbroker_n FROM {table}"
        codes = ", ".join(
            f"k{self.union.index(c)}::BIGINT AS __fedbroker_k{i}" for i, c in enumerate(columns)
        )
        if len(columns) == len(self.union):
            return f"SELECT {codes}, __fedbroker_n, __fedbroker_x FROM {self._coded_union[0]}"
        return (
            f"SELECT {codes}, sum(__fedbroker_n)::BIGINT AS __fedbroker_n, "
            f"sum(__fedbroker_x)::BIGINT AS __fedbroker_x FROM {self._coded_union[0]} GROUP BY ALL"
        )

    def _repeated(self, shared: str, columns: list[str], identity: str, alias: str) -> str:
        """A join giving each tuple its repeats ``x``: its rows whose identity (row hash or
        person key) another of its rows holds, counted among the ``shared`` rows."""
        names = "".join(f"{_quote(c)} AS c{i}, " for i, c in enumerate(columns))
        codes, joins = [], []
        for i, column in enumerate(columns):
            code, join = self._engine._code(column, f"s.c{i}", typed=False)
            codes.append(f"{code} AS __fedbroker_k{i}, ")
            joins.append(join)
        on = " AND ".join(
            f"g.__fedbroker_k{i} = {alias}.__fedbroker_k{i}" for i in range(len(columns))
        )
        return (
            f"LEFT JOIN (SELECT {''.join(codes)}sum(s.m - 1) AS x FROM (SELECT {names}{identity}, "
            f"count(*) AS m FROM {shared} GROUP BY ALL) s {' '.join(joins)} GROUP BY ALL) {alias} "
            f"ON {on or 'true'}"
        )

    def _shared_rows(self) -> str:
        """The rows whose hash or person key another row holds, read again from the source."""
        if self._shared is None:
            keys = (
                f" OR EXISTS (SELECT 1 FROM {self._rows_of([_KEY])} c WHERE c.{_KEY} IS NOT "
                f"DISTINCT FROM s.{_KEY})"
                if self._engine._person_key
                else ""
            )
            self._shared = f"__fedbroker_shared_{next(_NAMES)}"
            self._engine._read(
                f"CREATE TABLE {self._shared} AS SELECT * FROM {self._engine._source} s WHERE "
                f"s.{_ROW} IN (SELECT {_ROW} FROM {self._rows_of(self._identities[0])}){keys}"
            )
        return self._shared

    def _scalar(self, query: str) -> int:
        return int(self._con.execute(query).fetchall()[0][0])


# Output formats :func:`write` knows, by their name in broker.datasets.
_COPY_FORMATS = {"csv": "FORMAT csv, HEADER true, DELIMITER ','", "parquet": "FORMAT parquet"}


def write(engine: DuckDBEngine | Recoded, path: str | Path, fmt: str, shuffle: bool = True) -> None:
    """Write the table ``engine`` holds (its columns, in order) to ``path`` as ``fmt`` ("csv",
    comma-delimited with a header, or "parquet"), by DuckDB's ``COPY``: the rows stream from
    its source (or its copy) to the file, a recode plan applied on the way, spilling to disk
    under the memory limit, never through Python.

    ``shuffle`` writes them in a fresh random order (an out-of-core sort on ``random()``), so
    that two releases of one table cannot be lined up by position. A file it cannot write is
    an ``OSError`` (``ENOSPC`` when the disk is full), and is not left half written.
    """
    if fmt not in _COPY_FORMATS:
        raise ValueError(f"The duckdb engine writes {sorted(_COPY_FORMATS)}, not {fmt!r}")
    source, plan = engine, RecodePlan()
    if isinstance(engine, Recoded):
        source, plan = engine.source, engine.recode_plan
    if not isinstance(source, DuckDBEngine):
        raise TypeError(f"The duckdb engine writes its own tables, not {type(source).__name__}")
    selected, joins = source._relabelled(plan)
    order = " ORDER BY random()" if shuffle else ""
    rows = source._table or source._source
    try:
        source._con.sql(
            f"COPY (SELECT {selected} FROM {rows} t {joins}{order}) TO {_text(str(path))} "
            f"({_COPY_FORMATS[fmt]})"
        )
    except duckdb.IOException as error:  # a folder that does not exist, no permission, ...
        Path(path).unlink(missing_ok=True)
        raise OSError(str(error).splitlines()[0]) from None
    except OSError:  # the disk is full (:class:`_Connection`)
        Path(path).unlink(missing_ok=True)
        raise

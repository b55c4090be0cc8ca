"""The DuckDB engine: the Engine protocol over a table DuckDB reads from its source.

A report's planned column sets are counted by passes over the source
(:mod:`broker.engines.duckdb.passes`); what they did not count reads the copy of the rows
(:mod:`broker.engines.duckdb.copied`). Here: which of them answers a question, the
dictionaries numbering each column's values (so count tables come back as integers), and the
people (:mod:`broker.engines.people`: identical rows, rare tuples, a person key).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from broker.columns.roles import require_columns
from broker.engines.base import (
    IDENTICAL_ROWS,
    PERSON_KEY,
    WORST_CASE,
    CountTable,
    RecentTables,
    dictionary_of,
)
from broker.engines.codes import map_in_threads
from broker.engines.duckdb.coded import code_type, placed
from broker.engines.duckdb.coded import tuple_sizes as coded_sizes
from broker.engines.duckdb.copied import CopiedRows
from broker.engines.duckdb.opening import (
    DEFAULT_MEMORY_LIMIT,
    Connection,
    OutOfMemory,
    connect,
    csv_header,
    csv_reader,
    parquet_reader,
    source_of,
)
from broker.engines.duckdb.passes import Pass, sizes_of
from broker.engines.duckdb.sampling import sample_tuples
from broker.engines.duckdb.sql import KEY, NAMES, ROW, literal, quote
from broker.engines.people import (
    RareTuples,
    components,
    counted_with,
    key_codes,
    rare_tuples,
)


@dataclass(frozen=True)
class ValueProfile:
    """What an out-of-core table's values cost once they reach Python, counted in SQL."""

    longest: dict[str, int]  # characters of each column's longest value
    distinct: dict[str, int]  # each column's number of distinct values


class DuckDBEngine(CopiedRows):
    """A table DuckDB reads from its source; see :mod:`broker.engines.duckdb`."""

    def __init__(
        self,
        connection: Connection,
        source: str,
        columns: Sequence[str],
        person_key: bool,
        keep: object = None,
        table: str | None = None,
        max_tuples: int | None = None,
        labelled: bool = False,
        unparsed: tuple[str, str | None] | None = None,
    ):
        self._con = connection
        self._rows_sql = source  # SQL of the rows: the columns, the row hash and the person key
        # A CSV file not read yet (its reader, its person key): parsed once, by the first
        # question that reads every row, into a Parquet file that every later read scans
        # (:meth:`_parse_once`); the file's first rows are still read from it (:meth:`head`).
        self._unparsed = unparsed
        self._parsed = False  # whether the rows are read from that Parquet file
        self._rows_file: Path | None = None  # that file, once written
        self._codes: dict[str, np.ndarray] = {}  # columns read as codes (:meth:`_column_codes`)
        self._ordered_source = source
        self._names = list(columns)
        self._person_key = person_key
        self._keep = keep  # the temporary folder, removed when the engine is collected
        self._table = table  # the rows copied into DuckDB, made on the first unplanned question
        self._passes: list[Pass] = []
        self._max_tuples = max_tuples
        self._rows: int | None = None
        self._dictionaries: dict[str, pd.Series] = {}
        self._dictionary_tables: dict[str, str] = {}
        self._recent = RecentTables()
        # Text columns of the copy stored as DuckDB ENUMs: grouped as small integers, coded by
        # enum_code() (a missing value, which an ENUM cannot hold, has the dictionary's last code).
        self._enums: dict[str, str] = {}
        self._enum_maps: dict[str, tuple[str, str]] = {}  # column -> :meth:`_enum_map`
        self._text: set[str] | None = None  # the source's text columns (:meth:`_enumerable`)
        self._rare: RareTuples | None = None  # told by assume_worst
        # With a person key: whether the source's key column already holds each row's person
        # (:meth:`_label_people`), and the column sets planned with people (counted again then).
        self._fixed = labelled  # a recoded copy: its people are the table as sent's
        self._labelled = labelled
        self._written_rows_sql = source  # the source with the key as written
        self._planned_people: list[list[str]] = []

    # --- construction (opening the source: :mod:`broker.engines.duckdb.opening`) ---------------

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
        header, delimiter = csv_header(path, person_key)
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
        if columns is None:
            columns = [name for name in header if name != person_key]
        reader = csv_reader(path, header, delimiter)
        return cls._open(
            reader, columns, person_key, memory_limit, max_tuples=max_tuples, parse_once=True
        )

    @classmethod
    def from_parquet(
        cls,
        path: str | Path,
        columns: Sequence[str],
        person_key: str | None = None,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
    ) -> DuckDBEngine:
        return cls._open(parquet_reader(path), columns, person_key, memory_limit)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, person_key: str | None = None) -> DuckDBEngine:
        """A frame whose columns each hold one type (DuckDB columns are typed): tests, and
        tables already in memory."""
        columns = [c for c in frame.columns if c != person_key]
        return cls._open(None, columns, person_key, DEFAULT_MEMORY_LIMIT, frame)

    @classmethod
    def _open(
        cls,
        reader,
        columns,
        person_key,
        memory_limit,
        frame=None,
        max_tuples=None,
        parse_once=False,
    ) -> DuckDBEngine:
        con, folder = connect(memory_limit)
        if frame is not None:
            reader = f"__fedbroker_frame_{next(NAMES)}"
            con.register(reader, frame)  # for the engine's life: the source is read again
        source = source_of(reader, columns, person_key)
        unparsed = (reader, person_key) if parse_once else None
        return cls(
            con,
            source,
            columns,
            person_key is not None,
            folder,
            max_tuples=max_tuples,
            unparsed=unparsed,
        )

    # --- the rows, parsed once ------------------------------------------------------------------

    @property
    def _source(self) -> str:
        """SQL of the rows as the engine reads them (see
        :func:`~broker.engines.duckdb.opening.source_of`), a CSV file parsed first."""
        self._parse_once()
        return self._rows_sql

    @_source.setter
    def _source(self, rows: str) -> None:
        self._rows_sql = rows

    @property
    def _written_source(self) -> str:
        """The rows with the person key as written (before :meth:`_label_people`)."""
        self._parse_once()
        return self._written_rows_sql

    def _parse_once(self) -> None:
        """A CSV file's measured columns (and person key) written, as read, to a Parquet file
        of the engine's temporary folder, which every later read scans instead of the file:
        the planned passes, the samples of the split-identifier reading, the copy of the rows
        and what is written out. Parsing CSV is most of a scan's cost, and a report reads the
        rows two or three times (a transfer four): writing the Parquet file once costs less
        than one parse more, and reading it back a fraction of one. Values are text as the
        reader read them, so every count, and so every report, is the same; a malformed body
        is a :class:`~broker.datasets.DatasetError` here, as at any first read."""
        if self._unparsed is None:
            return
        reader, person_key = self._unparsed
        self._unparsed = None
        names = [*self._names, *([person_key] if person_key else [])]
        path = Path(self._keep.name) / f"rows_{next(NAMES)}.parquet"
        try:
            self._con.read(
                f"COPY (SELECT {', '.join(map(quote, names))} FROM {reader}) "
                f"TO {literal(str(path))} (FORMAT parquet)"
            )
        except BaseException:
            path.unlink(missing_ok=True)
            self._unparsed = (reader, person_key)  # read from the file again, if asked again
            raise
        parsed = source_of(parquet_reader(path), self._names, person_key)
        self._rows_sql = self._written_rows_sql = parsed
        self._parsed = True
        self._rows_file = path

    @property
    def _parsed_file(self) -> Path | None:
        """The Parquet file a CSV source is parsed into (parsed now, if not yet), or None."""
        self._parse_once()
        return self._rows_file

    # --- the Engine protocol --------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        return list(self._names)

    @property
    def rows(self) -> int:
        if self._rows is None:
            parsed = self._parsed_file if self._table is None else None
            rows = parquet_reader(parsed) if parsed is not None else self._loaded()
            query = f"SELECT count(*) FROM {rows}"
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
        # A report asks for the quasi-identifiers' table with people next (it is kept): one
        # fetch of it serves both.
        table = None if self._person_key else self._count_table(list(quasi_identifiers), True)
        self._rare = rare_tuples(self, quasi_identifiers, table)
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
            code, join = self._code(column, f"t.{quote(column)}", typed=False)
            codes.append(f", any_value({code}) AS c{position}")
            joins.append(join)
        query = (
            f"SELECT t.{KEY} AS k, t.{ROW} AS r{''.join(codes)} FROM {self._written_source} t "
            f"{' '.join(joins)} GROUP BY t.{KEY}, t.{ROW}"
        )
        pairs = self._con.frame(query)
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
        alias = f"__fedbroker_people_{next(NAMES)}"
        mapping = pd.DataFrame({"k": pairs["k"], "p": person}).drop_duplicates("k")
        self._con.register(alias, mapping)  # one person a key as written
        self._source = (
            f"(SELECT s.* EXCLUDE ({KEY}), m.p AS {KEY} FROM {self._written_source} s "
            f"JOIN {alias} m ON s.{KEY} IS NOT DISTINCT FROM m.k)"
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

    def forget_counts(self) -> None:
        """Let go of the count tables kept for questions asked again (a million-tuple table
        holds its codes in memory), and of the columns read as codes for the combination
        search: before work that needs memory and no counts, as writing."""
        self._recent.clear()
        self._codes.clear()

    def plan(self, column_sets: Sequence[Sequence[str]], people: bool = True) -> None:
        """Count ``column_sets`` in one pass over the source (see
        :class:`~broker.engines.duckdb.passes.Pass`), those no earlier plan counted; a table
        already copied answers on its own.

        A column alone counted by any pass is not counted again (a first look's, without
        people): its people, when asked, are its rows less the repeats that the pass counting
        people finds. A planned set of several columns with more distinct tuples than
        ``max_tuples`` is a :class:`~broker.datasets.DatasetTooLarge`, found before any of them
        reaches Python."""
        if self._table is not None:
            return
        if people:
            self._planned_people += [list(c) for c in column_sets]
        sets = [
            list(c)
            for c in column_sets
            if not self._counted_alone(list(c)) and self._pass_answering(list(c), people) is None
        ]
        if sets or (people and not any(counted.people for counted in self._passes)):
            self._count_within_memory(sets, people)

    def _count_within_memory(self, sets: list[list[str]], people: bool) -> None:
        """One pass; if DuckDB cannot hold its hash tables together under the memory limit
        (they spill, but not every part of every one can), two passes of half the sets each,
        the columns alone first (and so on, down to one set a pass)."""
        try:
            counted = Pass(self, sets, people)
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

    def _counted_alone(self, columns: list[str]) -> bool:
        """Whether ``columns`` is one column some pass counted (alone or in its union)."""
        return len(columns) == 1 and any(
            columns[0] in counted.union or columns[0] in counted.alone for counted in self._passes
        )

    def _pass_answering(self, columns: list[str], people: bool = False) -> Pass | None:
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
        """What a pass counted is read from its counts; other sets, from the columns read as
        codes (:mod:`broker.engines.duckdb.coded`) when the rows were parsed into a Parquet
        file, else counted in the copy of the rows."""
        sets = [list(columns) for columns in column_sets]
        found: list[np.ndarray | None] = [None] * len(sets)
        coded = []
        for position, columns in enumerate(sets):
            counted = self._pass_answering(columns)
            if counted is not None:
                found[position] = counted.sizes(columns)
            elif columns and self._parsed_file is not None:
                coded.append(position)
            else:
                found[position] = self._sizes_in_copy(columns)
        if coded:
            names = list(dict.fromkeys(c for position in coded for c in sets[position]))
            require_columns(self._names, names)
            # Read here, before the threads: the connection serves one thread at a time.
            codes = {name: self._column_codes(name) for name in names}
            widths = {name: self._width(name) for name in names}

            def sizes(columns: list[str]) -> np.ndarray:
                return coded_sizes([codes[c] for c in columns], [widths[c] for c in columns])

            cells = self.rows * sum(len(sets[position]) for position in coded)
            counted_sets = map_in_threads(sizes, [sets[position] for position in coded], cells)
            for position, sizes_found in zip(coded, counted_sets, strict=True):
                found[position] = sizes_found
        return found  # type: ignore[return-value]

    def _column_codes(self, column: str) -> np.ndarray:
        """The column's codes in row order, read once from the Parquet file the rows were
        parsed into (that column only, numbered by its dictionary), kept until
        :meth:`forget_counts`."""
        found = self._codes.get(column)
        if found is None:
            width = self._width(column)
            kind = {1: "UTINYINT", 2: "USMALLINT", 4: "UINTEGER"}.get(
                code_type(width).itemsize, "UBIGINT"
            )
            read = (
                f"SELECT t.file_row_number AS r, d.code::{kind} AS k FROM read_parquet("
                f"{literal(str(self._rows_file))}, file_row_number = true) t "
                f"JOIN {self._dictionary_table(column)} d ON t.{quote(column)} IS NOT DISTINCT "
                "FROM d.v"
            )
            result = self._con.execute(read).fetchnumpy()
            found = placed(self.rows, np.asarray(result["r"]), np.asarray(result["k"]), width)
            self._codes[column] = found
        return found

    def _sizes_in_copy(self, columns: list[str]) -> np.ndarray:
        """The tuple sizes of ``columns`` counted in the copy, ascending: each size with its
        number of tuples comes back (a near-unique set's millions of sizes are a few hundred
        of them), what a search needs without the tuples' order."""
        require_columns(self._names, columns)
        grouped = f" GROUP BY {', '.join(map(quote, columns))}" if columns else ""
        return sizes_of(self._con, f"SELECT count(*) AS n FROM {self._loaded()}{grouped}")

    def duplicate_rows(self) -> int:
        counted = next((c for c in self._passes if c.people), None)
        if counted is not None:
            return counted.duplicate_rows
        query = f"SELECT count(*) - count(DISTINCT {ROW}) FROM {self._loaded()}"
        return int(self._con.execute(query).fetchall()[0][0])

    def head(self, columns: Sequence[str], rows: int) -> pd.DataFrame:
        """The first ``rows`` rows as the source holds them, in order (DuckDB keeps the
        insertion order of a file it reads; a limit stops the read early)."""
        require_columns(self._names, columns)
        selected = ", ".join(quote(c) for c in columns)
        ordered = self._ordered_source  # the file as sent, whose order a Parquet copy may not keep
        return self._con.frame(f"SELECT {selected} FROM {ordered} LIMIT {int(rows)}")

    def sample_tuples(
        self,
        column_sets: Sequence[Sequence[str]],
        sizes: Sequence[int],
        read_again: bool = False,
    ) -> list[list[np.ndarray]]:
        """Codes of distinct tuples of each set chosen at random, without counting every
        tuple (:mod:`broker.engines.duckdb.sampling`); with ``read_again``, from the copy of
        the rows, made now."""
        if read_again and self._parsed_file is None:
            self._loaded()  # the search reads that copy (else it reads columns as codes)
        return sample_tuples(self, column_sets, sizes)

    def row_sketch(
        self, columns: Sequence[str], cell_hash: Callable[[str], str], size: int
    ) -> tuple[np.ndarray, int]:
        """The ``size`` smallest distinct row fingerprints of ``columns`` and their number,
        counted where the rows are (a row's fingerprint: its cells' ``cell_hash`` SQL added
        modulo 2**64; :mod:`broker.privacy.identity`). The distinct fingerprints spill to disk
        under the memory limit; only ``size`` of them reach Python."""
        require_columns(self._names, columns)
        cells = " + ".join(f"CAST({cell_hash(quote(c))} AS HUGEINT)" for c in columns)
        fingerprint = f"CAST(({cells}) % 18446744073709551616 AS UBIGINT)"
        table = f"__fedbroker_fingerprints_{next(NAMES)}"
        source = self._table or self._source
        self._con.read(
            f"CREATE TEMP TABLE {table} AS SELECT DISTINCT {fingerprint} AS f FROM {source}"
        )
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
        column, else from the parsed file (or the copy)."""
        table = self._dictionary_tables.get(column)
        if table is None:
            require_columns(self._names, [column])
            counted = next(
                (found for c in self._passes if (found := c.values(column)) is not None), None
            )
            if counted is None:  # the parsed file's column, else the copy's
                parsed = self._parsed_file if self._table is None else None
                rows = parquet_reader(parsed) if parsed is not None else self._loaded()
                counted = f"SELECT {quote(column)} AS v, count(*) AS n FROM {rows} GROUP BY ALL"
            table = f"__fedbroker_dictionary_{next(NAMES)}"
            self._con.sql(
                f"CREATE TABLE {table} AS SELECT v, n, (row_number() OVER "
                f"(ORDER BY v IS NULL)) - 1 AS code FROM ({counted})"
            )
            self._dictionary_tables[column] = table
        return table

    def _enum_map(self, column: str, labels: dict | None = None) -> tuple[str, str]:
        """A table giving each of the column's values (``value``) as an ENUM (``label``) of
        them, numbered as its dictionary, and that ENUM type; with ``labels``, each value's
        label (itself where they name none) as an ENUM of those. Joined to the rows, it holds
        each value as one small integer, for less than DuckDB's CAST to the ENUM costs."""
        found = None if labels else self._enum_maps.get(column)
        if found is not None:
            return found
        dictionary = self._dictionary_table(column)
        mapped = f"SELECT v AS value, v AS label FROM {dictionary}"
        values = f"SELECT v FROM {dictionary} WHERE v IS NOT NULL ORDER BY code"
        if labels:
            given = self._labels_table(labels)
            mapped = (
                f"SELECT d.v AS value, COALESCE(l.label, d.v) AS label FROM {dictionary} d "
                f"LEFT JOIN {given} l ON d.v IS NOT DISTINCT FROM l.value"
            )
            values = f"SELECT DISTINCT label FROM ({mapped}) WHERE label IS NOT NULL"
        kind, table = f"__fedbroker_enum_{next(NAMES)}", f"__fedbroker_enum_map_{next(NAMES)}"
        self._con.sql(f"CREATE TYPE {kind} AS ENUM ({values})")
        self._con.sql(
            f"CREATE TABLE {table} AS SELECT value, CAST(label AS {kind}) AS label FROM ({mapped})"
        )
        if not labels:
            self._enum_maps[column] = (table, kind)
        return table, kind

    def _enum_join(self, value: str, column: str, labels: dict | None = None) -> tuple[str, str]:
        """SQL of ``value`` (a value of the column as read) as its ENUM, or its label's, through
        :meth:`_enum_map`, and the join that needs. A value the map lacks (none: it is the
        column's dictionary) would fail the cast, not become missing."""
        table, kind = self._enum_map(column, labels)
        alias = f"__fedbroker_e{next(NAMES)}"
        join = f"LEFT JOIN {table} {alias} ON {value} IS NOT DISTINCT FROM {alias}.value"
        return f"COALESCE({alias}.label, CAST({value} AS {kind}))", join

    def _as_enums(self, columns: Sequence[str], rows: str) -> tuple[str, str]:
        """SQL selecting every column of the rows ``rows``, those of ``columns`` that
        :meth:`_enumerable` as their ENUMs (:meth:`_enum_join`), and the joins that needs."""
        replaced, joins = [], []
        for column in columns:
            if self._enumerable(column):
                value, join = self._enum_join(f"{rows}.{quote(column)}", column)
                replaced.append(f"{value} AS {quote(column)}")
                joins.append(join)
        if not replaced:
            return f"{rows}.*", ""
        return f"{rows}.* REPLACE ({', '.join(replaced)})", " ".join(joins)

    def _enumerable(self, column: str) -> bool:
        """Whether the source's column is text whose values a pass has already counted: a
        query grouping or sorting every row then holds each value as an ENUM, one small
        integer, which costs less memory and time than the text, the join to it included. (Each
        value is the same text again when it is cast back or read back from Parquet.)"""
        if self._text is None:
            kinds = self._con.execute(f"DESCRIBE SELECT * FROM {self._source}").fetchall()
            self._text = {name for name, kind, *_ in kinds if kind == "VARCHAR"}
        return column in self._text and self._counted_alone([column])

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
        alias = f"__fedbroker_d{next(NAMES)}"
        return f"{alias}.code", f"JOIN {table} {alias} ON {value} IS NOT DISTINCT FROM {alias}.v"

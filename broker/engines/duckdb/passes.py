"""The planned pass: the column sets a report announces, counted in one scan of the source.

A report announces its column sets (:class:`broker.engines.base.PlansCounts`) and they are
counted from the file in one pass (:class:`Pass`): no copy of the rows, only the distinct
tuples, written to a Parquet file in the engine's temporary folder and numbered there by each
column's dictionary. Memory follows the number of distinct tuples, not the size of the file.
"""

from __future__ import annotations

import math
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from broker.columns.roles import require_columns
from broker.datasets import DatasetTooLarge
from broker.engines.base import CountTable, mixed_radix_strides
from broker.engines.duckdb.sql import KEY, NAMES, ROW, UNION, literal, quote

if TYPE_CHECKING:
    from broker.engines.duckdb.engine import DuckDBEngine
    from broker.engines.duckdb.opening import Connection


def sizes_of(con: Connection, tuples: str) -> np.ndarray:
    """The sizes ``n`` of the tuples ``tuples`` selects, ascending: each size comes back once
    with its number of tuples, not once a tuple."""
    found = con.execute(
        f"SELECT n, count(*) AS m FROM ({tuples}) GROUP BY n ORDER BY n"
    ).fetchnumpy()
    return np.repeat(np.asarray(found["n"], dtype=np.int64), found["m"])


class Pass:
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
        self._identities = [[ROW, *([UNION] if self.union else [])]] if people else []
        self._identities += [[KEY]] if engine._person_key and people else []
        # The columns alone: one more hash table each in the pass, fed every row; read from a
        # Parquet file (a CSV file parsed once), each is rather counted on its own, reading that
        # column only, into a small file of its own (:meth:`_count_alone`). The source is read
        # first: a CSV file not parsed yet is parsed now, so that a first pass reads it so too.
        source = engine._source
        fanned = [] if engine._parsed else self.alone
        self._alone: dict[str, str] = {}
        self._grouped = [
            *map(quote, self.union + fanned),
            *(name for names in self._identities for name in names),
        ]
        sets = [[], *([self._grouped[: len(self.union)]] if self.union else [])]
        sets += [[quote(c)] for c in fanned] + self._identities
        # The counts go to a Parquet file: as a DuckDB table, one column per grouped column,
        # mostly missing, they took more memory than the pass itself.
        path = Path(engine._keep.name) / f"counted_{next(NAMES)}.parquet"
        self._table = f"read_parquet({literal(str(path))})"
        listed = ", ".join(self._grouped)
        repeats = ", ".join(str(self._set_id(names)) for names in self._identities)
        union_hash = f", hash({', '.join(map(quote, self.union))}) AS {UNION}"
        unique = f" HAVING NOT (GROUPING({listed}) IN ({repeats}) AND count(*) = 1)"
        # Grouped as ENUMs where the dictionaries are known: less memory and time than text.
        coded, joins = engine._as_enums(self.union, "t")
        if self._grouped:
            counted_sets = (
                f"SELECT GROUPING({listed}) AS __fedbroker_g, {listed}, count(*) AS "
                f"__fedbroker_n FROM (SELECT {coded} FROM (SELECT *"
                f"{union_hash if self.union else ''} FROM {source}) t {joins}) "
                "GROUP BY GROUPING SETS "
                f"({', '.join('(' + ', '.join(s) + ')' for s in sets)})"
                f"{unique if repeats else ''}"
            )
        else:  # only the rows (the columns alone counted on their own)
            counted_sets = f"SELECT 0 AS __fedbroker_g, count(*) AS __fedbroker_n FROM {source}"
        engine._con.read(f"COPY ({counted_sets}) TO {literal(str(path))} (FORMAT parquet)")
        for column in self.alone if not fanned else []:
            self._count_alone(column)
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
    def _passes(self) -> list[Pass]:
        return [*self._engine._passes, self]

    def values(self, column: str) -> str | None:
        """SQL of the column's distinct values ``v`` and their rows ``n``, or None."""
        if column in self.alone:
            return f"SELECT {quote(column)} AS v, __fedbroker_n AS n FROM {self._rows_of([column])}"
        if column in self.union:
            return (
                f"SELECT {quote(column)} AS v, sum(__fedbroker_n)::BIGINT AS n "
                f"FROM {self._rows_of(self.union)} GROUP BY ALL"
            )
        return None

    def sizes(self, columns: list[str]) -> np.ndarray:
        """The rows of each tuple: a column alone's in code order, as its count table gives
        them; several columns' ascending, each size coming back once with its number of
        tuples (what a search needs of a near-unique set, without millions of numbers)."""
        if len(columns) == 1:
            query = f"SELECT n FROM {self._engine._dictionary_table(columns[0])} ORDER BY code"
            return np.asarray(self._con.execute(query).fetchnumpy()["n"], dtype=np.int64)
        return sizes_of(self._con, f"SELECT __fedbroker_n AS n FROM ({self._tuples(columns)})")

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
            joins.append(self._repeated(shared, columns, ROW, "r"))
            if self._engine._person_key:
                joins.append(self._repeated(shared, columns, KEY, "q"))
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

    def _count_alone(self, column: str) -> None:
        """A column alone counted on its own (its values and their rows), in a Parquet file
        that :meth:`_rows_of` reads as the pass's rows of that column."""
        path = Path(self._engine._keep.name) / f"alone_{next(NAMES)}.parquet"
        self._engine._con.read(
            f"COPY (SELECT {quote(column)}, count(*) AS __fedbroker_n FROM "
            f"{self._engine._source} GROUP BY ALL) TO {literal(str(path))} (FORMAT parquet)"
        )
        self._alone[column] = f"read_parquet({literal(str(path))})"

    def _rows_of(self, columns: list[str]) -> str:
        """The counted table's rows of one grouping set (columns unquoted, or identities)."""
        if len(columns) == 1 and columns[0] in self._alone:
            return f"(SELECT * FROM {self._alone[columns[0]]})"
        grouped = [c if c in (ROW, UNION, KEY) else quote(c) for c in columns]
        return f"(SELECT * FROM {self._table} WHERE __fedbroker_g = {self._set_id(grouped)})"

    @cached_property
    def _coded_union(self) -> tuple[str, bool]:
        """The union's tuples as codes (``k0``... in union order) with their rows and their
        repeated rows ``__fedbroker_x``, found by the union hash of each repeated row; and
        whether those are known: not when two tuples share a hash (then the repeats are
        counted among the rows read again). Sets within the union are summed from it."""
        names = ", ".join(f"t.{quote(c)}" for c in self.union)
        codes, joins = [], []
        for position, column in enumerate(self.union):
            code, join = self._engine._code(column, f"t.{quote(column)}", typed=False)
            codes.append(f"{code}::UINTEGER AS k{position}")
            joins.append(join)
        repeats, hashed = "0", ""
        if self._repeats:
            repeats = "coalesce(r.x, 0)"
            hashed = f", hash({names}) AS {UNION}"
            joins.append(
                f"LEFT JOIN (SELECT {UNION}, sum(__fedbroker_n - 1) AS x FROM "
                f"{self._repeated_rows} "
                f"GROUP BY ALL) r ON hash({names}) = r.{UNION}"
            )
        # On disk, as the pass's counts: millions of tuples would stay in the broker's memory
        # as a table, while each set within the union reads them once.
        path = Path(self._engine._keep.name) / f"union_{next(NAMES)}.parquet"
        self._con.sql(
            f"COPY (SELECT {', '.join(codes)}, t.__fedbroker_n, {repeats} AS __fedbroker_x"
            f"{hashed} FROM {self._rows_of(self.union)} t {' '.join(joins)}) "
            f"TO {literal(str(path))} (FORMAT parquet)"
        )
        table = f"read_parquet({literal(str(path))})"
        if not self._repeats:
            return table, True
        shared = self._scalar(f"SELECT count(*) - count(DISTINCT {UNION}) FROM {table}")
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
        names = "".join(f"{quote(c)} AS c{i}, " for i, c in enumerate(columns))
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
                f" OR EXISTS (SELECT 1 FROM {self._rows_of([KEY])} c WHERE c.{KEY} IS NOT "
                f"DISTINCT FROM s.{KEY})"
                if self._engine._person_key
                else ""
            )
            self._shared = f"__fedbroker_shared_{next(NAMES)}"
            self._engine._con.read(
                f"CREATE TABLE {self._shared} AS SELECT * FROM {self._engine._source} s WHERE "
                f"s.{ROW} IN (SELECT {ROW} FROM {self._rows_of(self._identities[0])}){keys}"
            )
        return self._shared

    def _scalar(self, query: str) -> int:
        return int(self._con.execute(query).fetchall()[0][0])

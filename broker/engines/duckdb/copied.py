"""The copy of the rows, and recoding: what the planned pass did not count reads a copy.

Whatever no plan counted (partitions, recoding; the combination search when the rows are not
in a Parquet file, else it reads columns as codes: :mod:`broker.engines.duckdb.coded`) reads a
copy of the rows made on first need (:meth:`CopiedRows._loaded`): a DuckDB table, spilling
under the memory limit, with text columns stored as ENUMs (grouped as small integers) and the
row hash beside the columns.

A recode plan is applied as SQL (:meth:`CopiedRows._relabelled`: each value replaced by its
label through a join), when the rows are written or, with a person key, copied recoded.

:class:`CopiedRows` is a part of :class:`~broker.engines.duckdb.DuckDBEngine`, kept apart as
one idea: it reads the engine's connection, source, names, person key and dictionaries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from broker.columns.roles import require_columns
from broker.engines.base import RecodePlan
from broker.engines.duckdb.sql import KEY, NAMES, ROW, quote
from broker.engines.recoded import Recoded

if TYPE_CHECKING:
    from broker.engines.duckdb.engine import DuckDBEngine


class CopiedRows:
    """The engine's copy of its rows, what is counted from it, and recoding."""

    def recode(self, plan: RecodePlan) -> Recoded | DuckDBEngine:
        """The recoded table, seen through this engine's counts (:class:`Recoded`: no row is
        read again or copied, and :func:`~broker.engines.duckdb.write` applies the plan as it
        streams the rows out); with a person key, whose rows may merge into one tuple, the rows
        recoded into a table of their own."""
        if not self._person_key:
            return Recoded(self, plan)
        self._label_people()
        selected, joins, _ = self._relabelled(plan)
        target = f"__fedbroker_recoded_{next(NAMES)}"
        self._con.sql(
            f"CREATE TABLE {target} AS SELECT {selected}, t.{KEY}, t.{ROW} "
            f"FROM {self._loaded()} t {joins}"
        )
        kept = [c for c in self._names if c not in plan.drop]
        return type(self)(
            self._con, target, kept, self._person_key, self._keep, target, labelled=True
        )

    def _relabelled(self, plan: RecodePlan, as_enums: bool = False) -> tuple[str, str, list]:
        """SQL selecting the columns ``plan`` keeps from rows ``t``, each value replaced by its
        label where the plan names one, the joins that need (one label table a column), and
        the columns selected as ENUMs: with ``as_enums``, those the source's rows hold as text
        that :meth:`_enumerable` (:meth:`_enum_join`)."""
        selected, joins, enums = [], [], []
        for name in self._names:
            if name in plan.drop:
                continue
            labels = plan.labels.get(name)
            value = f"t.{quote(name)}"
            enum = as_enums and name not in self._enums and self._enumerable(name)
            if enum:  # relabelled and made an ENUM by one join
                value, join = self._enum_join(value, name, labels)
                joins.append(join)
                enums.append(name)
            elif labels:
                table = self._labels_table(labels)
                joins.append(f"LEFT JOIN {table} ON {value} IS NOT DISTINCT FROM {table}.value")
                value = f"COALESCE({table}.label, {value})"
            selected.append(f"{value} AS {quote(name)}")
        return ", ".join(selected), " ".join(joins), enums

    def _labels_table(self, labels: dict) -> str:
        """A registered table of a plan's labels of one column (``value``, ``label``)."""
        table = f"__fedbroker_labels_{next(NAMES)}"
        frame = pd.DataFrame({"value": list(labels), "label": list(labels.values())})
        self._con.register(table, frame)
        return table

    def _loaded(self) -> str:
        """The rows copied into a DuckDB table (text columns as ENUMs), for what no plan
        counted: the combination search, partitions, recoding.

        The ENUMs are the columns' dictionaries: when the passes counted every column, they
        are known and the source is copied in one step; otherwise the rows are first copied as
        read, the dictionaries no plan counted are read from that copy, and it is copied again."""
        if self._table is None:
            source = self._source
            if not all(self._counted_alone([name]) for name in self._names):
                raw = f"__fedbroker_raw_{next(NAMES)}"
                self._con.read(f"CREATE TABLE {raw} AS SELECT * FROM {self._source}")
                self._table = source = raw  # where the dictionaries no plan counted are read
            kinds = dict(
                self._con.execute(
                    f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})"
                ).fetchall()
            )
            selected = []
            for name in kinds:
                if name in self._names and kinds[name] == "VARCHAR":
                    enum = self._enum_map(name)[1]  # numbered as the dictionary
                    self._enums[name] = enum
                    selected.append(f"CAST({quote(name)} AS {enum}) AS {quote(name)}")
                else:
                    selected.append(quote(name))
            table = f"__fedbroker_data_{next(NAMES)}"
            self._con.read(f"CREATE TABLE {table} AS SELECT {', '.join(selected)} FROM {source}")
            if source != self._source:
                self._con.sql(f"DROP TABLE {source}")
            self._table = table
        return self._table

    def _grouped(self, columns: list[str], people: bool, coded: bool = False):
        """Rows (and people) per distinct tuple of ``columns`` in the copy, and with ``coded``
        each tuple's codes. People are counted in two steps (distinct (tuple, person) pairs,
        then pairs per tuple), which DuckDB does faster than ``count(DISTINCT ...)`` over many
        groups."""
        require_columns(self._names, columns)
        table = self._loaded()
        aliases = [f"__fedbroker_c{i}" for i in range(len(columns))]
        names = "".join(f"{quote(c)} AS {a}, " for c, a in zip(columns, aliases, strict=True))
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
            f"(SELECT {names}{ROW}, count(*) AS n FROM {table} GROUP BY ALL) GROUP BY ALL"
        )
        if not self._person_key:
            return by_row
        by_key = (
            f"SELECT {outer}count(*) AS __fedbroker_q FROM "
            f"(SELECT {names}{KEY} FROM {table} GROUP BY ALL) GROUP BY ALL"
        )
        on = " AND ".join(f"r.{a} IS NOT DISTINCT FROM k.{a}" for a in aliases) or "true"
        kept = "".join(f"r.{a}, " for a in aliases)
        return (
            f"SELECT {kept}r.__fedbroker_n, least(r.__fedbroker_p, k.__fedbroker_q) AS "
            f"__fedbroker_p FROM ({by_row}) r JOIN ({by_key}) k ON {on}"
        )

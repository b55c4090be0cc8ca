"""An ORM object as the row a Core ``INSERT`` writes.

The request path inserts its rows with statements built once (:func:`sqlalchemy.insert` on the
table): a unit-of-work flush costs several times the database's own work for a row that nothing
reads back in the same session. The object stays a plain (transient) object that the answer is
built from, holding what the row holds.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Insert, Table, insert, inspect
from sqlalchemy.orm import Session


def column_values(instance: Any) -> dict[str, Any]:
    """The columns an object sets, as a flush writes them: each attribute it was given (None
    included); one it was not given, its column's Python default (set on the object too, as a
    flush sets it), or nothing, so that the database writes its own default or NULL (a JSON
    column given None holds JSON ``null``, one never given holds NULL)."""
    values = {}
    given = instance.__dict__
    for attribute in inspect(type(instance)).column_attrs:
        column = attribute.columns[0]
        if attribute.key in given:
            value = given[attribute.key]
        elif column.default is not None and column.default.is_scalar:
            value = column.default.arg
            setattr(instance, attribute.key, value)
        elif column.default is not None:
            raise ValueError(f"{type(instance).__name__}.{attribute.key}: only scalar defaults")
        else:
            value = None
        if value is None and column.primary_key:
            raise ValueError(
                f"{type(instance).__name__}.{attribute.key} is not set: a row whose key the "
                "database makes is inserted by the session's flush, which reads the key back"
            )
        if attribute.key in given or value is not None:
            values[column.key] = value
    return values


def insert_objects(session: Session, *instances: Any) -> None:
    """Insert each object as its row, in the order given (a row before the rows that refer to
    it), each by its table's ``INSERT`` built once."""
    for instance in instances:
        session.execute(_insert(type(instance).__table__), [column_values(instance)])


@cache
def _insert(table: Table) -> Insert:
    return insert(table)

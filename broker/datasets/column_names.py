"""Which column names a dataset may have: they cross the border with the data, unmeasured.

A name is text without control characters, at most :data:`MAX_NAME_LENGTH` characters long,
holding nothing that looks like a direct identifier (``identifier_in_text``), nor do the names
read one after the other (``identifier_across_names``: a phone number cut over the header), and
it differs
from the dataset's other names by more than case, look-alike letters or invisible characters
(``colliding_names``, one :func:`broker.columns.names.attribute_key` per name).
"""

from __future__ import annotations

import unicodedata
from contextlib import suppress
from functools import lru_cache

from broker.columns.names import colliding_names
from broker.datasets.dataset import DatasetError
from broker.identifiers.short_text import identifier_across_names, identifier_in_text

MAX_NAME_LENGTH = 200
_REMEMBERED_COLUMNS = 256  # names of at most this many columns are remembered once they pass


def check_column_names(columns: list, label: str) -> None:
    """Refuse names that are empty, hold control characters, are too long, hold what looks
    like an identifier (alone or read one after the other), repeat, or differ only in ways a
    reader does not see. The same names (a member sends the same columns again and again, and
    a request checks them twice) are checked once, if they are few."""
    passed = False
    if len(columns) <= _REMEMBERED_COLUMNS:
        with suppress(TypeError):  # a name that cannot be a key: checked, and refused, below
            passed = _passed(tuple(columns))
    if not passed:
        _check(columns, label)


@lru_cache(maxsize=64)
def _passed(columns: tuple) -> bool:
    """Whether these names pass (an answer that depends on nothing else)."""
    try:
        _check(list(columns), "")
    except DatasetError:
        return False
    return True


def _check(columns: list, label: str) -> None:
    seen = set()
    for column in columns:
        if not isinstance(column, str) or column.strip() == "":
            raise DatasetError(f"{label} has a column without a name")
        if any(unicodedata.category(c) == "Cc" for c in column):
            raise DatasetError(  # not echoed: NULs may hide what the name spells (UTF-16)
                f"{label}: column name number {len(seen) + 1} holds control characters (NUL "
                "bytes: a UTF-16 file? send UTF-8)"
            )
        if len(column) > MAX_NAME_LENGTH:
            raise DatasetError(
                f"{label}: a column name is {len(column):,} characters long; at most "
                f"{MAX_NAME_LENGTH} are accepted"
            )
        if found := identifier_in_text(column):
            raise DatasetError(
                f"{label}: column name number {len(seen) + 1} holds what looks like {found}; "
                "column names cross the border with the data and are not measured: rename it"
            )
        if column in seen:
            raise DatasetError(f"{label} has the column name {column!r} more than once")
        seen.add(column)
    if found := identifier_across_names(columns):
        raise DatasetError(
            f"{label}: the column names read one after the other hold what looks like {found}; "
            "column names cross the border with the data and are not measured: rename them"
        )
    pair = colliding_names(columns)
    if pair:
        raise DatasetError(
            f"{label}: columns {pair[0]!r} and {pair[1]!r} differ only by case, look-alike "
            "letters or invisible characters; rename one of them"
        )

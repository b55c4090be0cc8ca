"""The roles a sender declares for its columns, checked once against the dataset.

- *quasi-identifiers*: attributes an outsider may know (age, zip code, sex); the broker adds every
  other attribute that measures as one, so a declaration can widen the k check, never narrow it;
- *sensitive* attributes: the values to protect (a diagnosis); judged by l and t within the
  classes formed by every other attribute that leaves (see :mod:`broker.metrics.report`);
- a *person key*: a pseudonymous column naming the person each row belongs to, so that k and
  the risks count people, not rows. It is measured, never delivered.

A name is listed once (``"sex,sex"`` is ``"sex"``); a name that is not a column, or a column in two
roles, raises :class:`RoleError` naming it and listing the dataset's columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.columns.names import attribute_key, near_misses

_LISTED_COLUMNS = 20  # at most this many columns are listed in an error ...
_LISTED_CHARS = 400  # ... in at most about this many characters
_NAME_CHARS = 40  # each shown up to this length
# A declared list of names (a form field): room for a thousand column names, and a bound on what
# a request can make the broker echo and store.
NAMES_MAX_LENGTH = 100_000


class RoleError(ValueError):
    """A declared role names no column, or one column twice; the message says which."""


@dataclass(frozen=True)
class Roles:
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    person_key: str | None = None

    @classmethod
    def declare(
        cls,
        columns: Sequence[str],
        quasi_identifiers: Sequence[str] = (),
        sensitive: Sequence[str] = (),
        person_key: str | None = None,
    ) -> Roles:
        """Check the declared names against ``columns``; duplicates are dropped in order.

        Examples
        --------
        >>> Roles.declare(["age", "sex", "flu"], ["sex", "sex"], ["flu"])
        Roles(quasi_identifiers=('sex',), sensitive=('flu',), person_key=None)
        >>> Roles.declare(["age"], ["Age"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        broker.columns.roles.RoleError: Quasi-identifier 'Age' is not a column ...'age'?)...
        """
        quasi_identifiers = tuple(dict.fromkeys(quasi_identifiers))
        sensitive = tuple(dict.fromkeys(sensitive))
        person_key = person_key or None
        require_columns(columns, quasi_identifiers, "Quasi-identifier")
        require_columns(columns, sensitive, "Sensitive attribute")
        require_columns(columns, (person_key,) if person_key else (), "Person key")
        require_distinct_roles(quasi_identifiers, sensitive)
        if person_key and (person_key in quasi_identifiers or person_key in sensitive):
            raise RoleError(
                f"Column {person_key!r} is the person key: it cannot also be a quasi-identifier "
                "or sensitive (it is measured to count people and never delivered)"
            )
        return cls(quasi_identifiers, sensitive, person_key)

    def without(self, dropped: Sequence[str]) -> Roles:
        """The roles of the columns left after ``dropped`` are removed."""
        gone = set(dropped)
        return Roles(
            tuple(q for q in self.quasi_identifiers if q not in gone),
            tuple(s for s in self.sensitive if s not in gone),
            None if self.person_key in gone else self.person_key,
        )


def require_columns(columns: Sequence[str], names: Sequence[str], role: str = "Column") -> None:
    """Raise :class:`RoleError` naming the first of ``names`` that is not one of ``columns``.

    The one column-present check: the measures, the anonymization and the API all use it.
    """
    present = set(columns)
    for name in names:
        if name not in present:
            raise RoleError(_unknown(role, name, list(columns)))


def require_distinct_roles(quasi_identifiers: Sequence[str], sensitive: Sequence[str]) -> None:
    """Raise :class:`RoleError` when a column is declared both quasi-identifier and sensitive."""
    both = [name for name in quasi_identifiers if name in set(sensitive)]
    if both:
        raise RoleError(f"Column {both[0]!r} is declared both quasi-identifier and sensitive")


def parse_names(text: str | None) -> tuple[str, ...]:
    """``"a, b,,a"`` -> ``("a", "b")``: blanks dropped, each name once, in order."""
    return tuple(dict.fromkeys(part.strip() for part in (text or "").split(",") if part.strip()))


def _unknown(role: str, name: str, columns: Sequence[str]) -> str:
    close = [c for c in columns if attribute_key(c) == attribute_key(name)] or near_misses(
        name, columns
    )
    hint = f" (did you mean {_shown(close[0])}?)" if close else ""
    return (
        f"{role} {_shown(name)} is not a column of the dataset{hint}; "
        f"its {len(columns):,} columns: {listed_columns(columns)}"
    )


def listed_columns(columns: Sequence[str]) -> str:
    """The columns on one readable line: each name quoted and cut to ``_NAME_CHARS``, at most
    ``_LISTED_COLUMNS`` of them in about ``_LISTED_CHARS`` characters, then how many more.

    Examples
    --------
    >>> listed_columns(["age", "sex"])
    "'age', 'sex'"
    >>> listed_columns([f"c{i}" for i in range(30)])  # doctest: +ELLIPSIS
    "'c0', 'c1', ..., 'c19' and 10 more"
    >>> listed_columns(["x" * 50 + "_end", "a\\nb"])
    "'xxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxx_end', 'a\\\\nb'"
    """
    shown: list[str] = []
    length = 0
    for column in columns[:_LISTED_COLUMNS]:
        text = _shown(column)
        if shown and length + len(text) > _LISTED_CHARS:
            break
        shown.append(text)
        length += len(text) + 2
    more = len(columns) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more else "")


def _shown(name: str) -> str:
    """A name as one quoted line (control characters escaped), cut in its middle to
    ``_NAME_CHARS`` (names that differ only at their end stay told apart)."""
    text = repr(str(name))[1:-1].replace("'", "\\'")
    if len(text) > _NAME_CHARS:
        tail = _NAME_CHARS // 3
        text = text[: _NAME_CHARS - 3 - tail] + "..." + text[-tail:]
    return f"'{text}'"

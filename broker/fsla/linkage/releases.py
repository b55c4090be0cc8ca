"""What the broker remembers of each release: its quasi-identifiers and classes; and a new
release joined with one of them (see :mod:`broker.fsla.linkage`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class Release:
    """What one approved transfer released: its quasi-identifiers and sensitive attributes as
    they left, and its classes (labels in the order of ``quasi_identifiers``, people).

    ``classes`` is None when the release had more classes than the broker keeps
    (``class_count`` says how many): it cannot be checked against, and says so.
    """

    transfer_id: str
    released_at: datetime
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    classes: tuple[tuple[tuple[Any, ...], int], ...] | None
    class_count: int


@dataclass(frozen=True)
class History:
    """The earlier releases from a transfer's source to its destination within the longest
    look-back of its rules, and when the new transfer is decided."""

    now: datetime
    releases: tuple[Release, ...] = ()
    since: datetime | None = None  # where the window starts (None: the releases say)


@dataclass(frozen=True)
class Joint:
    """A new release joined with one earlier release: its smallest joint class.

    ``smallest`` is None when no one of the new release falls in a class of the earlier one;
    ``diversity`` gives, per sensitive attribute released in both, the fewest distinct values in
    a joint class. ``age`` is how long before the new decision the earlier one was released.
    """

    release: Release
    age: timedelta
    attributes: tuple[str, ...]
    linked_people: int = 0
    classes: int = 0
    smallest: int | None = None
    diversity: Mapping[str, int] = field(default_factory=dict)
    unchecked: str | None = None  # why the broker could not check this release
    people: int = 0  # of the new release, linked or not
